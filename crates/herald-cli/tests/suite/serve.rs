//! `herald serve` as a process: it prints its URL, generates and reuses its
//! token, refuses a public address without one, serves a chat completion
//! against the scripted model, refuses a session another process holds,
//! and stops cleanly on SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::{Harness, Wire};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// A running `herald serve --port 0`.
struct Served {
    child: tokio::process::Child,
    url: String,
}

impl Served {
    async fn start(h: &Harness, extra: &[&str]) -> Self {
        let mut args = vec!["--port", "0"];
        args.extend_from_slice(extra);
        Self::start_with_args(h, &args).await
    }

    /// `herald serve ARGS`.
    async fn start_with_args(h: &Harness, args: &[&str]) -> Self {
        let mut cmd = h.command(Wire::OpenAi);
        cmd.arg("serve")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("herald serve prints its URL within 20 s")
            .unwrap()
            .expect("a line on stdout");
        let url = line
            .strip_prefix("herald serve listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        assert!(!url.ends_with(":0"), "the real port is printed: {url}");
        Self { child, url }
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    /// SIGTERM, then the exit status (within 20 s).
    async fn stop(mut self) -> std::process::ExitStatus {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("herald serve exits within 20 s of SIGTERM")
            .unwrap()
    }
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

async fn post(url: &str, token: &str, body: &Value) -> (u16, Option<String>, Value) {
    let response = client()
        .post(url)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("x-herald-session")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, session, response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_prints_its_url_keeps_its_token_answers_and_stops_on_sigterm() {
    let h = Harness::new(Script::new().conversation(
        "hello over http",
        vec![Reply::text("hello from the server")],
    ))
    .await;
    let served = Served::start(&h, &[]).await;
    let token_file = h.home.path().join("serve.token");
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(token.len(), 64);
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let url = format!("{}/v1/chat/completions", served.url);
    let request = json!({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hello over http"}]});
    let (status, _, body) = post(&url, "wrong", &request).await;
    assert_eq!(status, 401, "{body}");
    let (status, session, body) = post(&url, &token, &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "hello from the server"
    );
    let session = session.unwrap();

    let status = served.stop().await;
    assert_eq!(status.code(), Some(0), "a clean stop exits 0");
    // The session was ended and stored.
    let out = h
        .command(Wire::OpenAi)
        .args(["sessions", "show", &session, "--json"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("hello from the server"), "{shown}");

    // A second start reuses the token.
    let again = Served::start(&h, &[]).await;
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
    assert_eq!(again.stop().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_address_without_a_token_is_refused_and_a_given_token_is_used() {
    let h = Harness::new(Script::new()).await;
    let out = h
        .command(Wire::OpenAi)
        .args(["serve", "--host", "0.0.0.0", "--port", "0"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--token"), "{stderr}");
    assert!(!h.home.path().join("serve.token").exists() || stderr.contains("refusing"));

    let served = Served::start(&h, &["--token", "given-token"]).await;
    let models = client()
        .get(format!("{}/v1/models", served.url))
        .bearer_auth("given-token")
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    assert_eq!(served.stop().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_open_in_another_process_is_409() {
    let h = Harness::new(Script::new()).await;
    let first = Served::start(&h, &["--token", "t"]).await;
    let second = Served::start(&h, &["--token", "t"]).await;
    let (status, _, created) = post(&format!("{}/api/sessions", first.url), "t", &json!({})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap();
    let (status, _, body) = post(
        &format!("{}/api/sessions/{id}/turns", second.url),
        "t",
        &json!({"input": "mine now?"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "session_in_use");
    let response = client()
        .delete(format!("{}/api/sessions/{id}", second.url))
        .bearer_auth("t")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 409);
    let refusal: Value = response.json().await.unwrap();
    assert_eq!(refusal["error"]["code"], "session_in_use", "{refusal}");
    // The command line gets the same refusal from the same rule: exit 2,
    // the same words, and the session kept.
    let output = h
        .bare_command()
        .args(["sessions", "delete", id, "--yes"])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(said.contains(message), "{said} vs {message}");
    let shown = h.cli_json(&["sessions", "show", id, "--json"]).await;
    assert_eq!(shown["session"]["id"], id, "{shown}");
    // Its stored events can still be replayed from the other server (the
    // stream ends after them); following it live cannot. The owner writes
    // its events in batches (within 200 ms), so the replay is retried until
    // they are stored.
    let mut text = String::new();
    for _ in 0..50 {
        let replay = client()
            .get(format!("{}/api/sessions/{id}/events?after=0", second.url))
            .bearer_auth("t")
            .send()
            .await
            .unwrap();
        assert_eq!(replay.status(), 200);
        text = tokio::time::timeout(Duration::from_secs(20), replay.text())
            .await
            .expect("a replay-only stream ends")
            .unwrap();
        if text.contains("session.started") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(text.contains("\"type\":\"session.started\""), "{text}");
    assert!(
        text.starts_with("id: ") || text.contains("\nid: "),
        "{text}"
    );
    let live = client()
        .get(format!("{}/api/sessions/{id}/events", second.url))
        .bearer_auth("t")
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 409);
    assert_eq!(first.stop().await.code(), Some(0));
    // Released: now the second server may open it.
    let (status, _, body) = post(
        &format!("{}/api/sessions", second.url),
        "t",
        &json!({"resume": id}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(second.stop().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_config_section_sets_the_defaults_and_flags_win() {
    let h = Harness::new(Script::new()).await;
    h.config("[serve]\nport = 0\nmax_body_bytes = 2048\ncors_origins = [\"http://app.test\"]\n");
    let served = Served::start_with_args(&h, &["--token", "t"]).await;
    let response = client()
        .get(format!("{}/v1/models", served.url))
        .bearer_auth("t")
        .header("Origin", "http://app.test")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "http://app.test"
    );
    let big =
        json!({"model": "herald", "messages": [{"role": "user", "content": "x".repeat(4096)}]});
    let (status, _, body) = post(&format!("{}/v1/chat/completions", served.url), "t", &big).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(served.stop().await.code(), Some(0));

    // A flag wins over the file.
    let served = Served::start_with_args(&h, &["--token", "t", "--max-body-bytes", "100000"]).await;
    let (status, _, body) = post(&format!("{}/v1/chat/completions", served.url), "t", &big).await;
    assert_ne!(status, 413, "{body}");
    assert_eq!(served.stop().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_doctor_runs_over_the_api_with_the_servers_config() {
    let h = Harness::new(Script::new()).await;
    // The browser toolset on, with a browser that is not there: that check
    // fails with the fix.
    h.config("[browser]\nenabled = true\nexecutable = \"/nonexistent/chromium\"\n");
    let served = Served::start(&h, &["--token", "doctor-token", "--no-scheduler"]).await;
    let url = format!("{}/api/doctor", served.url);
    let response = client()
        .get(&url)
        .bearer_auth("doctor-token")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let report: Value = response.json().await.unwrap();
    assert_eq!(report["ok"], false, "{report}");
    let checks = report["checks"].as_array().unwrap();
    let find = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {report}"))
    };
    assert_eq!(find("browser")["status"], "fail", "{report}");
    assert!(
        find("browser")["detail"]
            .as_str()
            .unwrap()
            .contains("apt-get install chromium"),
        "{report}"
    );
    assert_eq!(find("config")["status"], "ok", "{report}");
    for check in checks {
        assert!(
            ["ok", "warn", "fail"].contains(&check["status"].as_str().unwrap()),
            "{check}"
        );
        assert!(!check["detail"].as_str().unwrap().is_empty(), "{check}");
    }
    // The same checks as `herald doctor --json`, with the same verdicts.
    let out = h
        .command(Wire::OpenAi)
        .args(["doctor", "--json"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdicts = |checks: &Value| -> Vec<(String, String)> {
        checks
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(verdicts(&report["checks"]), verdicts(&cli["checks"]));

    // Without the token: refused; other methods: 405.
    let response = client().get(&url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let response = client()
        .post(&url)
        .bearer_auth("doctor-token")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(served.stop().await.code(), Some(0));
}
