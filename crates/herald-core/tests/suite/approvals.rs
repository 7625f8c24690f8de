//! Approvals through the session runtime: "session" and "always" keep
//! exactly the rule the request offered (the command with its arguments),
//! a call no rule can allow runs once whatever the answer, and a failed
//! save is an event and a once-only approval.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use herald_core::runtime::{Op, Session, SessionOptions, Subscription, open_session};
use herald_core::{ApprovalMode, Config, Overrides, Settings, StoreHandle};
use herald_protocol::{ApprovalDecision, Event, EventKind};
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

    async fn open(&self) -> Session {
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
        let settings = Settings::resolve(
            &Config::default(),
            &self.home.path().join("config.toml"),
            self.home.path().to_owned(),
            &env,
            &overrides,
        )
        .unwrap();
        let mut options = SessionOptions::new(settings, self.store.clone());
        options.approvals = ApprovalMode::Ask;
        tokio::spawn(open_session(options)).await.unwrap().unwrap()
    }
}

/// Answers every approval request with the next of `answers` until the
/// turn ends; returns the events seen.
async fn answer_all(
    session: &Session,
    live: &mut Subscription,
    answers: &[ApprovalDecision],
) -> Vec<Arc<Event>> {
    let mut answers = answers.iter();
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), live.next())
            .await
            .expect("an event within 30 s")
            .unwrap();
        if let EventKind::ApprovalRequested { request_id, .. } = &event.kind {
            let decision = *answers.next().expect("an answer for every request");
            session
                .submit(Op::ApprovalDecision {
                    request_id: request_id.clone(),
                    decision,
                    message: None,
                })
                .unwrap();
        }
        let done = matches!(event.kind, EventKind::RunCompleted { .. });
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn terminal(command: &str) -> Reply {
    Reply::tool("terminal", json!({ "command": command }))
}

#[tokio::test(flavor = "multi_thread")]
async fn session_and_always_keep_exactly_the_offered_rule() {
    let env = Env::new(Script::new().responder(|view| match view.turn {
        // The check cannot see what this runs: no rule can allow it.
        0 => terminal("X=$(cat cmd.txt); $X"),
        1 => terminal("rm -rf dir_a"),
        // Allowed by the session rule: no request.
        2 => terminal("rm -rf dir_a"),
        // Not the same command: asks.
        3 => terminal("rm -rf dir_b"),
        _ => Reply::text("done"),
    }))
    .await;
    let work = env.work.path();
    std::fs::write(work.join("cmd.txt"), "touch made.txt").unwrap();
    std::fs::create_dir(work.join("dir_a")).unwrap();
    std::fs::create_dir(work.join("dir_b")).unwrap();
    let session = env.open().await;
    let mut live = session.events(None);
    session.start_turn("tidy".into()).unwrap();
    let events = answer_all(
        &session,
        &mut live,
        &[
            ApprovalDecision::Always,
            ApprovalDecision::Session,
            ApprovalDecision::Deny,
        ],
    )
    .await;
    let offered: Vec<Option<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalRequested { allow_rule, .. } => Some(allow_rule.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        offered,
        [
            None,
            Some("terminal(rm -rf dir_a)".to_owned()),
            Some("terminal(rm -rf dir_b)".to_owned()),
        ]
    );
    // "always" on a call no rule can allow ran it once and said so.
    let resolved: Vec<ApprovalDecision> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ApprovalResolved { decision, .. } => Some(*decision),
            _ => None,
        })
        .collect();
    assert_eq!(
        resolved,
        [
            ApprovalDecision::Once,
            ApprovalDecision::Session,
            ApprovalDecision::Deny
        ]
    );
    let notices: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error {
                message,
                fatal: false,
            } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("no rule can allow"), "{notices:?}");
    assert!(work.join("made.txt").exists());
    assert!(!work.join("dir_a").exists());
    assert!(work.join("dir_b").exists());
    // Nothing was saved for later sessions.
    assert!(!env.home.path().join("permissions.toml").exists());
    session.shutdown().await;
}
