//! `herald learnings list|show|delete`: the error memory as the
//! user sees it, every project's learnings included.

use herald_core::StoreHandle;
use herald_protocol::{one_line, terminal_safe};
use herald_store::{Learning, LearningScope};
use serde_json::json;

use crate::args::{CommonArgs, LearningsAction};
use crate::sessions_cmd::{call, print_json, when};
use crate::{CliError, Exit, setup};

/// Runs one `herald learnings` action. Needs no provider settings.
pub(crate) async fn learnings(
    common: &CommonArgs,
    action: LearningsAction,
) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let store = setup::open_store(&home)?;
    match action {
        LearningsAction::List { json, limit } => {
            let (rows, total) = call(&store, move |s| {
                Ok((
                    s.list_learnings(LearningScope::All, limit)?,
                    s.count_learnings(LearningScope::All)?,
                ))
            })
            .await?;
            if json {
                print_json(&rows)?;
            } else if rows.is_empty() {
                println!(
                    "no learnings yet (the agent saves them with its learning tool after fixing a failure)"
                );
            } else {
                rows.iter().for_each(|l| println!("{}", line(l)));
                if total > rows.len() {
                    eprintln!("{} of {total} shown; --limit N shows more", rows.len());
                }
            }
        }
        LearningsAction::Show { id, json } => {
            let learning = find(&store, &id).await?;
            if json {
                print_json(&learning)?;
            } else {
                println!("{}", terminal_safe(&details(&learning)));
            }
        }
        LearningsAction::Delete { id, json } => {
            let learning = find(&store, &id).await?;
            let target = learning.id;
            let deleted = call(&store, move |s| s.delete_learning(target)).await?;
            if !deleted {
                return Err(unknown(target));
            }
            if json {
                print_json(&json!({"deleted": learning}))?;
            } else {
                println!(
                    "deleted learning #{}: {}",
                    learning.id,
                    one_line(&learning.pattern)
                );
            }
        }
    }
    Ok(Exit::Completed)
}

/// `12` or `#12`.
fn parse_id(text: &str) -> Result<i64, CliError> {
    text.trim()
        .trim_start_matches('#')
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| {
            CliError::usage(anyhow::anyhow!(
                "'{}' is not a learning id; use the number `herald learnings list` shows (e.g. 12 or #12)",
                one_line(text)
            ))
        })
}

fn unknown(id: i64) -> CliError {
    CliError::usage(anyhow::anyhow!(
        "no learning #{id}; `herald learnings list` shows the stored learnings"
    ))
}

async fn find(store: &StoreHandle, text: &str) -> Result<Learning, CliError> {
    let id = parse_id(text)?;
    call(store, move |s| s.get_learning(id))
        .await?
        .ok_or_else(|| unknown(id))
}

fn kind(learning: &Learning) -> String {
    let mut parts = vec![learning.tool.as_str(), learning.error_type.as_str()];
    parts.retain(|p| !p.is_empty());
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join("/")
    }
}

fn scope(learning: &Learning) -> String {
    learning
        .project
        .as_deref()
        .map_or_else(|| "all projects".to_owned(), one_line)
}

/// One line per learning: id, kind, uses, scope, pattern and fix (stored
/// text from the model, so stripped of terminal control sequences).
fn line(learning: &Learning) -> String {
    format!(
        "#{:<4} {}  used {}  [{}]  {} \u{2192} {}",
        learning.id,
        one_line(&kind(learning)),
        learning.times_used,
        scope(learning),
        one_line(&learning.pattern),
        one_line(&learning.fix)
    )
}

fn details(learning: &Learning) -> String {
    let mut text = format!(
        "learning #{}\nkind:     {}\npattern:  {}\nfix:      {}\n",
        learning.id,
        kind(learning),
        learning.pattern,
        learning.fix
    );
    if !learning.context.is_empty() {
        text.push_str(&format!("context:  {}\n", learning.context));
    }
    if !learning.tags.is_empty() {
        text.push_str(&format!("tags:     {}\n", learning.tags.join(", ")));
    }
    text.push_str(&format!("scope:    {}\n", scope(learning)));
    text.push_str(&format!(
        "saved:    {}\nused:     {} times{}",
        when(learning.created_at),
        learning.times_used,
        learning
            .last_used_at
            .map(|at| format!(", last {}", when(at)))
            .unwrap_or_default()
    ));
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_numbers_with_an_optional_hash() {
        assert_eq!(parse_id("12").unwrap(), 12);
        assert_eq!(parse_id(" #7 ").unwrap(), 7);
        for bad in ["abc", "0", "-3", "", "#"] {
            assert!(parse_id(bad).is_err(), "{bad}");
        }
    }
}
