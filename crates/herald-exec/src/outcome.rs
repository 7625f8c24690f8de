//! The result the model reads:
//! `{"status","output","error"?,"stderr"?,"tool_calls_made","duration_seconds"}`,
//! kept as valid JSON within the registry's output limit.

use std::time::Duration;

use serde::Serialize;

use crate::capture::Capture;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// The script exited with status 0.
    Success,
    /// It failed (non-zero exit, traceback) or could not be started.
    Error,
    /// It ran past its timeout and was stopped.
    Timeout,
    /// The user interrupted the turn and it was killed.
    Interrupted,
}

/// One run's result.
#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    pub status: Status,
    /// The script's stdout (head and tail when long).
    pub output: String,
    /// Where `output` came from, to cut it further when the JSON is too long.
    #[serde(skip)]
    pub stdout: Option<Capture>,
    /// What went wrong: the traceback, the timeout, the setup failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// stderr of a successful run (warnings, logging), when there was any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    pub tool_calls_made: u32,
    pub duration_seconds: f64,
    /// Said after the JSON (on its own line, `sandbox: ...`) when a
    /// confined script failed on what looks like the sandbox.
    #[serde(skip)]
    pub sandbox_note: Option<String>,
}

impl Outcome {
    /// A run that failed before the script started.
    pub(crate) fn setup_failed(message: impl Into<String>, elapsed: Duration) -> Self {
        Self {
            status: Status::Error,
            output: String::new(),
            stdout: None,
            error: Some(message.into()),
            stderr: None,
            tool_calls_made: 0,
            duration_seconds: seconds(elapsed),
            sandbox_note: None,
        }
    }

    /// The JSON text, at most `limit` chars when `limit > 0`: the output is
    /// cut (head and tail) until the whole object fits, so the registry's
    /// own cut never breaks the JSON.
    pub(crate) fn render(mut self, limit: usize) -> String {
        let mut text = to_json(&self);
        let Some(stdout) = self.stdout.take() else {
            return text;
        };
        let mut budget = self.output.len();
        for _ in 0..8 {
            let len = text.chars().count();
            if limit == 0 || len <= limit || budget == 0 {
                break;
            }
            // Shrink in proportion (escapes make the JSON longer than the
            // text), with some slack for the marker and the other fields.
            budget = (budget.saturating_mul(limit) / len).saturating_sub(256);
            self.output = stdout.render_within("stdout", budget);
            text = to_json(&self);
        }
        text
    }
}

/// Seconds with millisecond precision.
pub(crate) fn seconds(elapsed: Duration) -> f64 {
    (elapsed.as_millis() as f64) / 1000.0
}

fn to_json(outcome: &Outcome) -> String {
    serde_json::to_string(outcome).unwrap_or_else(|err| {
        format!(
            "{{\"status\":\"error\",\"output\":\"\",\"error\":\"cannot encode the result: {err}\"}}"
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn outcome(output: &str) -> Outcome {
        let mut stdout = Capture::new(50 * 1024, 60);
        stdout.push(output.as_bytes());
        Outcome {
            status: Status::Success,
            output: stdout.render("stdout"),
            stdout: Some(stdout),
            error: None,
            stderr: None,
            tool_calls_made: 2,
            duration_seconds: 0.25,
            sandbox_note: None,
        }
    }

    #[test]
    fn fields_follow_the_spec() {
        let v: serde_json::Value = serde_json::from_str(&outcome("hi\n").render(0)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"status": "success", "output": "hi\n", "tool_calls_made": 2, "duration_seconds": 0.25})
        );
    }

    #[test]
    fn long_output_is_cut_so_the_json_fits_the_limit() {
        let long = "line with \"quotes\" and \\ escapes\n".repeat(1000);
        let text = outcome(&long).render(10_000);
        assert!(text.chars().count() <= 10_000, "{}", text.len());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let out = v["output"].as_str().unwrap();
        assert!(out.starts_with("line with"));
        let marker = format!("bytes of stdout omitted; it was {} bytes", long.len());
        assert!(out.contains(&marker), "{out}");
        assert!(out.ends_with("escapes\n"));
        assert_eq!(v["tool_calls_made"], 2);
    }
}
