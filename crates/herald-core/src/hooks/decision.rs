//! What a finished hook command decided, and how the decisions of the hooks
//! of one event combine.
//!
//! Exit code 2 blocks, with stderr as the reason. Exit code 0 with a JSON
//! object on stdout may decide: `{"decision": "block", "reason": ...}`,
//! `{"decision": "continue"}`, `{"tool_input": {...}}` (keys replace the
//! call's arguments, `null` removes one), `{"tool_output": "..."}` (replaces
//! the result) and `{"additional_context": "..."}` (appended to the newest
//! message). Other stdout is ignored. Any other exit code, a timeout or a
//! malformed JSON object is an error: reported, never blocking.

use serde_json::{Map, Value};

/// How a hook command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It exited with this code (`128 + n` after signal `n`).
    Exited(i32),
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// A finished hook run: how it ended and what it wrote.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    pub ending: Ending,
    pub stdout: String,
    pub stderr: String,
}

/// The `outcome` of a `hook.ran` event.
pub use herald_protocol::HookOutcome as Outcome;

/// What one hook decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Decision {
    /// Why it blocked, when it did.
    pub block: Option<String>,
    /// Argument keys to replace (`null`: remove).
    pub tool_input: Option<Map<String, Value>>,
    /// A replacement for the tool's result.
    pub tool_output: Option<String>,
    /// Text to append to the newest message.
    pub additional_context: Option<String>,
}

/// The verdict on one run: its outcome, why (for blocks and failures), and
/// its decision (empty unless the outcome is `ok` or `blocked`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub outcome: Outcome,
    pub message: Option<String>,
    pub decision: Decision,
}

/// Characters of stderr kept in a failure message.
const STDERR_CHARS: usize = 500;

fn first_chars(text: &str, limit: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Judges a finished run.
pub(crate) fn judge(finished: &Finished, timeout_secs: u64) -> Verdict {
    let failed = |outcome, message: String| Verdict {
        outcome,
        message: Some(message),
        decision: Decision::default(),
    };
    match &finished.ending {
        Ending::TimedOut => failed(
            Outcome::Timeout,
            format!("timed out after {timeout_secs} s and was killed"),
        ),
        Ending::NotStarted(err) => failed(Outcome::Error, format!("could not start: {err}")),
        Ending::Exited(2) => {
            let reason = first_chars(&finished.stderr, 4_000);
            let reason = if reason.is_empty() {
                "a hook blocked it (exit code 2, no reason on stderr)".to_owned()
            } else {
                reason
            };
            Verdict {
                outcome: Outcome::Blocked,
                message: Some(reason.clone()),
                decision: Decision {
                    block: Some(reason),
                    ..Decision::default()
                },
            }
        }
        Ending::Exited(0) => match parse_stdout(&finished.stdout) {
            Ok(decision) => Verdict {
                outcome: if decision.block.is_some() {
                    Outcome::Blocked
                } else {
                    Outcome::Ok
                },
                message: decision.block.clone(),
                decision,
            },
            Err(err) => failed(Outcome::Error, err),
        },
        Ending::Exited(code) => {
            let stderr = first_chars(&finished.stderr, STDERR_CHARS);
            failed(
                Outcome::Error,
                if stderr.is_empty() {
                    format!("exited with code {code}")
                } else {
                    format!("exited with code {code}: {stderr}")
                },
            )
        }
    }
}

/// The decision in a successful hook's stdout. Output that is not a JSON
/// object decides nothing; a JSON object with a wrong field is an error.
fn parse_stdout(stdout: &str) -> Result<Decision, String> {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return Ok(Decision::default());
    }
    let object: Map<String, Value> = serde_json::from_str(text)
        .map_err(|err| format!("its stdout starts with `{{` but is not a JSON object: {err}"))?;
    let string = |key: &str| -> Result<Option<String>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("`{key}` must be a string, not {other}")),
        }
    };
    let mut decision = Decision {
        tool_output: string("tool_output")?,
        additional_context: string("additional_context")?.filter(|c| !c.trim().is_empty()),
        ..Decision::default()
    };
    match string("decision")?.as_deref() {
        None | Some("continue" | "approve" | "allow") => {}
        Some("block" | "deny") => {
            decision.block = Some(
                string("reason")?
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| "a hook blocked it (no reason given)".to_owned()),
            );
        }
        Some(other) => {
            return Err(format!(
                "unknown decision `{other}`; use \"block\" or \"continue\""
            ));
        }
    }
    match object.get("tool_input") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => decision.tool_input = Some(map.clone()),
        Some(other) => return Err(format!("`tool_input` must be a JSON object, not {other}")),
    }
    Ok(decision)
}

/// The decisions of one event's hooks, combined in config order: any block
/// wins (reasons joined), argument changes apply in order (later keys win),
/// the last replacement output wins, contexts are all kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Combined {
    pub block: Option<String>,
    pub tool_input: Option<Map<String, Value>>,
    pub tool_output: Option<String>,
    pub contexts: Vec<String>,
}

impl Combined {
    /// Adds the next hook's decision (in config order).
    pub(crate) fn add(&mut self, decision: Decision) {
        if let Some(reason) = decision.block {
            match &mut self.block {
                Some(reasons) => {
                    reasons.push_str("; ");
                    reasons.push_str(&reason);
                }
                None => self.block = Some(reason),
            }
        }
        if let Some(changes) = decision.tool_input {
            self.tool_input.get_or_insert_with(Map::new).extend(changes);
        }
        if let Some(output) = decision.tool_output {
            self.tool_output = Some(output);
        }
        self.contexts.extend(decision.additional_context);
    }

    /// The contexts as text to append to a message (`None` without any).
    pub(crate) fn context_text(&self) -> Option<String> {
        (!self.contexts.is_empty()).then(|| context_lines(&self.contexts))
    }
}

/// How added context reads at the end of a message.
pub(crate) fn context_lines(contexts: &[String]) -> String {
    contexts
        .iter()
        .map(|c| format!("[hook] {}", c.trim()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `arguments` (a call's JSON text) with `changes` applied: each key
/// replaces the argument's, `null` removes it. Arguments that are not a
/// JSON object are replaced by the changes.
pub(crate) fn apply_tool_input(arguments: &str, changes: &Map<String, Value>) -> String {
    let mut object = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    };
    for (key, value) in changes {
        if value.is_null() {
            object.remove(key);
        } else {
            object.insert(key.clone(), value.clone());
        }
    }
    Value::Object(object).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(code: i32, stdout: &str, stderr: &str) -> Verdict {
        judge(
            &Finished {
                ending: Ending::Exited(code),
                stdout: stdout.into(),
                stderr: stderr.into(),
            },
            10,
        )
    }

    #[test]
    fn exit_two_blocks_with_stderr() {
        let v = run(2, "ignored", "  no rm here\n");
        assert_eq!(v.outcome, Outcome::Blocked);
        assert_eq!(v.decision.block.as_deref(), Some("no rm here"));
        let v = run(2, "", "");
        assert!(v.decision.block.unwrap().contains("exit code 2"));
    }

    #[test]
    fn exit_zero_json_decides() {
        let v = run(0, r#"{"decision":"block","reason":"not today"}"#, "");
        assert_eq!(
            (v.outcome, v.decision.block.as_deref()),
            (Outcome::Blocked, Some("not today"))
        );
        let v = run(0, r#"{"decision":"continue"}"#, "");
        assert_eq!((v.outcome, v.decision), (Outcome::Ok, Decision::default()));
        let v = run(
            0,
            r#"{"tool_input":{"path":"b"},"tool_output":"new","additional_context":"note"}"#,
            "",
        );
        assert_eq!(v.outcome, Outcome::Ok);
        assert_eq!(v.decision.tool_input.unwrap()["path"], "b");
        assert_eq!(v.decision.tool_output.as_deref(), Some("new"));
        assert_eq!(v.decision.additional_context.as_deref(), Some("note"));
        // Plain text decides nothing.
        let v = run(0, "all good\n", "");
        assert_eq!((v.outcome, v.decision), (Outcome::Ok, Decision::default()));
    }

    #[test]
    fn failures_and_bad_json_are_errors_that_do_not_block() {
        for (code, stdout, needle) in [
            (1, "", "exited with code 1: boom"),
            (0, "{not json", "not a JSON object"),
            (0, r#"{"decision":"maybe"}"#, "unknown decision `maybe`"),
            (
                0,
                r#"{"tool_input":[1]}"#,
                "`tool_input` must be a JSON object",
            ),
            (0, r#"{"tool_output":5}"#, "`tool_output` must be a string"),
        ] {
            let v = run(code, stdout, "boom");
            assert_eq!(v.outcome, Outcome::Error, "{stdout}");
            assert!(v.message.as_deref().unwrap().contains(needle), "{v:?}");
            assert_eq!(v.decision, Decision::default());
        }
        let v = judge(
            &Finished {
                ending: Ending::TimedOut,
                stdout: r#"{"decision":"block"}"#.into(),
                stderr: String::new(),
            },
            3,
        );
        assert_eq!(v.outcome, Outcome::Timeout);
        assert!(v.decision.block.is_none());
        assert!(v.message.unwrap().contains("3 s"));
    }

    #[test]
    fn decisions_combine_in_config_order() {
        let mut combined = Combined::default();
        combined.add(Decision {
            tool_input: Some(json!({"a": 1, "b": 1}).as_object().unwrap().clone()),
            tool_output: Some("first".into()),
            additional_context: Some("one".into()),
            ..Decision::default()
        });
        combined.add(Decision {
            block: Some("r1".into()),
            ..Decision::default()
        });
        combined.add(Decision {
            block: Some("r2".into()),
            tool_input: Some(json!({"b": 2, "c": null}).as_object().unwrap().clone()),
            tool_output: Some("second".into()),
            additional_context: Some("two".into()),
        });
        assert_eq!(combined.block.as_deref(), Some("r1; r2"));
        assert_eq!(
            Value::Object(combined.tool_input.clone().unwrap()),
            json!({"a": 1, "b": 2, "c": null})
        );
        assert_eq!(combined.tool_output.as_deref(), Some("second"));
        assert_eq!(
            combined.context_text().as_deref(),
            Some("[hook] one\n[hook] two")
        );
        let args = apply_tool_input(r#"{"c":3,"d":4}"#, combined.tool_input.as_ref().unwrap());
        assert_eq!(
            serde_json::from_str::<Value>(&args).unwrap(),
            json!({"a": 1, "b": 2, "d": 4})
        );
    }
}
