//! `clarify` through the session runtime: the question goes out as a
//! `clarify.requested` event and the answer comes back as an operation, so
//! any front end (terminal, HTTP client, another agent) can answer it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use herald_knowledge::{Clarifier, ClarifyError, ClarifyRequest, TypedReply, interpret_reply};
use herald_protocol::EventKind;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::EventSink;

/// The questions of one session waiting for an answer, by request id.
#[derive(Default)]
pub(crate) struct OpenQuestions {
    waiting: Mutex<HashMap<String, Waiting>>,
    next: std::sync::atomic::AtomicU64,
}

struct Waiting {
    request: ClarifyRequest,
    /// The agent that asks.
    agent_id: String,
    /// Order of asking, for listing oldest first.
    n: u64,
    answer: oneshot::Sender<String>,
}

/// A clarify question waiting for an answer, as front ends list it (the
/// same fields as its `clarify.requested` event): a front end that joins
/// after the event went out shows it from this.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingQuestion {
    pub request_id: String,
    /// The agent that asks.
    pub agent_id: String,
    pub question: String,
    /// The choices offered; the answer may name one by number or text.
    pub choices: Vec<String>,
    /// Whether an answer outside the choices is accepted.
    pub allow_freetext: bool,
}

impl OpenQuestions {
    /// Answers question `request_id` with `answer` (a choice number, a
    /// choice's text, or free text where allowed). Errors when no such
    /// question is open or the answer does not fit it; the question then
    /// stays open.
    pub(crate) fn answer(&self, request_id: &str, answer: &str) -> Result<(), String> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(open) = waiting.get(request_id) else {
            return Err(format!("no open question '{request_id}'"));
        };
        let text = match interpret_reply(&open.request, answer) {
            TypedReply::Answer(text) => text,
            TypedReply::AskFreeText => {
                return Err("that picks \"Other\": send the answer's text instead".to_owned());
            }
            TypedReply::Invalid(hint) => return Err(format!("not a valid answer: {hint}")),
        };
        if let Some(open) = waiting.remove(request_id) {
            let _ = open.answer.send(text);
        }
        Ok(())
    }

    /// The ids of the questions waiting now.
    pub(crate) fn open_ids(&self) -> Vec<String> {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.keys().cloned().collect()
    }

    /// The questions waiting now, oldest first.
    pub(crate) fn pending(&self) -> Vec<PendingQuestion> {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let mut open: Vec<(u64, PendingQuestion)> = waiting
            .iter()
            .map(|(id, w)| {
                (
                    w.n,
                    PendingQuestion {
                        request_id: id.clone(),
                        agent_id: w.agent_id.clone(),
                        question: w.request.question.clone(),
                        choices: w.request.choices.clone(),
                        allow_freetext: w.request.allow_freetext,
                    },
                )
            })
            .collect();
        open.sort_by_key(|(n, _)| *n);
        open.into_iter().map(|(_, q)| q).collect()
    }

    fn open(
        &self,
        request: &ClarifyRequest,
        agent_id: &str,
    ) -> (String, oneshot::Receiver<String>) {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("clr_{n}");
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                id.clone(),
                Waiting {
                    request: request.clone(),
                    agent_id: agent_id.to_owned(),
                    n,
                    answer: tx,
                },
            );
        (id, rx)
    }

    fn close(&self, id: &str) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// The [`Clarifier`] of a runtime session whose front end has a person to
/// ask.
pub(crate) struct EventClarifier {
    pub(crate) questions: Arc<OpenQuestions>,
    pub(crate) events: EventSink,
}

impl Clarifier for EventClarifier {
    fn ask<'a>(
        &'a self,
        request: &'a ClarifyRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, ClarifyError>> {
        Box::pin(async move {
            let (id, answer) = self.questions.open(request, self.events.agent_id());
            self.events.emit(EventKind::ClarifyRequested {
                request_id: id.clone(),
                question: request.question.clone(),
                choices: request.choices.clone(),
                allow_freetext: request.allow_freetext,
            });
            let result = tokio::select! {
                answer = answer => answer.map_err(|_| ClarifyError::Closed),
                () = cancel.cancelled() => Err(ClarifyError::Interrupted),
            };
            self.questions.close(&id);
            result
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use herald_protocol::Event;

    fn request() -> ClarifyRequest {
        ClarifyRequest {
            question: "Which?".into(),
            choices: vec!["red".into(), "blue".into()],
            allow_freetext: false,
        }
    }

    #[tokio::test]
    async fn a_question_is_an_event_and_its_answer_an_operation() {
        let seen = Arc::new(Mutex::new(Vec::<Event>::new()));
        let out = Arc::clone(&seen);
        let questions = Arc::new(OpenQuestions::default());
        let clarifier = EventClarifier {
            questions: Arc::clone(&questions),
            events: EventSink::new("s", "root", move |e| out.lock().unwrap().push(e)),
        };
        let cancel = CancellationToken::new();
        let req = request();
        let ask = clarifier.ask(&req, &cancel);
        tokio::pin!(ask);
        // Not answered yet.
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(20), &mut ask)
                .await
                .is_err()
        );
        let id = match &seen.lock().unwrap()[0].kind {
            EventKind::ClarifyRequested { request_id, .. } => request_id.clone(),
            other => panic!("{other:?}"),
        };
        assert!(questions.answer("clr_99", "1").is_err());
        let listed = vec![PendingQuestion {
            request_id: id.clone(),
            agent_id: "root".into(),
            question: "Which?".into(),
            choices: vec!["red".into(), "blue".into()],
            allow_freetext: false,
        }];
        assert_eq!(questions.pending(), listed);
        let bad = questions.answer(&id, "7").unwrap_err();
        assert!(bad.contains("not a valid answer"), "{bad}");
        // A refused answer leaves the question listed as it was.
        assert_eq!(questions.pending(), listed);
        questions.answer(&id, "2").unwrap();
        assert_eq!(ask.await.unwrap(), "The user chose option 2: blue");
        assert!(questions.open_ids().is_empty());
        assert!(questions.pending().is_empty());
    }

    #[test]
    fn pending_questions_are_listed_oldest_first() {
        let questions = OpenQuestions::default();
        let mut ids = Vec::new();
        let mut waiting = Vec::new();
        for n in 0..12 {
            let mut req = request();
            req.question = format!("question {n}");
            let (id, rx) = questions.open(&req, "root");
            ids.push(id);
            waiting.push(rx);
        }
        let listed: Vec<String> = questions
            .pending()
            .into_iter()
            .map(|q| q.request_id)
            .collect();
        assert_eq!(listed, ids);
    }

    #[tokio::test]
    async fn an_interrupt_closes_the_question() {
        let questions = Arc::new(OpenQuestions::default());
        let clarifier = EventClarifier {
            questions: Arc::clone(&questions),
            events: EventSink::discard(),
        };
        let cancel = CancellationToken::new();
        cancel.cancel();
        let req = request();
        assert_eq!(
            clarifier.ask(&req, &cancel).await,
            Err(ClarifyError::Interrupted)
        );
        assert!(questions.open_ids().is_empty());
    }
}
