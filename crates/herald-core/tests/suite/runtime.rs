//! The session runtime driven directly, as a front end would: operations in,
//! events out, against the scripted provider over loopback HTTP (whose
//! history checks run on every request).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use herald_core::runtime::{
    ClarifyPolicy, Op, OpenMode, RuntimeError, Session, SessionOptions, Subscription, open_session,
};
use herald_core::{Config, ExitReason, Overrides, Settings, StoreHandle};
use herald_protocol::{Event, EventKind, RunStatus};
use herald_testkit::{Reply, Script, ScriptedServer};
use serde_json::json;

struct Env {
    server: ScriptedServer,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    store: StoreHandle,
}

impl Env {
    async fn new(script: Script) -> Self {
        let server = ScriptedServer::start(script).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let store = StoreHandle::open(&home.path().join("state.db")).unwrap();
        Self {
            server,
            home,
            work,
            store,
        }
    }

    fn settings(&self) -> Settings {
        let env: HashMap<String, String> = self
            .server
            .provider_env(herald_testkit::Api::OpenAi)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let overrides = Overrides {
            cwd: Some(self.work.path().to_owned()),
            ..Overrides::default()
        };
        Settings::resolve(
            &Config::default(),
            &self.home.path().join("config.toml"),
            self.home.path().to_owned(),
            &env,
            &overrides,
        )
        .unwrap()
    }

    async fn open(&self, open: OpenMode, clarify: ClarifyPolicy) -> Result<Session, RuntimeError> {
        let mut options = SessionOptions::new(self.settings(), self.store.clone());
        options.open = open;
        options.clarify = clarify;
        // Spawned: front ends open sessions from their own tasks, so the
        // future must be `Send`.
        tokio::spawn(open_session(options)).await.unwrap()
    }
}

/// Events until (and with) the next `run.completed`.
async fn until_turn_end(sub: &mut Subscription) -> Vec<Arc<Event>> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), sub.next())
            .await
            .expect("no run.completed within 20 s")
            .expect("the stream ended before run.completed");
        let end = matches!(event.kind, EventKind::RunCompleted { .. });
        seen.push(event);
        if end {
            return seen;
        }
    }
}

fn seqs(events: &[Arc<Event>]) -> Vec<u64> {
    events.iter().filter_map(|e| e.seq).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn turns_stream_numbered_events_that_replay_from_any_point() {
    let env = Env::new(Script::new().responder(|view| {
        if view.turn == 0 {
            Reply::tool("terminal", json!({"command": "echo hi"}))
        } else {
            Reply::text(format!("answer {}", view.turn))
        }
    }))
    .await;
    let session = env
        .open(OpenMode::New, ClarifyPolicy::Unavailable)
        .await
        .unwrap();
    let mut live = session.events(Some(0));
    let first = session.run_turn("first question".into()).await.unwrap();
    assert_eq!(first.status, RunStatus::Completed);
    assert_eq!(first.final_response, "answer 1");
    assert!(first.usage.input > 0);
    let mut events = until_turn_end(&mut live).await;
    assert!(matches!(
        events[0].kind,
        EventKind::SessionStarted { resumed: false, .. }
    ));
    let second = session.run_turn("second question".into()).await.unwrap();
    assert_eq!(second.exit_reason, ExitReason::Completed);
    events.extend(until_turn_end(&mut live).await);
    let numbers = seqs(&events);
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    assert_eq!(numbers[0], 1);

    // A follower that saw up to event k gets exactly the rest, from the store.
    let k = numbers[numbers.len() / 2];
    let mut late = session.events(Some(k));
    let mut rest = Vec::new();
    while rest.len() < numbers.iter().filter(|&&n| n > k).count() {
        rest.push(late.next().await.unwrap());
    }
    let expected: Vec<u64> = numbers.iter().copied().filter(|&n| n > k).collect();
    assert_eq!(seqs(&rest), expected);
    assert_eq!(late.last_seq(), *numbers.last().unwrap());
    assert_eq!(session.last_seq(), *numbers.last().unwrap());

    // After the end the stream closes; the stored events stay replayable.
    session.shutdown().await;
    assert!(session.is_ended());
    assert!(matches!(
        session.start_turn("more".into()),
        Err(RuntimeError::Ended(_))
    ));
    let mut replay = session.events(Some(0));
    let mut all = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(5), replay.next())
        .await
        .unwrap()
    {
        all.push(event);
    }
    assert_eq!(seqs(&all), numbers);
    // The same from a process that does not hold the session.
    let mut stored = herald_core::runtime::replay(&env.store, session.id(), 0)
        .await
        .unwrap();
    let mut again = Vec::new();
    while let Some(event) = stored.next().await {
        again.push(event);
    }
    assert_eq!(seqs(&again), numbers);
    assert!(matches!(
        herald_core::runtime::replay(&env.store, "ses_nope", 0).await,
        Err(RuntimeError::UnknownSession(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_turn_refuses_another_and_interrupt_stops_it() {
    let env = Env::new(Script::new().responder(|view| match view.turn {
        0 => Reply::tool("terminal", json!({"command": "sleep 30"})),
        _ => Reply::text("done"),
    }))
    .await;
    let session = env
        .open(OpenMode::New, ClarifyPolicy::Unavailable)
        .await
        .unwrap();
    let mut sub = session.events(None);
    let turn = session.start_turn("sleep for a while".into()).unwrap();
    // Wait until the command runs.
    loop {
        let event = sub.next().await.unwrap();
        if matches!(event.kind, EventKind::ToolStarted { .. }) {
            break;
        }
    }
    assert!(session.is_busy());
    assert!(matches!(
        session.start_turn("another".into()),
        Err(RuntimeError::TurnRunning(_))
    ));
    assert!(matches!(
        session.start_turn("   ".into()),
        Err(RuntimeError::Invalid(_))
    ));
    let started = std::time::Instant::now();
    session.submit(Op::Interrupt {}).unwrap();
    let result = turn.finished().await.unwrap();
    assert_eq!(result.status, RunStatus::Interrupted);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!session.is_busy());
    // The session takes the next turn.
    let next = session.run_turn("go on".into()).await.unwrap();
    assert_eq!(next.final_response, "done");
    assert!(matches!(
        session.submit(Op::CancelAgent {
            agent_id: "ag_missing".into()
        }),
        Err(RuntimeError::UnknownRequest(_))
    ));
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn clarify_is_an_event_answered_by_an_operation() {
    let env = Env::new(Script::new().responder(|view| match view.turn {
        0 => Reply::tool(
            "clarify",
            json!({"question": "Which colour?", "choices": ["red", "blue"]}),
        ),
        _ => Reply::text("painted"),
    }))
    .await;
    let session = env.open(OpenMode::New, ClarifyPolicy::Ask).await.unwrap();
    let mut sub = session.events(None);
    let turn = session.start_turn("paint it".into()).unwrap();
    let request_id = loop {
        let event = sub.next().await.unwrap();
        if let EventKind::ClarifyRequested {
            request_id,
            question,
            choices,
            ..
        } = &event.kind
        {
            assert_eq!(question, "Which colour?");
            assert_eq!(choices, &["red", "blue"]);
            break request_id.clone();
        }
    };
    assert_eq!(session.open_questions(), std::slice::from_ref(&request_id));
    // A bad answer is refused and changes nothing; an unknown id is refused.
    assert!(
        session
            .submit(Op::ClarifyAnswer {
                request_id: request_id.to_string(),
                answer: "9".into()
            })
            .is_err()
    );
    assert!(
        session
            .submit(Op::ClarifyAnswer {
                request_id: "clr_nope".to_string(),
                answer: "1".into()
            })
            .is_err()
    );
    session
        .submit(Op::ClarifyAnswer {
            request_id: request_id.to_string(),
            answer: "2".into(),
        })
        .unwrap();
    let result = turn.finished().await.unwrap();
    assert_eq!(result.final_response, "painted");
    let last = env.server.requests().last().unwrap().body.clone();
    let tool_result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(tool_result.contains("option 2: blue"), "{tool_result}");
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_resume_fork_and_refuse_a_second_holder() {
    let env =
        Env::new(Script::new().responder(|view| {
            Reply::text(format!("reply {} to {}", view.turn, view.conversation))
        }))
        .await;
    let first = env
        .open(OpenMode::New, ClarifyPolicy::Unavailable)
        .await
        .unwrap();
    first
        .run_turn("remember the word kumquat".into())
        .await
        .unwrap();
    let id = first.id().to_owned();
    // Held by an open session: a second open of the same one is refused.
    assert!(matches!(
        env.open(OpenMode::Resume(id.clone()), ClarifyPolicy::Unavailable)
            .await,
        Err(RuntimeError::SessionInUse(_))
    ));
    // Forking does not need the lease: it copies.
    let fork = env
        .open(OpenMode::Fork(id.clone()), ClarifyPolicy::Unavailable)
        .await
        .unwrap();
    assert_ne!(fork.id(), id);
    fork.run_turn("and in the fork?".into()).await.unwrap();
    let last = env.server.requests().last().unwrap().body.clone();
    let text = last["messages"].to_string();
    assert!(
        text.contains("kumquat") && text.contains("in the fork"),
        "{text}"
    );
    fork.shutdown().await;
    first.shutdown().await;
    // The source did not get the fork's turn.
    let stored = env
        .store
        .call(move |s| s.load_messages(&id))
        .await
        .unwrap()
        .unwrap();
    assert!(
        stored
            .iter()
            .all(|m| !m.message.content.contains("in the fork"))
    );
    let again = env
        .open(
            OpenMode::Resume(first.id().to_owned()),
            ClarifyPolicy::Unavailable,
        )
        .await
        .unwrap();
    assert!(again.resumed());
    let mut sub = again.events(Some(0));
    // The resumed stream numbers on after the stored events.
    let mut highest = 0;
    loop {
        let event = sub.next().await.unwrap();
        if let EventKind::SessionStarted { resumed: true, .. } = event.kind {
            assert!(event.seq.unwrap() > highest, "{event:?}");
            break;
        }
        highest = highest.max(event.seq.unwrap_or(0));
    }
    again.shutdown().await;
    assert!(matches!(
        env.open(
            OpenMode::Resume("ses_nope".into()),
            ClarifyPolicy::Unavailable
        )
        .await,
        Err(RuntimeError::UnknownSession(_))
    ));
}

/// The ids a `delegate_task(background=true)` result dispatched.
fn dispatched_ids(view: &herald_testkit::RequestView) -> Vec<String> {
    view.messages
        .iter()
        .flat_map(|m| m.tool_results.iter())
        .find_map(|(_, content)| {
            let value: serde_json::Value =
                serde_json::from_str(content.split("\n\n").next()?).ok()?;
            (value["status"] == "dispatched").then(|| {
                value["agent_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            })
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_agent_awaiting_approval_says_so_and_runs_once_approved() {
    let env = Env::new(
        Script::new()
            .conversation(
                "bg asker",
                vec![
                    Reply::tool("terminal", json!({"command": "rm -rf child_dir"})),
                    Reply::text("child removed it"),
                ],
            )
            .responder(|view| match view.turn {
                0 => Reply::tool(
                    "delegate_task",
                    json!({"background": true, "tasks": [{"goal": "bg asker: remove child_dir"}]}),
                ),
                1 => Reply::tool(
                    "agent_wait",
                    json!({"agent_ids": dispatched_ids(view), "timeout_seconds": 30}),
                ),
                _ => Reply::text("all done"),
            }),
    )
    .await;
    std::fs::create_dir(env.work.path().join("child_dir")).unwrap();
    let mut options = SessionOptions::new(env.settings(), env.store.clone());
    options.approvals = herald_core::ApprovalMode::Ask;
    let session = tokio::spawn(open_session(options)).await.unwrap().unwrap();
    let mut live = session.events(None);
    let turn = session.start_turn("delegate the removal".into()).unwrap();
    let request = loop {
        let event = tokio::time::timeout(Duration::from_secs(20), live.next())
            .await
            .expect("no approval request within 20 s")
            .unwrap();
        if let EventKind::ApprovalRequested {
            request_id, tool, ..
        } = &event.kind
        {
            assert_eq!(tool, "terminal");
            assert_ne!(event.agent_id, "root", "the child asks");
            break (request_id.clone(), event.agent_id.clone());
        }
    };
    let (request_id, child) = request;
    let pending = session.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].agent_id, child);
    let status = session
        .agents()
        .into_iter()
        .find(|a| a.id == child)
        .unwrap()
        .status;
    assert_eq!(status, herald_protocol::AgentStatus::AwaitingApproval);
    assert!(env.work.path().join("child_dir").exists());
    // A wrong id is refused and changes nothing.
    assert!(matches!(
        session.submit(Op::ApprovalDecision {
            request_id: "apr_999".into(),
            decision: herald_protocol::ApprovalDecision::Once,
            message: None,
        }),
        Err(RuntimeError::UnknownRequest(_))
    ));
    assert_eq!(session.pending_approvals().len(), 1);
    session
        .submit(Op::ApprovalDecision {
            request_id,
            decision: herald_protocol::ApprovalDecision::Once,
            message: None,
        })
        .unwrap();
    let result = turn.finished().await.unwrap();
    assert_eq!(result.final_response, "all done");
    assert!(!env.work.path().join("child_dir").exists());
    assert!(session.pending_approvals().is_empty());
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_while_a_call_awaits_approval_denies_it_and_runs_nothing() {
    let env = Env::new(Script::new().responder(|view| match view.turn {
        0 => Reply::tool("terminal", json!({"command": "rm -rf keep_dir"})),
        _ => Reply::text("after the interrupt"),
    }))
    .await;
    std::fs::create_dir(env.work.path().join("keep_dir")).unwrap();
    let mut options = SessionOptions::new(env.settings(), env.store.clone());
    options.approvals = herald_core::ApprovalMode::Ask;
    let session = tokio::spawn(open_session(options)).await.unwrap().unwrap();
    let mut live = session.events(None);
    let turn = session.start_turn("remove keep_dir".into()).unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), live.next())
            .await
            .expect("no approval request within 20 s")
            .unwrap();
        if matches!(event.kind, EventKind::ApprovalRequested { .. }) {
            break;
        }
    }
    session.submit(Op::Interrupt {}).unwrap();
    let result = turn.finished().await.unwrap();
    assert_eq!(result.exit_reason, ExitReason::Interrupted);
    let resolved = loop {
        let event = live.next().await.unwrap();
        if let EventKind::ApprovalResolved { decision, by, .. } = &event.kind {
            break (*decision, *by);
        }
    };
    assert_eq!(
        resolved,
        (
            herald_protocol::ApprovalDecision::Deny,
            herald_protocol::ResolvedBy::Interrupt
        )
    );
    assert!(session.pending_approvals().is_empty());
    assert!(env.work.path().join("keep_dir").exists());
    let session_id = session.id().to_owned();
    session.shutdown().await;
    let log = env
        .store
        .call(move |s| s.load_decisions(Some(&session_id), 10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (log[0].decision.as_str(), log[0].decided_by.as_str()),
        ("deny", "interrupt")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn steering_reaches_the_model_at_the_next_tool_boundary() {
    let env = Env::new(Script::new().responder(|view| match view.turn {
        0 => Reply::tool("terminal", json!({"command": "sleep 1"})),
        _ => {
            let (_, result) = view.tool_results().last().cloned().unwrap_or_default();
            Reply::text(format!("saw: {result}"))
        }
    }))
    .await;
    let session = env
        .open(OpenMode::New, ClarifyPolicy::Unavailable)
        .await
        .unwrap();
    // Nothing runs: steering is refused and nothing is queued.
    assert!(matches!(
        session.submit(Op::Steer {
            text: "too early".into()
        }),
        Err(RuntimeError::Invalid(_))
    ));
    let mut sub = session.events(None);
    let turn = session.start_turn("sleep a bit".into()).unwrap();
    loop {
        let event = sub.next().await.unwrap();
        if matches!(event.kind, EventKind::ToolStarted { .. }) {
            break;
        }
    }
    session
        .submit(Op::Steer {
            text: "use tabs, not spaces".into(),
        })
        .unwrap();
    let result = turn.finished().await.unwrap();
    assert!(
        result.final_response.contains("use tabs, not spaces"),
        "{}",
        result.final_response
    );
    assert!(session.take_unsent_steering().is_empty());
    // Text steered into a turn that ends without another tool call comes
    // back to the front end instead of being lost.
    let turn = session.start_turn("answer now".into()).unwrap();
    session
        .submit(Op::Steer {
            text: "late".into(),
        })
        .unwrap();
    let _ = turn.finished().await.unwrap();
    assert_eq!(session.take_unsent_steering(), vec!["late".to_owned()]);
    session.shutdown().await;
}
