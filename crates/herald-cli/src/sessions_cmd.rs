//! `herald sessions list|show|search|export|import|delete|prune`.

use std::io::Write;
use std::time::Duration;

use herald_core::StoreHandle;
use herald_core::runtime::Catalog;
use herald_protocol::{one_line, terminal_safe};
use herald_store::{
    ImportReport, ListFilter, SearchRequest, SessionRecord, SessionSource, StoredMessage,
};
use serde::Serialize;

use crate::args::{CommonArgs, ExportFormat, SessionsAction};
use crate::{CliError, Exit, setup};

pub(crate) fn print_json(value: &impl Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).map_err(CliError::failed)?;
    println!("{text}");
    Ok(())
}

/// `sessions import`: the sessions made, then what was skipped and repaired.
fn print_import(report: &ImportReport) {
    for session in &report.sessions {
        let title = session
            .title
            .as_deref()
            .map(|t| format!(" \"{}\"", terminal_safe(&one_line(t))))
            .unwrap_or_default();
        println!(
            "imported {} messages as session {}{title} ({} transcript)",
            session.messages,
            session.session_id,
            report.format.as_str()
        );
        if let Some(note) = &session.note {
            println!("  {note}");
        }
    }
    let list = |counts: &std::collections::BTreeMap<String, usize>| {
        counts
            .iter()
            .map(|(kind, n)| format!("{n} × {kind}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !report.skipped.is_empty() {
        println!(
            "  skipped (no herald equivalent): {}",
            list(&report.skipped)
        );
    }
    if !report.repaired.is_empty() {
        println!(
            "  repaired (so providers accept it): {}",
            list(&report.repaired)
        );
    }
}

pub(crate) fn when(ms: i64) -> String {
    civil_time(ms.div_euclid(1000))
}

/// Formats Unix seconds as `YYYY-MM-DD HH:MM` UTC.
fn civil_time(secs: i64) -> String {
    const FORMAT: &[time::format_description::FormatItem<'_>] =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]");
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|at| at.format(FORMAT).ok())
        .unwrap_or_else(|| format!("@{secs}"))
}

/// One line per session: id, start, message count and title (stored or
/// imported text, so stripped of terminal control sequences).
fn line(record: &SessionRecord) -> String {
    format!(
        "{}  {}  {:>4} msgs  {}",
        one_line(&record.id),
        when(record.started_at),
        record.message_count,
        one_line(record.title.as_deref().unwrap_or("(untitled)"))
    )
}

/// A stored message as text, stripped of terminal control sequences (tool
/// output and imported transcripts may hold any bytes).
fn show_message(m: &StoredMessage) {
    let role = format!("{:?}", m.message.role).to_lowercase();
    let mut text = m.message.content.clone();
    for call in &m.message.tool_calls {
        text.push_str(&format!("\n  → {}({})", call.name, call.arguments));
    }
    println!(
        "[{}] #{} {role}: {}",
        m.seq,
        m.id,
        terminal_safe(text.trim_end())
    );
}

/// A cost rounded to 1e-6 (`$0.01478`), or `cost unknown`.
fn usd(cost: Option<f64>) -> String {
    cost.map_or_else(
        || "cost unknown".to_owned(),
        |usd| format!("${}", herald_protocol::round_cost(usd)),
    )
}

/// Now, in Unix milliseconds.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Parses `30d`, `12h`, `45m`, `90s`.
fn parse_age(text: &str) -> Result<Duration, CliError> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let n: u64 = number.parse().map_err(|_| {
        CliError::usage(anyhow::anyhow!(
            "--older-than '{text}': use a number with d, h, m or s (e.g. 30d)"
        ))
    })?;
    let secs = match unit {
        "d" => n * 86_400,
        "h" => n * 3600,
        "m" => n * 60,
        "s" => n,
        _ => {
            return Err(CliError::usage(anyhow::anyhow!(
                "--older-than '{text}': use a number with d, h, m or s (e.g. 30d)"
            )));
        }
    };
    Ok(Duration::from_secs(secs))
}

pub(crate) async fn call<R: Send + 'static>(
    store: &StoreHandle,
    job: impl FnOnce(&mut herald_store::Store) -> Result<R, herald_store::StoreError> + Send + 'static,
) -> Result<R, CliError> {
    store
        .call(job)
        .await
        .map_err(CliError::failed)?
        .map_err(CliError::failed)
}

/// `sessions show ID --events`: the session's stored events after `after`,
/// as readable lines or one JSON event per line.
async fn show_events(
    store: &StoreHandle,
    record: &SessionRecord,
    json: bool,
    after: i64,
) -> Result<Exit, CliError> {
    let id = record.id.clone();
    let events = call(store, move |s| s.load_events_after(&id, after, usize::MAX)).await?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written: std::io::Result<()> = (|| {
        if !json {
            writeln!(out, "{}", line(record))?;
            if events.is_empty() {
                writeln!(out, "no stored events")?;
            }
        }
        for event in &events {
            if json {
                serde_json::to_writer(&mut out, &crate::events_view::json_event(event))?;
                writeln!(out)?;
            } else {
                writeln!(out, "{}", crate::events_view::human_line(event))?;
            }
        }
        out.flush()
    })();
    // A closed pipe (`| head`) is not an error of the command.
    match written {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::failed(err)),
        _ => Ok(Exit::Completed),
    }
}

/// How a destructive command (`sessions delete`, `sessions prune`) was
/// asked to go about it.
#[derive(Debug, Clone, Copy)]
struct Removal {
    /// Go ahead without asking.
    yes: bool,
    /// Only list what would go.
    dry_run: bool,
    json: bool,
}

/// Lists sessions about to be deleted: on stdout as text, on stderr when
/// stdout carries JSON.
fn show_plan(records: &[&SessionRecord], json: bool) {
    for record in records {
        if json {
            eprintln!("{}", line(record));
        } else {
            println!("{}", line(record));
        }
    }
}

/// `sessions delete ID`: the session (by id or a unique start of it) with
/// its subagent sessions, after showing it and asking.
async fn delete(store: &StoreHandle, text: &str, how: Removal) -> Result<Exit, CliError> {
    let id = crate::id_lookup::session_id(store, text).await?;
    let lookup = id.clone();
    let Some(record) = call(store, move |s| s.get_session(&lookup)).await? else {
        return Err(CliError::usage(anyhow::anyhow!("no session '{id}'")));
    };
    if how.dry_run {
        if how.json {
            print_json(&serde_json::json!({"dry_run": true, "sessions": [record]}))?;
        } else {
            println!("would delete 1 session (with its subagent sessions):");
            show_plan(&[&record], false);
        }
        return Ok(Exit::Completed);
    }
    let agreed = crate::confirm::confirm(
        "Delete 1 session(s) (with their subagent sessions)?",
        how.yes,
        || show_plan(&[&record], how.json),
    )?;
    let deleted = if agreed {
        herald_core::runtime::delete_session(store, &id)
            .await
            .map_err(|err| match err {
                herald_core::runtime::RuntimeError::SessionInUse(_) => CliError::usage(err),
                _ => CliError::failed(err),
            })?
    } else {
        false
    };
    if how.json {
        print_json(&serde_json::json!({"id": id, "deleted": deleted}))?;
    } else if deleted {
        println!("deleted {id}");
    } else {
        eprintln!("nothing deleted");
    }
    Ok(Exit::Completed)
}

/// `sessions prune --older-than AGE`: lists the session trees with no
/// activity for `age`, asks, then deletes exactly those.
async fn prune(
    store: &StoreHandle,
    older_than: &str,
    age: Duration,
    how: Removal,
) -> Result<Exit, CliError> {
    let trees = call(store, move |s| s.stale_session_trees(age)).await?;
    let roots: Vec<&SessionRecord> = trees.iter().map(|t| &t.root).collect();
    let total: usize = trees.iter().map(|t| t.sessions).sum();
    if how.dry_run {
        if how.json {
            print_json(&serde_json::json!({
                "dry_run": true,
                "older_than": older_than,
                "sessions": roots,
                "with_subagent_sessions": total,
            }))?;
        } else if trees.is_empty() {
            println!("no sessions idle for {older_than}");
        } else {
            println!(
                "would delete {} session(s) idle for {older_than} ({total} with their subagent sessions):",
                trees.len()
            );
            show_plan(&roots, false);
        }
        return Ok(Exit::Completed);
    }
    let agreed = trees.is_empty()
        || crate::confirm::confirm(
            &format!(
                "Delete {} session(s) idle for {older_than} ({total} with their subagent sessions)?",
                trees.len()
            ),
            how.yes,
            || show_plan(&roots, how.json),
        )?;
    let ids: Vec<String> = roots.iter().map(|r| r.id.clone()).collect();
    let (pruned, in_use) = if agreed && !ids.is_empty() {
        herald_core::runtime::delete_session_trees(store, ids.clone())
            .await
            .map_err(CliError::failed)?
    } else {
        (0, Vec::new())
    };
    if how.json {
        let deleted: Vec<&String> = if agreed {
            ids.iter().filter(|id| !in_use.contains(id)).collect()
        } else {
            Vec::new()
        };
        print_json(&serde_json::json!({
            "pruned": pruned,
            "sessions": deleted,
            "in_use": in_use,
        }))?;
    } else if agreed {
        println!("pruned {pruned} sessions");
    } else {
        eprintln!("nothing deleted");
    }
    if !in_use.is_empty() {
        eprintln!(
            "herald: kept {} session(s) another herald process is running: {}",
            in_use.len(),
            in_use.join(", ")
        );
    }
    Ok(Exit::Completed)
}

pub(crate) async fn sessions(
    common: &CommonArgs,
    action: SessionsAction,
) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let store = setup::open_store(&home)?;
    match action {
        SessionsAction::List { json, limit, all } => {
            let filter = ListFilter {
                limit,
                include_subagents: all,
                ..ListFilter::default()
            };
            let list = Catalog::new(store.clone())
                .sessions(filter)
                .await
                .map_err(setup::runtime_error)?;
            if json {
                print_json(&list)?;
            } else if list.is_empty() {
                println!("no sessions yet");
            } else {
                list.iter().for_each(|r| println!("{}", line(r)));
            }
        }
        SessionsAction::Show {
            id,
            json,
            events,
            after,
        } => {
            let id = crate::id_lookup::session_id(&store, &id).await?;
            let lookup = id.clone();
            let Some(record) = call(&store, move |s| s.get_session(&lookup)).await? else {
                return Err(CliError::usage(anyhow::anyhow!("no session '{id}'")));
            };
            if events {
                return show_events(&store, &record, json, after).await;
            }
            let tree_id = id.clone();
            let (tree, children, unpriced) = call(&store, move |s| {
                let unpriced = s
                    .session_usage(&tree_id)?
                    .iter()
                    .any(|row| row.cost_usd.is_none());
                Ok((
                    s.tree_usage(&tree_id)?,
                    s.child_sessions(&tree_id)?,
                    unpriced,
                ))
            })
            .await?;
            // The stored total counts priced requests only: with an
            // unpriced one the session's cost is unknown.
            let own_cost = (!unpriced).then_some(record.cost_usd);
            let messages = Catalog::new(store.clone())
                .transcript(&id)
                .await
                .map_err(setup::runtime_error)?;
            if json {
                let mut session = serde_json::to_value(&record).map_err(CliError::failed)?;
                if own_cost.is_none() {
                    session["cost_usd"] = serde_json::Value::Null;
                }
                print_json(&serde_json::json!({
                    "session": session,
                    "tree_usage": tree,
                    "children": children,
                    "messages": messages,
                }))?;
            } else {
                println!("{}", line(&record));
                println!(
                    "model {} ({}) · cwd {} · tokens in {} out {} cached {} · {}",
                    one_line(&record.model),
                    one_line(&record.provider),
                    one_line(&record.cwd),
                    record.input_tokens,
                    record.output_tokens,
                    record.cached_tokens,
                    usd(own_cost)
                );
                if !children.is_empty() {
                    println!(
                        "tree ({} subagent sessions) · {} requests · tokens in {} out {} cached {} · {}",
                        children.len(),
                        tree.requests,
                        tree.input,
                        tree.output,
                        tree.cached,
                        usd(tree.cost_usd)
                    );
                    for child in &children {
                        println!("  {}", line(child));
                    }
                }
                messages.iter().for_each(show_message);
            }
        }
        SessionsAction::Search {
            query,
            json,
            limit,
            since,
            until,
        } => {
            let active =
                herald_core::time_bound::parse_period(since.as_deref(), until.as_deref(), now_ms())
                    .map_err(|err| CliError::usage(anyhow::anyhow!("--{err}")))?;
            let request = SearchRequest {
                query,
                limit,
                window: 1,
                active,
                ..SearchRequest::default()
            };
            let hits = Catalog::new(store.clone())
                .search(request)
                .await
                .map_err(setup::runtime_error)?;
            if json {
                print_json(&hits)?;
            } else if hits.is_empty() {
                println!("no matches");
            } else {
                for hit in &hits {
                    println!("{}", line(&hit.session));
                    if let Some(summary) = &hit.session.summary {
                        println!("  summary: {}", one_line(summary));
                    }
                    if let Some(message) = &hit.message {
                        show_message(message);
                    }
                    println!();
                }
            }
        }
        SessionsAction::Export { id, format, json } => {
            let id = crate::id_lookup::session_id(&store, &id).await?;
            if json || format == ExportFormat::Json {
                let value = call(&store, move |s| s.export_session(&id)).await?;
                print_json(&value)?;
            } else {
                let bytes = call(&store, move |s| {
                    let mut out = Vec::new();
                    s.export_jsonl(&id, &mut out).map(|()| out)
                })
                .await?;
                let mut stdout = std::io::stdout().lock();
                stdout
                    .write_all(&bytes)
                    .and_then(|()| stdout.flush())
                    .map_err(CliError::failed)?;
            }
        }
        SessionsAction::Import { path, json, strict } => {
            let mode = if strict {
                herald_store::ImportMode::Strict
            } else {
                herald_store::ImportMode::Lenient
            };
            let report = call(&store, move |s| {
                s.import_transcript(&path, SessionSource::Cli, mode)
            })
            .await?;
            for record in &report.malformed {
                eprintln!(
                    "herald: skipped line {}: {} (import with --strict to import nothing instead)",
                    record.line, record.reason
                );
            }
            // Index the imported messages now, not at the next search.
            if let Err(err) = call(&store, |s| s.catch_up_search_index()).await {
                eprintln!(
                    "warning: imported, but not indexed for search yet ({:#}); the next search will index it",
                    err.error
                );
            }
            if json {
                print_json(&report)?;
            } else {
                print_import(&report);
            }
        }
        SessionsAction::Delete {
            id,
            yes,
            dry_run,
            json,
        } => return delete(&store, &id, Removal { yes, dry_run, json }).await,
        SessionsAction::Prune {
            older_than,
            yes,
            dry_run,
            json,
        } => {
            let age = parse_age(&older_than)?;
            return prune(&store, &older_than, age, Removal { yes, dry_run, json }).await;
        }
    }
    Ok(Exit::Completed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_dates() {
        assert_eq!(parse_age("30d").unwrap(), Duration::from_secs(30 * 86_400));
        assert_eq!(parse_age("12h").unwrap(), Duration::from_secs(12 * 3600));
        assert!(parse_age("soon").is_err());
        assert!(parse_age("5w").is_err());
        assert_eq!(civil_time(0), "1970-01-01 00:00");
        assert_eq!(civil_time(1_763_683_200), "2025-11-21 00:00");
    }
}
