//! The runtime driven the way a front end in another language drives it:
//! operations built from JSON go in through `Session::submit`, and what
//! comes out of `Session::events` is read as JSON. Nothing else of the
//! session's API is used, against the scripted provider over loopback HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use herald_core::runtime::{
    ClarifyPolicy, Op, Session, SessionOptions, Subscription, open_session,
};
use herald_core::{ApprovalMode, Config, Overrides, Settings, StoreHandle};
use herald_testkit::{Reply, RequestView, Script, ScriptedServer};
use serde_json::{Value, json};

struct Env {
    _server: ScriptedServer,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    store: StoreHandle,
    env: HashMap<String, String>,
}

impl Env {
    async fn new(script: Script) -> Self {
        let server = ScriptedServer::start(script).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let store = StoreHandle::open(&home.path().join("state.db")).unwrap();
        let env = server
            .provider_env(herald_testkit::Api::OpenAi)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        Self {
            _server: server,
            home,
            work,
            store,
            env,
        }
    }

    /// A session that asks its front end: approvals and `clarify`.
    async fn open(&self) -> (Session, Subscription) {
        let settings = Settings::resolve(
            &Config::default(),
            &self.home.path().join("config.toml"),
            self.home.path().to_owned(),
            &self.env,
            &Overrides {
                cwd: Some(self.work.path().to_owned()),
                ..Overrides::default()
            },
        )
        .unwrap();
        let mut options = SessionOptions::new(settings, self.store.clone());
        options.clarify = ClarifyPolicy::Ask;
        options.approvals = ApprovalMode::Ask;
        let session = tokio::spawn(open_session(options)).await.unwrap().unwrap();
        let events = session.events(Some(session.opened_after()));
        (session, events)
    }
}

/// Submits the operation `op` (JSON, as a front end sends it); its id.
fn submit(session: &Session, op: Value) -> String {
    let op: Op = serde_json::from_value(op).unwrap();
    session.submit(op).unwrap().0
}

/// The next event, as JSON.
async fn next(events: &mut Subscription) -> Value {
    let event = tokio::time::timeout(Duration::from_secs(30), events.next())
        .await
        .expect("no event within 30 s")
        .expect("the stream ended");
    serde_json::to_value(&*event).unwrap()
}

/// Events up to (and with) the first of type `kind`.
async fn until(events: &mut Subscription, kind: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let event = next(events).await;
        let done = event["type"] == kind;
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// The text of the last user message of a request.
fn last_user(view: &RequestView) -> String {
    view.messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .map(|m| m.text.clone())
        .unwrap_or_default()
}

/// Whether the request answers a tool call (the model's next step).
fn after_tool(view: &RequestView) -> bool {
    view.messages.last().is_some_and(|m| m.role == "tool")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_is_json_in_and_json_out_with_its_submission_id_on_every_event() {
    let env = Env::new(Script::new().responder(|view| {
        if after_tool(view) {
            Reply::text("listed")
        } else {
            Reply::tool("terminal", json!({"command": "echo hi"}))
        }
    }))
    .await;
    let (session, mut events) = env.open().await;
    let started = next(&mut events).await;
    assert_eq!(started["type"], "session.started");
    // Nothing submitted caused it.
    assert!(started.get("submission_id").is_none(), "{started}");
    let id = submit(&session, json!({"type": "user_turn", "text": "list it"}));
    assert!(id.starts_with("sub_"), "{id}");
    let turn = until(&mut events, "run.completed").await;
    let kinds: Vec<&str> = turn.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for kind in ["tool.started", "tool.completed", "assistant.message"] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    for event in &turn {
        assert_eq!(event["submission_id"], id, "{event}");
    }
    let end = turn.last().unwrap();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["exit_reason"], "completed");
    assert_eq!(end["final_response"], "listed");
    // Every event read back parses as the protocol's Event again.
    for event in &turn {
        serde_json::from_value::<herald_protocol::Event>(event.clone()).unwrap();
    }
    // The end closes the stream after what the end emitted.
    submit(&session, json!({"type": "shutdown"}));
    while tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .unwrap()
        .is_some()
    {}
    assert!(session.is_ended());
    let refused = session.submit(Op::UserTurn {
        text: "more".into(),
        images: Vec::new(),
    });
    assert!(refused.is_err(), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_and_an_approval_are_answered_with_operations() {
    let env = Env::new(Script::new().responder(|view| {
        let results: Vec<_> = view.tool_results().collect();
        match results.len() {
            0 => Reply::tool(
                "clarify",
                json!({"question": "Remove which?", "choices": ["old_dir", "new_dir"]}),
            ),
            1 => Reply::tool("terminal", json!({"command": "rm -rf old_dir"})),
            _ => Reply::text(format!("done: {}", results[0].1)),
        }
    }))
    .await;
    std::fs::create_dir(env.work.path().join("old_dir")).unwrap();
    let (session, mut events) = env.open().await;
    let id = submit(&session, json!({"type": "user_turn", "text": "clean up"}));
    let asked = until(&mut events, "clarify.requested").await;
    let question = asked.last().unwrap();
    assert_eq!(question["submission_id"], id);
    let request_id = question["request_id"].as_str().unwrap();
    // An answer that fits no choice is refused and the question stays open.
    let bad = session.submit(
        serde_json::from_value(
            json!({"type": "clarify_answer", "request_id": request_id, "answer": "9"}),
        )
        .unwrap(),
    );
    assert!(bad.is_err(), "{bad:?}");
    submit(
        &session,
        json!({"type": "clarify_answer", "request_id": request_id, "answer": "1"}),
    );
    let asked = until(&mut events, "approval.requested").await;
    let approval = asked.last().unwrap();
    assert_eq!(approval["tool"], "terminal");
    assert!(env.work.path().join("old_dir").exists());
    let request_id = approval["request_id"].as_str().unwrap();
    // An unknown request id is refused and changes nothing.
    let unknown = session.submit(
        serde_json::from_value(
            json!({"type": "approval_decision", "request_id": "apr_nope", "decision": "once"}),
        )
        .unwrap(),
    );
    assert!(unknown.is_err(), "{unknown:?}");
    assert!(env.work.path().join("old_dir").exists());
    let answer = submit(
        &session,
        json!({"type": "approval_decision", "request_id": request_id, "decision": "once"}),
    );
    let rest = until(&mut events, "run.completed").await;
    let resolved = rest
        .iter()
        .find(|e| e["type"] == "approval.resolved")
        .unwrap();
    assert_eq!(resolved["decision"], "once");
    assert_eq!(resolved["by"], "user");
    // The answer acted inside the turn: its events carry the turn's id.
    assert_eq!(resolved["submission_id"], id);
    assert_ne!(answer, id);
    assert_eq!(
        rest.last().unwrap()["final_response"],
        "done: The user chose option 1: old_dir"
    );
    assert!(!env.work.path().join("old_dir").exists());
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_agent_stops_one_subagent_and_interrupt_stops_the_turn() {
    let env = Env::new(
        Script::new()
            .conversation(
                "sleeper",
                vec![
                    Reply::tool("terminal", json!({"command": "sleep 30"})),
                    Reply::text("woke"),
                ],
            )
            .responder(|view| {
                if last_user(view).contains("delegate") {
                    if after_tool(view) {
                        Reply::text("the child was cancelled")
                    } else {
                        Reply::tool(
                            "delegate_task",
                            json!({"tasks": [{"goal": "sleeper: sleep a while"}]}),
                        )
                    }
                } else if after_tool(view) {
                    Reply::text("slept")
                } else {
                    Reply::tool("terminal", json!({"command": "sleep 30"}))
                }
            }),
    )
    .await;
    let (session, mut events) = env.open().await;
    // The terminal tool asks in `ApprovalMode::Ask` only for risky commands;
    // `sleep` runs as is.
    let first = submit(
        &session,
        json!({"type": "user_turn", "text": "delegate it"}),
    );
    let child = loop {
        let event = next(&mut events).await;
        if event["type"] == "tool.started" && event["agent_id"] != "root" {
            break event["agent_id"].as_str().unwrap().to_owned();
        }
        if event["type"] == "subagent.tool" {
            break event["agent_id"].as_str().unwrap().to_owned();
        }
    };
    let started = std::time::Instant::now();
    submit(&session, json!({"type": "cancel_agent", "agent_id": child}));
    let turn = until(&mut events, "run.completed").await;
    let completed = turn
        .iter()
        .find(|e| e["type"] == "subagent.completed")
        .unwrap();
    assert_eq!(completed["agent_id"], child);
    assert_ne!(completed["status"], "completed", "{completed}");
    assert_eq!(completed["submission_id"], first);
    let end = turn.last().unwrap();
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(end["final_response"], "the child was cancelled");
    assert!(started.elapsed() < Duration::from_secs(20));

    let second = submit(&session, json!({"type": "user_turn", "text": "sleep"}));
    until(&mut events, "tool.started").await;
    // A second turn is refused while one runs.
    assert!(
        session
            .submit(Op::UserTurn {
                text: "another".into(),
                images: Vec::new(),
            })
            .is_err()
    );
    let started = std::time::Instant::now();
    submit(&session, json!({"type": "interrupt"}));
    let end = until(&mut events, "run.completed").await.pop().unwrap();
    assert_eq!(end["submission_id"], second);
    assert_eq!(end["status"], "interrupted");
    assert_eq!(end["exit_reason"], "interrupted");
    assert!(started.elapsed() < Duration::from_secs(10));
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewind_puts_files_and_conversation_back_and_says_so() {
    let env = Env::new(Script::new().responder(|view| {
        if after_tool(view) {
            Reply::text("written")
        } else {
            Reply::tool(
                "write_file",
                json!({"path": "notes.txt", "content": last_user(view)}),
            )
        }
    }))
    .await;
    std::fs::write(env.work.path().join("notes.txt"), "original\n").unwrap();
    let (session, mut events) = env.open().await;
    submit(
        &session,
        json!({"type": "user_turn", "text": "first draft"}),
    );
    until(&mut events, "run.completed").await;
    submit(
        &session,
        json!({"type": "user_turn", "text": "second draft"}),
    );
    until(&mut events, "run.completed").await;
    let notes = env.work.path().join("notes.txt");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "second draft");
    // A turn that does not exist is refused; nothing changes.
    let bad = submit(
        &session,
        json!({"type": "rewind", "turn": 9, "scope": "both"}),
    );
    let error = until(&mut events, "error").await.pop().unwrap();
    assert_eq!(error["submission_id"], bad);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "second draft");

    let id = submit(
        &session,
        json!({"type": "rewind", "turn": 2, "scope": "both"}),
    );
    let rewound = until(&mut events, "session.rewound").await.pop().unwrap();
    assert_eq!(rewound["submission_id"], id);
    assert_eq!(rewound["turn"], 2);
    assert_eq!(rewound["scope"], "both");
    assert_eq!(rewound["files"]["restored"], 1, "{rewound}");
    assert_eq!(rewound["files"]["paths"], json!(["notes.txt"]));
    assert!(rewound["messages"].as_u64().unwrap() > 0);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first draft");
    session.shutdown().await;
}
