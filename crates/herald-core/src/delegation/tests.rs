//! Unit tests of the delegation tools that need no model: call-time limits.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use herald_tools::{AgentState, ToolContext, TypedTool};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{Config, Overrides, Settings};
use crate::{EventSink, LlmClient};

fn runtime(config: &str) -> Arc<Delegation> {
    let config: Config = toml::from_str(config).unwrap();
    let env: HashMap<String, String> = [(
        "OPENAI_BASE_URL".to_owned(),
        "http://127.0.0.1:9/v1".to_owned(),
    )]
    .into();
    let settings = Settings::resolve(
        &config,
        Path::new("/h/config.toml"),
        PathBuf::from("/tmp"),
        &env,
        &Overrides {
            cwd: Some(std::env::temp_dir()),
            ..Overrides::default()
        },
    )
    .unwrap();
    let client = Arc::new(LlmClient::new(settings.client_config()).unwrap());
    Delegation::new(DelegationSetup {
        settings,
        client,
        store: None,
        root_session_id: "s".into(),
        events: EventSink::discard(),
        cancel: CancellationToken::new(),
    })
    .unwrap()
}

fn context(rt: &Arc<Delegation>, scope: &AgentScope) -> ToolContext {
    let mut registry = herald_tools::builtin::default_registry(10_000);
    rt.register_tools(&mut registry, scope);
    ToolContext::new(
        AgentState::new(std::env::temp_dir()),
        CancellationToken::new(),
    )
    .with_call("c1", Arc::new(registry))
}

fn args(json: serde_json::Value) -> DelegateArgs {
    serde_json::from_value(json).unwrap()
}

#[tokio::test]
async fn a_call_at_the_depth_limit_names_the_key() {
    let rt = runtime("[delegation]\nmax_spawn_depth = 2\n");
    let scope = AgentScope {
        agent_id: "ag_x".into(),
        session_id: "s2".into(),
        depth: 2,
        budget: None,
        ancestor_sessions: vec!["s0".into(), "s1".into()],
        meter: crate::UsageMeter::new(None),
    };
    let tool = DelegateTask::new(Arc::clone(&rt), scope.clone());
    let err = tool
        .run(
            args(serde_json::json!({"goal": "deeper"})),
            &context(&rt, &scope),
        )
        .await
        .unwrap_err();
    assert!(
        err.0.contains("depth 2") && err.0.contains("max_spawn_depth is 2"),
        "{}",
        err.0
    );
    assert!(rt.live_agents().is_empty(), "no child may start");
}

#[tokio::test]
async fn background_dispatch_over_the_limit_is_refused() {
    let rt = runtime("[delegation]\nmax_background_agents = 1\n");
    let scope = AgentScope::root("s");
    let tool = DelegateTask::new(Arc::clone(&rt), scope.clone());
    let err = tool
        .run(
            args(serde_json::json!({"background": true, "tasks": [{"goal": "a"}, {"goal": "b"}]})),
            &context(&rt, &scope),
        )
        .await
        .unwrap_err();
    assert!(err.0.contains("max_background_agents"), "{}", err.0);
    assert!(rt.live_agents().is_empty());
}

#[test]
fn an_invalid_child_model_override_is_a_config_error() {
    let config: Config = toml::from_str("[delegation]\nbase_url = \"ftp://x\"\n").unwrap();
    let env: HashMap<String, String> = [("OPENAI_API_KEY".to_owned(), "k".to_owned())].into();
    // Checked with the rest of the settings, before any session starts.
    let err = Settings::resolve(
        &config,
        Path::new("/h/config.toml"),
        PathBuf::from("/tmp"),
        &env,
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("[delegation] base_url"), "{err}");
}
