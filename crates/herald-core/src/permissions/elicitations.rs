//! The elicitations of one session waiting for an answer: an MCP server
//! asked the user for input during a tool call (`elicitation.requested`),
//! and the call waits until a front end answers (`ElicitationAnswer`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use herald_tools::{ElicitAction, ElicitAnswer};
use serde::Serialize;
use tokio::sync::oneshot;

/// An elicitation waiting for an answer, as front ends list it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingElicitation {
    pub request_id: String,
    /// The agent whose tool call waits.
    pub agent_id: String,
    /// The MCP server that asks.
    pub server: String,
    pub message: String,
    /// JSON schema of the answer's content.
    pub schema: serde_json::Value,
}

struct Waiting {
    request: PendingElicitation,
    answer: oneshot::Sender<ElicitAnswer>,
}

/// The open elicitations of a session, by id.
#[derive(Default)]
pub(crate) struct Elicitations {
    waiting: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

impl Elicitations {
    /// A new request id (`eli_N`).
    pub(crate) fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!("eli_{n}")
    }

    /// Opens `request` (whose id is set); the receiver gets the answer.
    pub(crate) fn open(&self, request: PendingElicitation) -> oneshot::Receiver<ElicitAnswer> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(
            request.request_id.clone(),
            Waiting {
                request,
                answer: tx,
            },
        );
        rx
    }

    /// Answers request `id`. An accepted answer's content must fit the
    /// request's schema (an object with every required property, of the
    /// declared types); otherwise the request stays open and the error
    /// says what is wrong. An unknown id names the open ones.
    pub(crate) fn answer(&self, id: &str, answer: ElicitAnswer) -> Result<(), String> {
        let mut waiting = self.lock();
        let Some(open) = waiting.get(id) else {
            let mut open: Vec<&str> = waiting.keys().map(String::as_str).collect();
            open.sort_unstable();
            return Err(if open.is_empty() {
                format!("no open elicitation '{id}' (none is waiting)")
            } else {
                format!("no open elicitation '{id}'; waiting: {}", open.join(", "))
            });
        };
        let answer = match answer.action {
            ElicitAction::Accept => {
                let content = answer
                    .content
                    .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
                herald_tools::validate_args(
                    &format!("the answer to {id}"),
                    &open.request.schema,
                    &content,
                )?;
                ElicitAnswer {
                    action: ElicitAction::Accept,
                    content: Some(content),
                }
            }
            // Only an acceptance carries content.
            action => ElicitAnswer {
                action,
                content: None,
            },
        };
        if let Some(open) = waiting.remove(id) {
            let _ = open.answer.send(answer);
        }
        Ok(())
    }

    /// Closes request `id` without an answer (the call was interrupted).
    pub(crate) fn close(&self, id: &str) {
        self.lock().remove(id);
    }

    /// The requests waiting now, oldest first.
    pub(crate) fn pending(&self) -> Vec<PendingElicitation> {
        let mut list: Vec<PendingElicitation> =
            self.lock().values().map(|w| w.request.clone()).collect();
        list.sort_by_key(|r| {
            r.request_id
                .trim_start_matches("eli_")
                .parse::<u64>()
                .unwrap_or(u64::MAX)
        });
        list
    }

    /// Whether agent `agent_id` waits for an answer.
    pub(crate) fn is_waiting(&self, agent_id: &str) -> bool {
        self.lock().values().any(|w| w.request.agent_id == agent_id)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(elicitations: &Elicitations) -> PendingElicitation {
        PendingElicitation {
            request_id: elicitations.next_id(),
            agent_id: "root".to_owned(),
            server: "ev".to_owned(),
            message: "who are you?".to_owned(),
            schema: json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name"]
            }),
        }
    }

    #[tokio::test]
    async fn an_accepted_answer_must_fit_the_schema() {
        let elicitations = Elicitations::default();
        let req = request(&elicitations);
        let id = req.request_id.clone();
        assert_eq!(id, "eli_1");
        let rx = elicitations.open(req);
        assert!(elicitations.is_waiting("root"));
        let accept = |content| ElicitAnswer {
            action: ElicitAction::Accept,
            content: Some(content),
        };
        let missing = elicitations
            .answer(&id, accept(json!({"age": 3})))
            .unwrap_err();
        assert!(
            missing.contains("missing required parameter 'name'"),
            "{missing}"
        );
        let wrong = elicitations
            .answer(&id, accept(json!({"name": "a", "age": "old"})))
            .unwrap_err();
        assert!(wrong.contains("'age' must be integer"), "{wrong}");
        assert_eq!(elicitations.pending().len(), 1, "still open");
        let unknown = elicitations
            .answer("eli_9", ElicitAnswer::decline())
            .unwrap_err();
        assert!(unknown.contains("waiting: eli_1"), "{unknown}");
        elicitations
            .answer(&id, accept(json!({"name": "Ada"})))
            .unwrap();
        let got = rx.await.unwrap();
        assert_eq!(got.action, ElicitAction::Accept);
        assert_eq!(got.content, Some(json!({"name": "Ada"})));
        assert!(elicitations.pending().is_empty());
        assert!(!elicitations.is_waiting("root"));
    }

    #[tokio::test]
    async fn a_decline_drops_any_content() {
        let elicitations = Elicitations::default();
        let req = request(&elicitations);
        let id = req.request_id.clone();
        let rx = elicitations.open(req);
        elicitations
            .answer(
                &id,
                ElicitAnswer {
                    action: ElicitAction::Decline,
                    content: Some(json!({"name": "x"})),
                },
            )
            .unwrap();
        assert_eq!(rx.await.unwrap(), ElicitAnswer::decline());
    }
}
