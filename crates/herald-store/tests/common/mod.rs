//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use herald_protocol::{Message, ToolCall};
use herald_store::{NewSession, SearchHit, SearchRequest, SessionSource, Store};

pub fn memory() -> Store {
    Store::open_in_memory().unwrap()
}

pub fn new_session(id: &str, cwd: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        parent_session_id: None,
        agent_id: None,
        source: SessionSource::Cli,
        cwd: cwd.to_owned(),
        model: "test-model".to_owned(),
        provider: "openai".to_owned(),
        system_prompt: "You are a test.\n  Keep   spacing.\n".to_owned(),
    }
}

pub fn child_session(id: &str, parent: &str) -> NewSession {
    NewSession {
        parent_session_id: Some(parent.to_owned()),
        agent_id: Some(format!("agent-{id}")),
        source: SessionSource::Subagent,
        ..new_session(id, "/work")
    }
}

/// Creates a session holding the given user/assistant texts, alternating roles.
pub fn session_with(store: &mut Store, id: &str, texts: &[&str]) -> Vec<i64> {
    store.create_session(&new_session(id, "/work")).unwrap();
    let messages: Vec<Message> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i % 2 == 0 {
                Message::user(*t)
            } else {
                Message::assistant(*t, Vec::new())
            }
        })
        .collect();
    store.append_messages(id, &messages).unwrap()
}

pub fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

/// A full-text search for `q`, up to 10 sessions.
pub fn query(store: &Store, q: &str) -> Vec<SearchHit> {
    store
        .search(&SearchRequest {
            query: q.into(),
            limit: 10,
            ..Default::default()
        })
        .unwrap()
}
