//! The checks of an eval task and grading an attempt by them. Each check
//! is a one-key object in the suite: deterministic checks look at the
//! trajectory (tool calls, the final answer) or the attempt's directory
//! after the agent; `judge` asks the judge model.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::results::ItemResult;

/// How an expected tool sequence is matched against the calls made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequenceMode {
    /// Exactly these calls, in this order, nothing else.
    Exact,
    /// These calls in this order, others allowed between them.
    #[default]
    Ordered,
    /// Each of these tools called, in any order.
    Set,
}

/// One check of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The root agent called this tool.
    ToolCalled(String),
    /// The root agent never called this tool.
    ToolNotCalled(String),
    /// This tool was called and at least one call succeeded, none failed.
    ToolSucceeded(String),
    /// The final answer contains this text.
    FinalContains(String),
    /// The final answer matches this regular expression.
    FinalMatches(String),
    /// This path exists in the attempt's directory.
    FileExists(String),
    /// This file in the attempt's directory contains the text.
    FileContains { path: String, text: String },
    /// This shell command, run in the attempt's directory after the agent,
    /// exits 0.
    CommandSucceeds(String),
    /// The root agent's tool calls match this sequence.
    ToolSequence {
        tools: Vec<String>,
        #[serde(default)]
        mode: SequenceMode,
    },
    /// A rubric the judge model scores (0–1); passes at `pass_score`
    /// (default 0.5) or above.
    Judge {
        rubric: String,
        #[serde(default)]
        pass_score: Option<f64>,
    },
}

/// How one check went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// The check's kind (`tool_called`, …).
    pub kind: String,
    /// What it checked, in words.
    pub what: String,
    pub passed: bool,
    /// Why it failed, or what the judge said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The judge's score (judged checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The judge's answer came from the cache.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
}

impl Check {
    /// The check's kind as written in the suite.
    pub fn kind(&self) -> &'static str {
        match self {
            Check::ToolCalled(_) => "tool_called",
            Check::ToolNotCalled(_) => "tool_not_called",
            Check::ToolSucceeded(_) => "tool_succeeded",
            Check::FinalContains(_) => "final_contains",
            Check::FinalMatches(_) => "final_matches",
            Check::FileExists(_) => "file_exists",
            Check::FileContains { .. } => "file_contains",
            Check::CommandSucceeds(_) => "command_succeeds",
            Check::ToolSequence { .. } => "tool_sequence",
            Check::Judge { .. } => "judge",
        }
    }

    /// What the check checks, in words.
    pub fn describe(&self) -> String {
        match self {
            Check::ToolCalled(t) | Check::ToolNotCalled(t) | Check::ToolSucceeded(t) => t.clone(),
            Check::FinalContains(s) | Check::FinalMatches(s) | Check::FileExists(s) => s.clone(),
            Check::FileContains { path, text } => format!("{path} ∋ {text}"),
            Check::CommandSucceeds(c) => c.clone(),
            Check::ToolSequence { tools, mode } => format!("{mode:?} {}", tools.join(" → ")),
            Check::Judge { rubric, .. } => herald_protocol::one_line(rubric),
        }
    }

    /// Problems a suite file can have: a bad pattern, a path out of the
    /// directory, an empty sequence, a pass score out of range.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Check::FinalMatches(pattern) => regex::Regex::new(pattern)
                .map(|_| ())
                .map_err(|err| format!("final_matches: not a regular expression: {err}")),
            Check::FileExists(path) | Check::FileContains { path, .. } => {
                let p = Path::new(path);
                if p.is_absolute() || p.components().any(|c| c == std::path::Component::ParentDir) {
                    Err(format!(
                        "{}: `{path}` must be a path inside the task's directory",
                        self.kind()
                    ))
                } else {
                    Ok(())
                }
            }
            Check::ToolSequence { tools, .. } if tools.is_empty() => {
                Err("tool_sequence: list at least one tool".to_owned())
            }
            Check::Judge {
                pass_score: Some(s),
                ..
            } if !(0.0..=1.0).contains(s) => {
                Err("judge: pass_score must be from 0 to 1".to_owned())
            }
            Check::Judge { rubric, .. } if rubric.trim().is_empty() => {
                Err("judge: the rubric is empty".to_owned())
            }
            Check::ToolCalled(s)
            | Check::ToolNotCalled(s)
            | Check::ToolSucceeded(s)
            | Check::FinalContains(s)
            | Check::CommandSucceeds(s)
                if s.trim().is_empty() =>
            {
                Err(format!("{}: the value is empty", self.kind()))
            }
            _ => Ok(()),
        }
    }
}

fn outcome(check: &Check, passed: bool, detail: Option<String>) -> CheckOutcome {
    CheckOutcome {
        kind: check.kind().to_owned(),
        what: check.describe(),
        passed,
        detail: if passed { None } else { detail },
        score: None,
        cached: false,
    }
}

/// Grades one deterministic check; `None` for a judged one.
pub async fn grade(check: &Check, result: &ItemResult, workdir: &Path) -> Option<CheckOutcome> {
    let calls = &result.tool_sequence;
    let answer = result.final_answer.as_deref().unwrap_or("");
    let graded = match check {
        Check::ToolCalled(tool) => outcome(
            check,
            calls.iter().any(|c| c == tool),
            Some(format!("calls made: {}", list(calls))),
        ),
        Check::ToolNotCalled(tool) => {
            let n = calls.iter().filter(|c| *c == tool).count();
            outcome(check, n == 0, Some(format!("called {n} times")))
        }
        Check::ToolSucceeded(tool) => {
            let stat = result.tool_stats.get(tool).cloned().unwrap_or_default();
            outcome(
                check,
                stat.calls > 0 && stat.errors == 0,
                Some(format!("{} calls, {} failed", stat.calls, stat.errors)),
            )
        }
        Check::FinalContains(text) => outcome(
            check,
            answer.contains(text.as_str()),
            Some(format!(
                "final answer: {}",
                herald_protocol::one_line(answer)
            )),
        ),
        Check::FinalMatches(pattern) => {
            let matched = regex::Regex::new(pattern).is_ok_and(|re| re.is_match(answer));
            outcome(
                check,
                matched,
                Some(format!(
                    "final answer: {}",
                    herald_protocol::one_line(answer)
                )),
            )
        }
        Check::FileExists(path) => outcome(
            check,
            tokio::fs::try_exists(workdir.join(path))
                .await
                .unwrap_or(false),
            Some("no such file".to_owned()),
        ),
        Check::FileContains { path, text } => {
            match tokio::fs::read_to_string(workdir.join(path)).await {
                Ok(content) => outcome(
                    check,
                    content.contains(text.as_str()),
                    Some("the file does not contain the text".to_owned()),
                ),
                Err(err) => outcome(check, false, Some(format!("cannot read it: {err}"))),
            }
        }
        Check::CommandSucceeds(command) => {
            let run = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(command)
                .current_dir(workdir)
                .stdin(std::process::Stdio::null())
                .output()
                .await;
            match run {
                Ok(output) => outcome(
                    check,
                    output.status.success(),
                    Some(format!(
                        "{}: {}",
                        output.status,
                        herald_protocol::one_line(&String::from_utf8_lossy(&output.stderr))
                    )),
                ),
                Err(err) => outcome(check, false, Some(format!("cannot run sh: {err}"))),
            }
        }
        Check::ToolSequence { tools, mode } => outcome(
            check,
            sequence_matches(calls, tools, *mode),
            Some(format!("calls made: {}", list(calls))),
        ),
        Check::Judge { .. } => return None,
    };
    Some(graded)
}

fn list(calls: &[String]) -> String {
    if calls.is_empty() {
        "none".to_owned()
    } else {
        calls.join(" → ")
    }
}

/// Whether `calls` match `expected` under `mode`.
pub fn sequence_matches(calls: &[String], expected: &[String], mode: SequenceMode) -> bool {
    match mode {
        SequenceMode::Exact => calls == expected,
        SequenceMode::Ordered => {
            let mut want = expected.iter().peekable();
            for call in calls {
                if want.peek().is_some_and(|w| *w == call) {
                    want.next();
                }
            }
            want.peek().is_none()
        }
        SequenceMode::Set => expected.iter().all(|e| calls.contains(e)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn sequences_match_by_mode() {
        let calls = v(&["read_file", "terminal", "write_file"]);
        assert!(sequence_matches(&calls, &calls, SequenceMode::Exact));
        assert!(!sequence_matches(
            &calls,
            &v(&["read_file", "write_file"]),
            SequenceMode::Exact
        ));
        assert!(sequence_matches(
            &calls,
            &v(&["read_file", "write_file"]),
            SequenceMode::Ordered
        ));
        assert!(!sequence_matches(
            &calls,
            &v(&["write_file", "read_file"]),
            SequenceMode::Ordered
        ));
        assert!(sequence_matches(
            &calls,
            &v(&["write_file", "read_file"]),
            SequenceMode::Set
        ));
        assert!(!sequence_matches(&calls, &v(&["patch"]), SequenceMode::Set));
    }

    #[test]
    fn checks_parse_from_one_key_yaml_objects() {
        let yaml = "- tool_called: read_file\n- file_contains: {path: a.txt, text: hi}\n- tool_sequence: {tools: [a, b], mode: exact}\n- judge: {rubric: be kind}\n";
        let checks: Vec<Check> = serde_saphyr::from_str(yaml).unwrap();
        assert_eq!(checks[0], Check::ToolCalled("read_file".into()));
        assert_eq!(
            checks[1],
            Check::FileContains {
                path: "a.txt".into(),
                text: "hi".into()
            }
        );
        assert_eq!(
            checks[2],
            Check::ToolSequence {
                tools: v(&["a", "b"]),
                mode: SequenceMode::Exact
            }
        );
        assert_eq!(
            checks[3],
            Check::Judge {
                rubric: "be kind".into(),
                pass_score: None
            }
        );
        assert!(serde_saphyr::from_str::<Vec<Check>>("- tool_calld: x\n").is_err());
        assert!(Check::FileExists("../x".into()).validate().is_err());
        assert!(Check::FinalMatches("(".into()).validate().is_err());
    }
}
