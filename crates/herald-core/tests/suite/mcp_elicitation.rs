//! An MCP server's request for user input (elicitation) through the
//! session runtime, against the real `@modelcontextprotocol/server-everything`
//! (`.ci/install-mcp-servers` puts it in `.ci/mcp`): with `ApprovalMode::Ask`
//! it becomes an `elicitation.requested` event answered by
//! `Op::ElicitationAnswer`, and an interrupt cancels it; a headless session
//! declines it at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use herald_core::runtime::{Op, RuntimeError, Session, SessionOptions, Subscription, open_session};
use herald_core::{ApprovalMode, Config, ExitReason, Overrides, Settings, StoreHandle};
use herald_mcp::McpServerConfig;
use herald_protocol::{Event, EventKind};
use herald_testkit::{Reply, Script, ScriptedServer};
use serde_json::json;

const ELICIT: &str = "mcp__ev__trigger-elicitation-request";

fn everything_js() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run .ci/install-mcp-servers (it installs the real MCP test servers from npm into .ci/mcp)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

struct Env {
    server: ScriptedServer,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    store: StoreHandle,
}

impl Env {
    /// A model that calls the elicitation tool, then answers with the
    /// tool's result.
    async fn new() -> Self {
        let script = Script::new().responder(|view| match view.tool_results().last() {
            Some((_, result)) => Reply::text(format!("tool said: {result}")),
            None => Reply::tool(ELICIT, json!({})),
        });
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
        let mut settings = Settings::resolve(
            &Config::default(),
            &self.home.path().join("config.toml"),
            self.home.path().to_owned(),
            &env,
            &overrides,
        )
        .unwrap();
        settings.mcp_servers.insert(
            "ev".to_owned(),
            McpServerConfig::stdio("node", [everything_js(), "stdio".to_owned()]),
        );
        // The call itself runs without an approval: only the server asks.
        settings.permissions.allow.push("mcp__ev__*".into());
        settings
    }

    async fn open(&self, approvals: ApprovalMode) -> Session {
        let mut options = SessionOptions::new(self.settings(), self.store.clone());
        options.approvals = approvals;
        tokio::spawn(open_session(options)).await.unwrap().unwrap()
    }
}

/// Events up to the first `elicitation.requested`.
async fn until_requested(live: &mut Subscription) -> Arc<Event> {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), live.next())
            .await
            .expect("no elicitation.requested within 30 s")
            .expect("the stream ended");
        if matches!(event.kind, EventKind::ElicitationRequested { .. }) {
            return event;
        }
    }
}

/// The `elicitation.resolved` that follows: (request id, action, by).
async fn resolved(live: &mut Subscription) -> (String, String, String) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), live.next())
            .await
            .expect("no elicitation.resolved within 30 s")
            .expect("the stream ended");
        if let EventKind::ElicitationResolved {
            request_id,
            action,
            by,
        } = &event.kind
        {
            return (
                request_id.clone(),
                action.as_str().to_owned(),
                serde_json::to_value(by)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_is_asked_as_an_event_and_answered_with_the_op() {
    let env = Env::new().await;
    let session = env.open(ApprovalMode::Ask).await;
    let mut live = session.events(None);
    let turn = session.start_turn("fill in the form".into()).unwrap();

    let event = until_requested(&mut live).await;
    assert_eq!(event.agent_id, "root");
    let EventKind::ElicitationRequested {
        request_id,
        server,
        message,
        schema,
    } = &event.kind
    else {
        unreachable!()
    };
    assert_eq!(server, "ev");
    assert_eq!(message, "Please provide inputs for the following fields:");
    assert_eq!(schema["properties"]["name"]["type"], "string");
    let pending = session.pending_elicitations();
    assert_eq!(pending.len(), 1);
    assert_eq!(&pending[0].request_id, request_id);
    assert_eq!(pending[0].server, "ev");

    // A wrong id, an unknown action and content that misses a required
    // field are refused; the request stays open.
    let wrong_id = session.submit(Op::ElicitationAnswer {
        request_id: "eli_999".into(),
        action: herald_protocol::ElicitationAction::Accept,
        content: Some(json!({"name": "x"})),
    });
    assert!(
        matches!(wrong_id, Err(RuntimeError::UnknownRequest(_))),
        "{wrong_id:?}"
    );
    // An unknown action does not even parse as an operation.
    let bad_action = serde_json::from_value::<Op>(json!({
        "type": "elicitation_answer", "request_id": request_id, "action": "maybe"
    }))
    .unwrap_err()
    .to_string();
    assert!(bad_action.contains("accept"), "{bad_action}");
    let missing = session.submit(Op::ElicitationAnswer {
        request_id: request_id.clone(),
        action: herald_protocol::ElicitationAction::Accept,
        content: Some(json!({"check": true})),
    });
    assert!(
        matches!(&missing, Err(RuntimeError::Invalid(m)) if m.contains("'name'")),
        "{missing:?}"
    );
    assert_eq!(session.pending_elicitations().len(), 1);

    session
        .submit(Op::ElicitationAnswer {
            request_id: request_id.clone(),
            action: herald_protocol::ElicitationAction::Accept,
            content: Some(json!({"name": "Ada Lovelace", "check": true})),
        })
        .unwrap();
    assert_eq!(
        resolved(&mut live).await,
        (request_id.clone(), "accept".to_owned(), "user".to_owned())
    );
    let result = turn.finished().await.unwrap();
    assert_eq!(result.exit_reason, ExitReason::Completed);
    // The server got the content and put it in the tool's result.
    assert!(
        result.final_response.contains("- Name: Ada Lovelace"),
        "{}",
        result.final_response
    );
    assert!(
        result.final_response.contains("- Agreed to terms: true"),
        "{}",
        result.final_response
    );
    assert!(session.pending_elicitations().is_empty());
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_cancels_a_pending_elicitation() {
    let env = Env::new().await;
    let session = env.open(ApprovalMode::Ask).await;
    let mut live = session.events(None);
    let turn = session.start_turn("fill in the form".into()).unwrap();
    let event = until_requested(&mut live).await;
    let EventKind::ElicitationRequested { request_id, .. } = &event.kind else {
        unreachable!()
    };
    session.submit(Op::Interrupt {}).unwrap();
    let result = turn.finished().await.unwrap();
    assert_eq!(result.exit_reason, ExitReason::Interrupted);
    assert_eq!(
        resolved(&mut live).await,
        (
            request_id.clone(),
            "cancel".to_owned(),
            "interrupt".to_owned()
        )
    );
    assert!(session.pending_elicitations().is_empty());
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_headless_session_declines_at_once() {
    let env = Env::new().await;
    let session = env.open(ApprovalMode::Headless).await;
    let mut live = session.events(None);
    let turn = session.start_turn("fill in the form".into()).unwrap();
    let event = until_requested(&mut live).await;
    let EventKind::ElicitationRequested { request_id, .. } = &event.kind else {
        unreachable!()
    };
    assert_eq!(
        resolved(&mut live).await,
        (
            request_id.clone(),
            "decline".to_owned(),
            "headless".to_owned()
        )
    );
    let result = turn.finished().await.unwrap();
    assert!(
        result
            .final_response
            .contains("User declined to provide the requested information"),
        "{}",
        result.final_response
    );
    session.shutdown().await;
}
