//! The statuses, reasons and outcomes events and stored records carry, as
//! enums with one word each: the same word in JSON and in SQLite (with the
//! `sql` feature, as `rusqlite` values).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Implements `as_str`, `parse`, `Display` and (with `sql`) `ToSql`/`FromSql`
/// for a field-less enum from its variants' words.
macro_rules! words {
    ($name:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$(Self::$variant),+];

            /// The word used in events and in the store.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $word),+
                }
            }

            /// The value whose word is `word`.
            pub fn parse(word: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == word)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        #[cfg(feature = "sql")]
        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        #[cfg(feature = "sql")]
        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let word = value.as_str()?;
                Self::parse(word).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(
                        format!("'{word}' is not a {}", stringify!($name)).into(),
                    )
                })
            }
        }
    };
}

/// Why an agent's turn ended (`run.completed`, `subagent.completed`, the
/// agent journal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// The model answered without further tool calls.
    Completed,
    /// `max_iterations` model requests were made.
    MaxIterations,
    /// Stopped by the user, a signal or a cancelled parent.
    Interrupted,
    /// A fatal error (the provider failed past its retries, a hook blocked
    /// the prompt).
    Error,
    /// The delegation tree's token or cost budget ran out.
    Budget,
    /// A subagent ran past its time limit.
    Timeout,
}

words!(ExitReason {
    Completed => "completed",
    MaxIterations => "max_iterations",
    Interrupted => "interrupted",
    Error => "error",
    Budget => "budget",
    Timeout => "timeout",
});

/// Where a message sent to a running agent (`agent_send`) is: the
/// receipt's state, reported in `agent.message` events and `agent_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageDelivery {
    /// Waiting for the agent's next tool boundary.
    Queued,
    /// Handed to the agent's model with a tool result.
    Delivered,
    /// The agent finished (or stopped) before a tool boundary: it never saw it.
    Missed,
}

words!(MessageDelivery {
    Queued => "queued",
    Delivered => "delivered",
    Missed => "missed",
});

/// Where a subagent is (the agent journal, `subagent.completed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Journaled, waiting for a slot.
    Queued,
    Running,
    /// Running, and waiting for a person's answer (an approval, an MCP
    /// server's form). Live only: never stored.
    AwaitingApproval,
    /// A background agent stopped with its session; a resume restarts it.
    Suspended,
    /// It finished its task.
    Completed,
    /// It finished without doing its task (the iteration limit, a budget).
    Failed,
    /// A fatal error ended it.
    Error,
    /// It ran past its time limit.
    Timeout,
    /// Its parent's turn was stopped, or its process went away.
    Interrupted,
    /// Cancelled on its own (`cancel_agent`, `herald agents cancel`).
    Cancelled,
}

words!(AgentStatus {
    Queued => "queued",
    Running => "running",
    AwaitingApproval => "awaiting_approval",
    Suspended => "suspended",
    Completed => "completed",
    Failed => "failed",
    Error => "error",
    Timeout => "timeout",
    Interrupted => "interrupted",
    Cancelled => "cancelled",
});

impl AgentStatus {
    /// Whether the agent has ended (it will not run again by itself).
    pub fn is_finished(self) -> bool {
        !matches!(
            self,
            Self::Queued | Self::Running | Self::AwaitingApproval | Self::Suspended
        )
    }
}

/// Why a memory flush ran (`memory.flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlushReason {
    /// A compaction is about to summarise the middle of the conversation.
    Compaction,
    /// The session is ending.
    SessionEnd,
    /// A later start of herald runs the end-of-session flush a session
    /// still owed (it timed out, was skipped or interrupted, or the process
    /// was killed before it).
    Deferred,
}

words!(FlushReason {
    Compaction => "compaction",
    SessionEnd => "session_end",
    Deferred => "deferred",
});

/// How a memory flush ended (`memory.flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlushStatus {
    /// The model replied without (more) tool calls.
    Done,
    /// The session's or turn's token was cancelled (Ctrl+C, a signal).
    Interrupted,
    /// The deadline passed first.
    Timeout,
    /// A request or the store failed.
    Failed,
}

words!(FlushStatus {
    Done => "done",
    Interrupted => "interrupted",
    Timeout => "timeout",
    Failed => "failed",
});

/// When a hook runs (`[[hooks]] event`, `hook.ran`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// A session was opened (new or resumed).
    SessionStart,
    /// The user sent a prompt; before it reaches the model.
    UserPrompt,
    /// A tool call is about to run.
    PreTool,
    /// A tool call finished.
    PostTool,
    /// A subagent is about to start.
    SubagentStart,
    /// A subagent finished.
    SubagentStop,
    /// The conversation is about to be compacted.
    PreCompact,
    /// The session ends.
    SessionEnd,
    /// Something needs the user's attention: an approval is needed, or a
    /// turn is done.
    Notification,
    /// A file the session read or edited was changed outside it.
    FileChanged,
}

words!(HookEvent {
    SessionStart => "session_start",
    UserPrompt => "user_prompt",
    PreTool => "pre_tool",
    PostTool => "post_tool",
    SubagentStart => "subagent_start",
    SubagentStop => "subagent_stop",
    PreCompact => "pre_compact",
    SessionEnd => "session_end",
    Notification => "notification",
    FileChanged => "file_changed",
});

/// What became of one hook command (`hook.ran`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// It ran and did not block.
    Ok,
    /// It blocked what the event was about.
    Blocked,
    /// It failed (another exit code, bad JSON, not started): ignored.
    Error,
    /// It ran past its timeout and was killed: ignored.
    Timeout,
}

words!(HookOutcome {
    Ok => "ok",
    Blocked => "blocked",
    Error => "error",
    Timeout => "timeout",
});

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The word of each value is its JSON string and parses back.
    fn check<T>(all: &[T])
    where
        T: Copy + PartialEq + std::fmt::Debug + Serialize + for<'de> Deserialize<'de>,
        T: std::fmt::Display,
    {
        for value in all {
            let json = serde_json::to_value(value).unwrap();
            assert_eq!(json, serde_json::Value::String(value.to_string()));
            let back: T = serde_json::from_value(json).unwrap();
            assert_eq!(&back, value);
        }
    }

    #[test]
    fn every_word_is_its_json_string_and_parses_back() {
        check(ExitReason::ALL);
        check(AgentStatus::ALL);
        check(FlushReason::ALL);
        check(FlushStatus::ALL);
        check(HookEvent::ALL);
        check(HookOutcome::ALL);
        assert_eq!(AgentStatus::parse("nope"), None);
        assert!(AgentStatus::Cancelled.is_finished());
        assert!(!AgentStatus::Suspended.is_finished());
    }
}

/// Where one run of a scheduled job is (the job ledger, `herald cron runs`).
/// `claimed` and `running` are open; the rest are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobRunState {
    /// A scheduler took the slot; the run has not started its session.
    Claimed,
    /// Its session runs.
    Running,
    /// The turn ended normally.
    Completed,
    /// The turn ended with an error, an interrupt, a spent budget or a
    /// refused start.
    Failed,
    /// Its scheduler died while it was open: whether it ran is not known,
    /// and it is not run again on its own.
    Unknown,
    /// The job's configuration cannot work (no key, unknown skill, its
    /// directory gone); no model request was made.
    Blocked,
    /// Not run: the job's previous run was still going (`overlap = skip`)
    /// or the slot was missed while no scheduler ran (`catch_up = skip`).
    Skipped,
}

words!(JobRunState {
    Claimed => "claimed",
    Running => "running",
    Completed => "completed",
    Failed => "failed",
    Unknown => "unknown",
    Blocked => "blocked",
    Skipped => "skipped",
});

impl JobRunState {
    /// Whether the run can still change (it is claimed or running).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Claimed | Self::Running)
    }
}

/// What started a run of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunTrigger {
    /// Its fire time came.
    Schedule,
    /// The one catch-up run for slots missed while no scheduler ran.
    CatchUp,
    /// `herald cron run-now`.
    Manual,
}

words!(RunTrigger {
    Schedule => "schedule",
    CatchUp => "catch_up",
    Manual => "manual",
});

/// What a scheduler does with fire times it missed (it was not running).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Run once for all of them, then keep to the schedule.
    Once,
    /// Record them skipped and wait for the next fire time.
    Skip,
}

words!(CatchUp {
    Once => "once",
    Skip => "skip",
});

/// What happens when a job's fire time comes while its previous run goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// The new slot is recorded skipped.
    Skip,
    /// The new slot waits and runs when the previous run ends.
    Queue,
}

words!(Overlap {
    Skip => "skip",
    Queue => "queue",
});

/// Whether a finished run's result reached the job's sinks (hook,
/// webhook, desktop notification), apart from how the run went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// The job has no sink.
    None,
    /// Not delivered yet (or to be retried).
    Pending,
    /// Every sink took it.
    Delivered,
    /// A sink refused it after its retries.
    Failed,
    /// Kept, not delivered: the reply began with `[SILENT]`, or was empty.
    Silent,
}

words!(DeliveryState {
    None => "none",
    Pending => "pending",
    Delivered => "delivered",
    Failed => "failed",
    Silent => "silent",
});
