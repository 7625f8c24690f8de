//! `herald agents list|show|cancel`: the journaled subagents (SPEC §9.2),
//! readable after a restart.

use herald_store::{AgentFilter, AgentRecord, StoreError};

use crate::args::{AgentsAction, CommonArgs};
use crate::sessions_cmd::{call, print_json, when};
use crate::{CliError, Exit, setup};

fn line(record: &AgentRecord) -> String {
    let goal: String = record.goal.chars().take(60).collect();
    format!(
        "{}  {:<11} d{} {:<12}  {}  {:>7} tok  {}{}",
        record.id,
        record.status,
        record.depth,
        record.role,
        when(record.created_at),
        record.tokens.input + record.tokens.output,
        if record.background { "[bg] " } else { "" },
        goal.replace('\n', " ")
    )
}

fn unknown(id: &str) -> CliError {
    CliError::usage(anyhow::anyhow!(
        "no agent '{id}'; `herald agents list` shows stored agents"
    ))
}

/// Runs one `herald agents` action.
pub(crate) async fn agents(common: &CommonArgs, action: AgentsAction) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let store = setup::open_store(&home)?;
    match action {
        AgentsAction::List {
            json,
            session,
            status,
            limit,
        } => {
            let filter = AgentFilter {
                root_session_id: session,
                status,
                limit,
                ..AgentFilter::default()
            };
            let list = call(&store, move |s| s.list_agents(&filter)).await?;
            if json {
                print_json(&list)?;
            } else if list.is_empty() {
                println!("no agents");
            } else {
                list.iter().for_each(|r| println!("{}", line(r)));
            }
        }
        AgentsAction::Show { id, json } => {
            let lookup = id.clone();
            let Some(record) = call(&store, move |s| s.get_agent(&lookup)).await? else {
                return Err(unknown(&id));
            };
            if json {
                print_json(&record)?;
            } else {
                println!("{}", line(&record));
                println!(
                    "session: {} (parent session {})",
                    record.session_id, record.parent_session_id
                );
                println!("goal: {}", record.goal);
                if let Some(context) = &record.context {
                    println!("context: {context}");
                }
                if let Some(reason) = &record.exit_reason {
                    println!("exit: {reason} after {} API calls", record.iterations);
                }
                if let Some(error) = &record.error {
                    println!("error: {error}");
                }
                if let Some(result) = &record.result {
                    println!("\n{result}");
                }
            }
        }
        AgentsAction::Cancel { id, json } => {
            let lookup = id.clone();
            let record = store
                .call(move |s| s.cancel_agent(&lookup, "cancelled"))
                .await
                .map_err(CliError::failed)?;
            let record = match record {
                Ok(record) => record,
                Err(StoreError::UnknownAgent(_)) => return Err(unknown(&id)),
                Err(err) => return Err(CliError::failed(err)),
            };
            if json {
                print_json(&record)?;
            } else if record.status == "cancelled" {
                println!("{id} cancelled; resuming its session will not restart it");
            } else {
                println!("{id} had already ended with status {}", record.status);
            }
        }
    }
    Ok(Exit::Completed)
}
