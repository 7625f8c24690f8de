//! `herald permissions check|log`: what the permission policy decides for a
//! call (without running it), and the stored log of decisions.

use herald_protocol::one_line;

use crate::args::{CommonArgs, PermissionsAction};
use crate::sessions_cmd::{call, when};
use crate::{CliError, Exit, setup};

pub(crate) async fn permissions(
    common: &CommonArgs,
    action: PermissionsAction,
) -> Result<Exit, CliError> {
    match action {
        PermissionsAction::Check {
            tool, args, json, ..
        } => check(common, &tool, &args, json),
        PermissionsAction::Log {
            session,
            json,
            limit,
        } => log(common, session, json, limit).await,
    }
}

/// Settings without requiring provider credentials: checking a rule needs
/// no model.
fn settings(common: &CommonArgs) -> Result<herald_core::Settings, CliError> {
    let env = setup::environment();
    let (home, path) = setup::config_location(common, &env);
    let config = crate::config_cmd::load(&path)?;
    let mut settings = herald_core::Settings::resolve_without_credentials(
        &config,
        &path,
        home,
        &env,
        &setup::overrides(common),
    )
    .map_err(CliError::usage)?;
    setup::apply_permission_flags(common, &mut settings);
    Ok(settings)
}

fn check(common: &CommonArgs, tool: &str, args: &str, json: bool) -> Result<Exit, CliError> {
    let args: serde_json::Value = serde_json::from_str(args).map_err(|err| {
        CliError::usage(anyhow::anyhow!(
            "ARGS_JSON is not valid JSON ({err}); pass the call's arguments as one object, e.g. '{{\"command\":\"ls\"}}'"
        ))
    })?;
    if !args.is_object() {
        return Err(CliError::usage(anyhow::anyhow!(
            "ARGS_JSON must be a JSON object, e.g. '{{\"command\":\"ls\"}}'"
        )));
    }
    let settings = settings(common)?;
    let verdict = herald_core::check_permission(&settings, tool, &args)
        .map_err(|e| CliError::usage(anyhow::anyhow!(e)))?;
    if json {
        let out = serde_json::json!({
            "decision": verdict.decision.as_str(),
            "reason": verdict.reason,
            "rule": verdict.rule,
            "allow_rule": verdict.allow_rule,
            "confine": verdict.confine,
            "network": verdict.network,
            "mode": settings.permissions.mode,
        });
        println!("{out}");
    } else {
        let rule = verdict
            .rule
            .as_deref()
            .map(|r| format!(" [{r}]"))
            .unwrap_or_default();
        println!("{}{rule}: {}", verdict.decision.as_str(), verdict.reason);
        if let Some(allow) = verdict
            .allow_rule
            .filter(|_| verdict.decision.as_str() != "allow")
        {
            println!("to allow: add \"{allow}\" to `allow` under [permissions]");
        }
    }
    Ok(Exit::Completed)
}

async fn log(
    common: &CommonArgs,
    session: Option<String>,
    json: bool,
    limit: usize,
) -> Result<Exit, CliError> {
    let settings = settings(common)?;
    let store = setup::open_store(&settings.home)?;
    let session = match session {
        Some(text) => Some(crate::id_lookup::session_id(&store, &text).await?),
        None => None,
    };
    let rows = call(&store, move |s| s.load_decisions(session.as_deref(), limit)).await?;
    if json {
        for row in &rows {
            let text = serde_json::to_string(row).map_err(CliError::failed)?;
            println!("{text}");
        }
        return Ok(Exit::Completed);
    }
    if rows.is_empty() {
        eprintln!("no permission decisions recorded");
        return Ok(Exit::Completed);
    }
    for row in rows {
        let summary: String = row.summary.chars().take(80).collect();
        println!(
            "{}  {}  {:<5} {:<14} {}/{}  {}  [{}] {}",
            when(row.created_at),
            row.session_id,
            row.decision,
            row.decided_by,
            row.agent_id,
            one_line(&row.tool),
            one_line(&summary),
            one_line(row.rule.as_deref().unwrap_or("-")),
            one_line(&row.reason)
        );
    }
    Ok(Exit::Completed)
}
