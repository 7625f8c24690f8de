//! `herald agents list|show|cancel|merge|worktrees`: the journaled
//! subagents, readable after a restart, and the worktrees of isolated ones
//! (`defs` lives in `agent_defs_cmd.rs`).

use herald_protocol::{AgentStatus, UsageTotals, one_line, terminal_safe};
use herald_store::{AgentFilter, AgentRecord, StoreError};

use crate::args::{AgentsAction, CommonArgs};
use crate::sessions_cmd::{print_json, when};
use crate::{CliError, Exit, setup};
use herald_core::delegation::worktree;
use herald_core::runtime::Catalog;

/// A journaled cost: `$0.01478`, or `cost unknown` for a model without a
/// price.
fn usd(cost: Option<f64>) -> String {
    cost.map_or_else(
        || "cost unknown".to_owned(),
        |usd| format!("${}", herald_protocol::round_cost(usd)),
    )
}

/// The subtree part of a list line, when the agent had descendants.
fn subtree_note(record: &AgentRecord) -> String {
    match &record.tree_usage {
        Some(tree) if tree.requests > record.usage.requests => format!(
            " (subtree {} tok {})",
            tree.input + tree.output,
            usd(tree.cost_usd)
        ),
        _ => String::new(),
    }
}

/// One line per agent: its own tokens and cost, and its subtree's when it
/// delegated; the goal (the model's words) is stripped of terminal control
/// sequences.
fn line(record: &AgentRecord) -> String {
    let goal: String = one_line(&record.goal).chars().take(60).collect();
    format!(
        "{}  {:<11} d{} {:<12}  {}  {:>7} tok {}{}  {}{}",
        record.id,
        record.status,
        record.depth,
        one_line(&record.role),
        when(record.created_at),
        record.tokens.input + record.tokens.output,
        usd(record.cost_usd),
        subtree_note(record),
        if record.background { "[bg] " } else { "" },
        goal
    )
}

/// `N requests · tokens in X out Y cached Z cache-write W · $C`.
fn totals_text(totals: &UsageTotals) -> String {
    format!(
        "{} requests · tokens in {} out {} cached {} cache-write {} · {}",
        totals.requests,
        totals.input,
        totals.output,
        totals.cached,
        totals.cache_creation,
        usd(totals.cost_usd)
    )
}

fn unknown(id: &str) -> CliError {
    CliError::usage(anyhow::anyhow!(
        "no agent '{id}'; `herald agents list` shows stored agents"
    ))
}

/// Runs one `herald agents` action.
pub(crate) async fn agents(common: &CommonArgs, action: AgentsAction) -> Result<Exit, CliError> {
    if let AgentsAction::Defs { json, .. } = action {
        return crate::agent_defs_cmd::defs(common, json).await;
    }
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
            // The status filter applies to what is shown, after stale
            // entries are corrected.
            let session = match session {
                Some(text) => Some(crate::id_lookup::session_id(&store, &text).await?),
                None => None,
            };
            let filter = AgentFilter {
                root_session_id: session,
                limit: if status.is_some() { 10_000 } else { limit },
                ..AgentFilter::default()
            };
            let mut list = Catalog::new(store.clone())
                .agents(filter)
                .await
                .map_err(setup::runtime_error)?;
            if let Some(status) = status {
                list.retain(|r| r.status == status);
                list.truncate(if limit == 0 { 100 } else { limit });
            }
            if json {
                print_json(&list)?;
            } else if list.is_empty() {
                println!("no agents");
            } else {
                list.iter().for_each(|r| println!("{}", line(r)));
            }
        }
        AgentsAction::Show { id, json } => {
            let id = crate::id_lookup::agent_id(&store, &id).await?;
            let Some(record) = Catalog::new(store.clone())
                .agent(&id)
                .await
                .map_err(setup::runtime_error)?
            else {
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
                println!("goal: {}", terminal_safe(&record.goal));
                if let Some(context) = &record.context {
                    println!("context: {}", terminal_safe(context));
                }
                println!("own: {}", totals_text(&record.usage));
                match &record.tree_usage {
                    Some(tree) => println!("subtree: {}", totals_text(tree)),
                    None => println!(
                        "subtree: not recorded (unfinished, or journaled by an older herald)"
                    ),
                }
                if let Some(reason) = &record.exit_reason {
                    println!(
                        "exit: {} after {} API calls",
                        reason.as_str(),
                        record.iterations
                    );
                }
                if let Some(error) = &record.error {
                    println!("error: {}", terminal_safe(error));
                }
                if let Some(result) = &record.result {
                    println!("\n{}", terminal_safe(result));
                }
            }
        }
        AgentsAction::Defs { .. } => {}
        AgentsAction::Merge { id, keep, json } => {
            let id = crate::id_lookup::agent_id(&store, &id).await?;
            let outcome = worktree::merge(&store, &id, keep)
                .await
                .map_err(|err| match err {
                    worktree::MergeError::Store(_) => CliError::failed(err),
                    _ => CliError::usage(err),
                })?;
            if json {
                print_json(&outcome)?;
            } else {
                let how = match outcome.kind {
                    worktree::MergeKind::FastForward => "fast-forwarded to",
                    worktree::MergeKind::MergeCommit => "merged with a merge commit into",
                    worktree::MergeKind::UpToDate => "had nothing new for",
                };
                println!(
                    "{} {how} {} (HEAD {})",
                    outcome.branch,
                    outcome.repo,
                    &outcome.head[..outcome.head.len().min(12)]
                );
                if outcome.removed {
                    println!("removed its worktree and branch");
                }
            }
        }
        AgentsAction::Worktrees { prune, force, json } => {
            if prune {
                let pruned = worktree::prune(&store, force)
                    .await
                    .map_err(|e| CliError::failed(anyhow::anyhow!(e)))?;
                if json {
                    print_json(&pruned)?;
                } else if pruned.is_empty() {
                    println!("no worktrees");
                } else {
                    for p in &pruned {
                        let what = if p.removed { "removed" } else { "kept" };
                        let note = if p.note.is_empty() {
                            String::new()
                        } else {
                            format!(": {}", p.note)
                        };
                        println!("{}  {what}  {}{note}", p.agent_id, p.path);
                    }
                }
            } else {
                let states = worktree::list(&store)
                    .await
                    .map_err(|e| CliError::failed(anyhow::anyhow!(e)))?;
                if json {
                    print_json(&states)?;
                } else if states.is_empty() {
                    println!("no worktrees");
                } else {
                    for s in &states {
                        let status = s
                            .agent_status
                            .map_or_else(|| "pruned".to_owned(), |st| st.to_string());
                        let state = if !s.exists {
                            "missing".to_owned()
                        } else if s.dirty {
                            format!("{} commits, uncommitted changes", s.commits)
                        } else {
                            format!("{} commits", s.commits)
                        };
                        println!(
                            "{}  {:<11} {}  {}  {state}",
                            s.record.agent_id, status, s.record.branch, s.record.path
                        );
                    }
                }
            }
        }
        AgentsAction::Cancel { id, json } => {
            let id = crate::id_lookup::agent_id(&store, &id).await?;
            let lookup = id.clone();
            let record = store
                .call(move |s| s.cancel_agent(&lookup, AgentStatus::Cancelled))
                .await
                .map_err(CliError::failed)?;
            let record = match record {
                Ok(record) => record,
                Err(StoreError::UnknownAgent(_)) => return Err(unknown(&id)),
                Err(err) => return Err(CliError::failed(err)),
            };
            if json {
                print_json(&record)?;
            } else if record.status == AgentStatus::Cancelled {
                println!("{id} cancelled; resuming its session will not restart it");
            } else {
                println!("{id} had already ended with status {}", record.status);
            }
        }
    }
    Ok(Exit::Completed)
}
