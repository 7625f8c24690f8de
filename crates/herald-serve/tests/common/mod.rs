//! Shared harness: `herald serve` in-process on a loopback port 0, against
//! the scripted model server, driven over HTTP with reqwest; and a strict
//! SSE reader.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use herald_core::{Config, Overrides, Settings, StoreHandle};
use herald_serve::{ServeConfig, Server};
use herald_testkit::{Script, ScriptedServer};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const TOKEN: &str = "test-token-123";
pub const MODEL: &str = "gpt-4.1-mini";

/// A running `herald serve` and the scripted model behind it.
pub struct Serve {
    pub upstream: ScriptedServer,
    pub home: TempDir,
    pub work: TempDir,
    pub url: String,
    pub http: reqwest::Client,
    /// The one-time browser login URL printed at start.
    pub login_url: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), herald_serve::ServeError>>>,
}

/// Settings pointing at `upstream`, with `home` and `work`.
pub fn settings(upstream: &ScriptedServer, home: &TempDir, work: &TempDir) -> Settings {
    let env: HashMap<String, String> = upstream
        .provider_env(herald_testkit::Api::OpenAi)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let flags = Overrides {
        cwd: Some(work.path().to_path_buf()),
        ..Overrides::default()
    };
    Settings::resolve(
        &Config::default(),
        &home.path().join("config.toml"),
        home.path().to_path_buf(),
        &env,
        &flags,
    )
    .unwrap()
}

pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

impl Serve {
    pub async fn start(script: Script) -> Self {
        Self::start_with(script, |_| {}).await
    }

    /// Starts with the config adjusted by `adjust`.
    pub async fn start_with(script: Script, adjust: impl FnOnce(&mut ServeConfig)) -> Self {
        let upstream = ScriptedServer::start(script).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let settings = settings(&upstream, &home, &work);
        let store = StoreHandle::open(&home.path().join("state.db")).unwrap();
        let mut config = ServeConfig::new(settings, store, TOKEN.to_owned());
        config.port = 0;
        config.token_explicit = true;
        adjust(&mut config);
        let server = Server::bind(config).await.unwrap();
        let url = format!("http://{}", server.local_addr());
        let login_url = server.login_url();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        Self {
            upstream,
            home,
            work,
            url,
            http: http(),
            login_url,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn work_path(&self) -> PathBuf {
        self.work.path().to_path_buf()
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
    }

    pub fn delete(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .delete(format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
    }

    /// POSTs `body` as JSON and returns status, session header and JSON body.
    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Option<String>, Value) {
        let response = self.post(path).json(body).send().await.unwrap();
        parts(response).await
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        let response = self.get(path).send().await.unwrap();
        let (status, _, body) = parts(response).await;
        (status, body)
    }

    /// Stops the server (as SIGINT would) and waits for it.
    pub async fn stop(mut self) {
        self.shutdown().await;
    }

    /// Stops the server, keeping the model server and directories.
    pub async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(20), task)
                .await
                .expect("the server stops within 20 s")
                .unwrap()
                .unwrap();
        }
    }

    /// The stored events of `session` after `after`, as JSON.
    pub async fn stored_events(&self, session: &str) -> Vec<Value> {
        let store = StoreHandle::open(&self.home.path().join("state.db")).unwrap();
        let id = session.to_owned();
        store
            .call(move |s| s.load_tree_events_after(&id, 0, 100_000))
            .await
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|row| serde_json::from_str(&row.payload).unwrap())
            .collect()
    }
}

/// Status, `X-Herald-Session` and the JSON body (Null when empty).
pub async fn parts(response: reqwest::Response) -> (u16, Option<String>, Value) {
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("x-herald-session")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    (status, session, body)
}

/// Asserts an OpenAI-style error body with `status`.
pub fn assert_error(status: u16, body: &Value, expected: u16) {
    assert_eq!(status, expected, "{body}");
    let error = &body["error"];
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(error["type"].as_str().is_some(), "{body}");
    assert!(error["code"].as_str().is_some(), "{body}");
}

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub id: Option<String>,
    /// The `data:` lines joined by newlines; `None` for a comment-only block.
    pub data: Option<String>,
    pub comments: Vec<String>,
}

/// Parses one event block strictly: every line is `data:`, `event:`,
/// `id:` or a comment; anything else fails the test.
pub fn parse_block(block: &str) -> SseEvent {
    let mut event = SseEvent::default();
    let mut data: Vec<String> = Vec::new();
    for line in block.lines() {
        if let Some(comment) = line.strip_prefix(':') {
            event.comments.push(comment.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
        } else if let Some(value) = line.strip_prefix("event:") {
            event.event = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("id:") {
            event.id = Some(value.trim().to_owned());
        } else {
            panic!("malformed SSE line {line:?} in block {block:?}");
        }
    }
    if !data.is_empty() {
        event.data = Some(data.join("\n"));
    }
    event
}

/// Every event of a finished SSE body.
pub fn parse_sse(body: &str) -> Vec<SseEvent> {
    assert!(
        body.is_empty() || body.ends_with("\n\n"),
        "the stream does not end with a blank line: {body:?}"
    );
    body.split("\n\n")
        .filter(|b| !b.is_empty())
        .map(parse_block)
        .collect()
}

/// Reads an SSE response incrementally.
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        let content_type = response
            .headers()
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event (comment-only blocks included), `None` at the end.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                return Some(parse_block(block.trim_end_matches('\n')));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("an SSE event within 30 s")
                .unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// The next event with data, parsed as JSON (skipping comments).
    pub async fn next_json(&mut self) -> Option<(SseEvent, Value)> {
        loop {
            let event = self.next().await?;
            if let Some(data) = &event.data {
                let value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
                return Some((event, value));
            }
        }
    }

    /// Reads JSON events until one of type `ty`; returns all read.
    pub async fn until_type(&mut self, ty: &str) -> Vec<(SseEvent, Value)> {
        let mut seen = Vec::new();
        while let Some((event, value)) = self.next_json().await {
            let done = value["type"] == ty;
            seen.push((event, value));
            if done {
                return seen;
            }
        }
        panic!("the stream ended before a {ty} event: {seen:?}");
    }
}

/// A chat request for `text`.
pub fn chat(text: &str, stream: bool) -> Value {
    serde_json::json!({
        "model": MODEL,
        "messages": [{"role": "system", "content": "client-system-zq9"}, {"role": "user", "content": text}],
        "stream": stream,
    })
}

/// Waits until `check` is true (up to 20 s).
pub async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}
