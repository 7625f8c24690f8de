//! The approval requests of one session waiting for an answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::Serialize;
use tokio::sync::oneshot;

/// How a human answered an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this call.
    Once,
    /// Run this call and calls matching its rule for the rest of the session.
    Session,
    /// Like `Session`, and save the rule so later sessions allow it too.
    Always,
    /// Do not run it; `message` (if any) is passed to the model.
    Deny { message: Option<String> },
}

impl ApprovalAnswer {
    /// Parses `once`, `session`, `always` or `deny` (the words front ends
    /// and the HTTP API send); `message` goes with a denial.
    pub fn parse(decision: &str, message: Option<String>) -> Result<Self, String> {
        match decision.trim().to_ascii_lowercase().as_str() {
            "once" | "yes" | "y" | "allow" => Ok(Self::Once),
            "session" | "s" => Ok(Self::Session),
            "always" | "a" => Ok(Self::Always),
            "deny" | "no" | "n" => Ok(Self::Deny { message }),
            other => Err(format!(
                "unknown approval decision '{other}'; answer once, session, always or deny"
            )),
        }
    }

    /// The answer an [`herald_protocol::Op::ApprovalDecision`] carries.
    pub fn from_decision(
        decision: herald_protocol::ApprovalDecision,
        message: Option<String>,
    ) -> Self {
        use herald_protocol::ApprovalDecision as Decision;
        match decision {
            Decision::Once => Self::Once,
            Decision::Session => Self::Session,
            Decision::Always => Self::Always,
            Decision::Deny => Self::Deny { message },
        }
    }

    /// The operation a front end submits to give this answer to request
    /// `request_id`.
    pub fn into_op(self, request_id: &str) -> herald_protocol::Op {
        let decision = self.decision();
        herald_protocol::Op::ApprovalDecision {
            request_id: request_id.to_owned(),
            decision,
            message: match self {
                Self::Deny { message } => message,
                Self::Once | Self::Session | Self::Always => None,
            },
        }
    }

    /// The decision without its message, as events carry it.
    pub fn decision(&self) -> herald_protocol::ApprovalDecision {
        use herald_protocol::ApprovalDecision as Decision;
        match self {
            Self::Once => Decision::Once,
            Self::Session => Decision::Session,
            Self::Always => Decision::Always,
            Self::Deny { .. } => Decision::Deny,
        }
    }

    /// The word used in events and the audit log.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Always => "always",
            Self::Deny { .. } => "deny",
        }
    }
}

/// A request waiting for an answer, as front ends list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingApproval {
    pub request_id: String,
    pub agent_id: String,
    pub tool: String,
    pub arguments: String,
    pub reason: String,
    pub rule: Option<String>,
    pub allow_rule: Option<String>,
}

struct Waiting {
    request: PendingApproval,
    answer: oneshot::Sender<ApprovalAnswer>,
}

/// The open requests of a session, by id.
#[derive(Default)]
pub(crate) struct Approvals {
    waiting: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

impl Approvals {
    /// Opens a request; the receiver gets the answer.
    pub(crate) fn open(
        &self,
        mut request: PendingApproval,
    ) -> (PendingApproval, oneshot::Receiver<ApprovalAnswer>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        request.request_id = format!("apr_{n}");
        let (tx, rx) = oneshot::channel();
        self.lock().insert(
            request.request_id.clone(),
            Waiting {
                request: request.clone(),
                answer: tx,
            },
        );
        (request, rx)
    }

    /// Answers request `id`; an error names what is open instead.
    pub(crate) fn answer(&self, id: &str, answer: ApprovalAnswer) -> Result<(), String> {
        let mut waiting = self.lock();
        let Some(open) = waiting.remove(id) else {
            let mut open: Vec<&str> = waiting.keys().map(String::as_str).collect();
            open.sort_unstable();
            return Err(if open.is_empty() {
                format!("no open approval request '{id}' (none is waiting)")
            } else {
                format!(
                    "no open approval request '{id}'; waiting: {}",
                    open.join(", ")
                )
            });
        };
        let _ = open.answer.send(answer);
        Ok(())
    }

    /// Closes request `id` without an answer (the call was interrupted).
    pub(crate) fn close(&self, id: &str) {
        self.lock().remove(id);
    }

    /// The requests waiting now, oldest first.
    pub(crate) fn pending(&self) -> Vec<PendingApproval> {
        let mut list: Vec<PendingApproval> =
            self.lock().values().map(|w| w.request.clone()).collect();
        list.sort_by_key(|r| {
            r.request_id
                .trim_start_matches("apr_")
                .parse::<u64>()
                .unwrap_or(u64::MAX)
        });
        list
    }

    /// Whether agent `agent_id` waits for an answer.
    pub(crate) fn is_waiting(&self, agent_id: &str) -> bool {
        self.lock().values().any(|w| w.request.agent_id == agent_id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn request(agent: &str) -> PendingApproval {
        PendingApproval {
            request_id: String::new(),
            agent_id: agent.to_owned(),
            tool: "terminal".to_owned(),
            arguments: "{}".to_owned(),
            reason: "r".to_owned(),
            rule: None,
            allow_rule: None,
        }
    }

    #[tokio::test]
    async fn an_answer_reaches_the_waiting_call_once() {
        let approvals = Approvals::default();
        let (req, rx) = approvals.open(request("a1"));
        assert!(approvals.is_waiting("a1"));
        assert!(!approvals.is_waiting("root"));
        let err = approvals.answer("apr_9", ApprovalAnswer::Once).unwrap_err();
        assert!(err.contains(&req.request_id), "{err}");
        approvals
            .answer(&req.request_id, ApprovalAnswer::Session)
            .unwrap();
        assert_eq!(rx.await.unwrap(), ApprovalAnswer::Session);
        assert!(
            approvals
                .answer(&req.request_id, ApprovalAnswer::Once)
                .is_err()
        );
        assert!(approvals.pending().is_empty());
    }

    #[test]
    fn decisions_parse_and_unknown_words_are_refused() {
        assert_eq!(
            ApprovalAnswer::parse("Once", None),
            Ok(ApprovalAnswer::Once)
        );
        assert_eq!(
            ApprovalAnswer::parse("deny", Some("no".into())),
            Ok(ApprovalAnswer::Deny {
                message: Some("no".into())
            })
        );
        assert!(ApprovalAnswer::parse("maybe", None).is_err());
    }
}
