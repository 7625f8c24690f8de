//! What a front end asks of a session: the [`Op`]s it submits. Together with
//! [`crate::Event`] (what the session reports) this is the whole vocabulary
//! between a front end and the runtime, as JSON: `{"type": "user_turn",
//! "text": "…"}` in, events out. Its JSON Schema is in `docs/protocol/`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The id the runtime gives one submitted [`Op`], so a front end can tell
/// its own operations apart (`sub_` + creation time + random bits).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SubmissionId(pub String);

impl std::fmt::Display for SubmissionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a person answered an approval request (`approval.requested`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    Once,
    /// Run this call and calls matching its rule for the rest of the session.
    Session,
    /// Like `session`, and save the rule so later sessions allow it too.
    Always,
    /// Do not run it (the op's `message`, if any, goes to the model).
    Deny,
}

impl ApprovalDecision {
    /// The word on the wire, in events and in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Always => "always",
            Self::Deny => "deny",
        }
    }
}

/// How a person answered an MCP server's request for input
/// (`elicitation.requested`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    /// The input is in the op's `content`.
    Accept,
    /// Refused; the tool goes on without it.
    Decline,
    /// Dismissed; the tool should stop.
    Cancel,
}

impl ElicitationAction {
    /// The word on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// What a rewind puts back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewindScope {
    /// Files and conversation.
    Both,
    /// Only the files.
    FilesOnly,
    /// Only the conversation.
    ConversationOnly,
}

impl RewindScope {
    /// Whether the files are put back.
    pub fn files(self) -> bool {
        self != Self::ConversationOnly
    }

    /// Whether the conversation is put back.
    pub fn conversation(self) -> bool {
        self != Self::FilesOnly
    }
}

/// An operation a front end submits to a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Runs a turn with this user input (refused while one runs).
    UserTurn {
        text: String,
        /// Images attached to the text (a screenshot, a photo of a
        /// whiteboard), sent with it to a model that takes images; refused
        /// for a text-only model. Each at most 5 MB decoded, 8 per turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<crate::ImageData>,
    },
    /// Stops the running turn (and its synchronous subagents).
    Interrupt {},
    /// Compacts the conversation now (refused while a turn runs).
    Compact {},
    /// Hands `text` to the model at the running turn's next tool boundary
    /// (refused when no turn runs: send it as a turn instead).
    Steer { text: String },
    /// Cancels the running subagent `agent_id` and its subtree.
    CancelAgent { agent_id: String },
    /// Queues `message` for the running subagent `agent_id`'s next tool
    /// boundary (and, with `subtree`, for each running agent below it); the
    /// receipts come back as `agent.message` events: `queued`, then
    /// `delivered` or `missed`.
    AgentSend {
        agent_id: String,
        message: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        subtree: bool,
    },
    /// Starts a new turn with `message` in the finished or stopped subagent
    /// `agent_id`'s own session (its earlier context intact), as a
    /// background agent whose result reaches the top-level agent.
    AgentFollowup { agent_id: String, message: String },
    /// Rewinds the session to before its user turn `turn` (refused while a
    /// turn runs).
    Rewind { turn: u32, scope: RewindScope },
    /// Answers the open `clarify` question `request_id`.
    ClarifyAnswer { request_id: String, answer: String },
    /// Answers the approval request `request_id`; `message` goes to the
    /// model with a denial.
    ApprovalDecision {
        request_id: String,
        decision: ApprovalDecision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Answers the elicitation `request_id`: `accept` with `content` (an
    /// object fitting the request's schema), `decline` or `cancel`.
    ElicitationAnswer {
        request_id: String,
        action: ElicitationAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Value>,
    },
    /// Ends the session: a running turn is interrupted, the memory flush
    /// runs (unless `skip_memory_flush`: leaving on a signal, when nothing
    /// should hold the exit up), background agents are suspended (a resume
    /// restarts them), the session is marked ended, its lease released and
    /// its event stream closed.
    Shutdown {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        skip_memory_flush: bool,
    },
}

impl Op {
    /// The operation's `type` on the wire (`user_turn`, `interrupt`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UserTurn { .. } => "user_turn",
            Self::Interrupt {} => "interrupt",
            Self::Compact {} => "compact",
            Self::Steer { .. } => "steer",
            Self::CancelAgent { .. } => "cancel_agent",
            Self::AgentSend { .. } => "agent_send",
            Self::AgentFollowup { .. } => "agent_followup",
            Self::Rewind { .. } => "rewind",
            Self::ClarifyAnswer { .. } => "clarify_answer",
            Self::ApprovalDecision { .. } => "approval_decision",
            Self::ElicitationAnswer { .. } => "elicitation_answer",
            Self::Shutdown { .. } => "shutdown",
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One of each variant, with every optional field set.
    pub(crate) fn every_op() -> Vec<Op> {
        vec![
            Op::UserTurn {
                text: "hi".into(),
                images: vec![crate::ImageData::new("image/png", "iVBORw0KGgo=")],
            },
            Op::Interrupt {},
            Op::Compact {},
            Op::Steer {
                text: "stop".into(),
            },
            Op::CancelAgent {
                agent_id: "agent_1".into(),
            },
            Op::Rewind {
                turn: 2,
                scope: RewindScope::FilesOnly,
            },
            Op::ClarifyAnswer {
                request_id: "q1".into(),
                answer: "yes".into(),
            },
            Op::ApprovalDecision {
                request_id: "apr_1".into(),
                decision: ApprovalDecision::Deny,
                message: Some("not now".into()),
            },
            Op::ElicitationAnswer {
                request_id: "eli_1".into(),
                action: ElicitationAction::Accept,
                content: Some(json!({"name": "x"})),
            },
            Op::Shutdown {
                skip_memory_flush: true,
            },
        ]
    }

    #[test]
    fn every_op_round_trips_through_json() {
        for op in every_op() {
            let text = serde_json::to_string(&op).unwrap();
            let back: Op = serde_json::from_str(&text).unwrap();
            assert_eq!(back, op, "{text}");
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(json["type"], op.kind(), "{text}");
        }
    }

    #[test]
    fn ops_have_their_documented_shape() {
        assert_eq!(
            serde_json::to_value(Op::Rewind {
                turn: 3,
                scope: RewindScope::ConversationOnly
            })
            .unwrap(),
            json!({"type": "rewind", "turn": 3, "scope": "conversation_only"})
        );
        let op: Op = serde_json::from_value(json!({
            "type": "approval_decision", "request_id": "apr_1", "decision": "always"
        }))
        .unwrap();
        assert_eq!(
            op,
            Op::ApprovalDecision {
                request_id: "apr_1".into(),
                decision: ApprovalDecision::Always,
                message: None
            }
        );
    }

    #[test]
    fn bad_ops_are_refused_with_what_is_wrong() {
        for (bad, says) in [
            (json!({"type": "launch"}), "unknown variant"),
            (json!({"type": "user_turn"}), "missing field `text`"),
            (
                json!({"type": "approval_decision", "request_id": "a", "decision": "maybe"}),
                "unknown variant `maybe`",
            ),
            (json!({"type": "interrupt", "extra": 1}), "unknown field"),
            (json!({"text": "no type"}), "missing field `type`"),
        ] {
            let err = serde_json::from_value::<Op>(bad.clone())
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod schema {
    //! The JSON Schemas of the protocol, checked into `docs/protocol/` so a
    //! front end in another language can be written from them. A change to
    //! `Op` or `Event` that changes its schema fails here until the files
    //! are regenerated with `HERALD_WRITE_SCHEMA=1 cargo test -p herald-protocol`.

    use std::path::PathBuf;

    fn check(name: &str, schema: schemars::Schema) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/protocol")
            .join(name);
        let text = format!("{}\n", serde_json::to_string_pretty(&schema).unwrap());
        if std::env::var_os("HERALD_WRITE_SCHEMA").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        let stored = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            stored == text,
            "{} is out of date: regenerate it with `HERALD_WRITE_SCHEMA=1 cargo test -p herald-protocol`",
            path.display()
        );
    }

    #[test]
    fn the_checked_in_schemas_match_the_types() {
        check("op.schema.json", schemars::schema_for!(crate::Op));
        check("event.schema.json", schemars::schema_for!(crate::Event));
    }
}
