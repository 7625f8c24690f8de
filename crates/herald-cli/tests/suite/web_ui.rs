//! The web UI in a real browser: `herald serve` (the binary) against the
//! scripted model, driven by Playwright for Python (installed by `.ci/run`
//! into `.ci/venv`) in Debian's Chromium. Without either the tests fail and
//! say how to get them; they never skip. Screenshots of every page go to
//! `<target>/tmp/webui-screenshots/<scenario>/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Harness, Wire};
use herald_testkit::{Pace, Reply, Script};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

const TOKEN: &str = "webui-test-token";
/// The pinned Playwright release `.ci/run` installs.
const PLAYWRIGHT_PY_VERSION: &str = "1.65.2";

fn venv_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: the web UI tests need the CI virtualenv. Run .ci/run once \
         (or: python3 -m venv .ci/venv && .ci/venv/bin/pip install playwright=={PLAYWRIGHT_PY_VERSION})",
        python.display()
    );
    python
}

fn chromium() -> PathBuf {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        for name in ["chromium", "chromium-browser"] {
            let path = Path::new(dir).join(name);
            if path.is_file() {
                return path;
            }
        }
    }
    panic!(
        "chromium is missing: the web UI tests drive Debian's chromium package (apt-get install chromium; .ci/run installs it)"
    );
}

/// `herald serve` as a process, with its URL and one-time login URL.
struct Served {
    child: tokio::process::Child,
    url: String,
    login: String,
}

impl Served {
    async fn start(h: &Harness) -> Self {
        Self::start_with(h, &[], &[]).await
    }

    /// `herald serve` with more arguments and environment.
    async fn start_with(h: &Harness, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = h.command(Wire::OpenAi);
        cmd.args(["serve", "--port", "0", "--token", TOKEN, "--no-scheduler"])
            .args(args)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut next = async || {
            tokio::time::timeout(Duration::from_secs(20), lines.next_line())
                .await
                .expect("herald serve prints within 20 s")
                .unwrap()
                .expect("a line on stdout")
        };
        let first = next().await;
        let url = first
            .strip_prefix("herald serve listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        let second = next().await;
        let login = second
            .split_whitespace()
            .find(|w| w.starts_with("http://") && w.contains("/login?code="))
            .unwrap_or_else(|| panic!("no login URL in {second:?}"))
            .to_owned();
        assert!(login.starts_with(&url), "{login} {url}");
        Self { child, url, login }
    }

    async fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("herald serve stops within 20 s")
            .unwrap();
        assert_eq!(status.code(), Some(0));
    }
}

/// Runs scenario `name` of `tests/python/web_ui.py` against `served`.
async fn browse(served: &Served, name: &str) -> Value {
    browse_with(served, name, &[]).await
}

/// One browser scenario at a time: they measure how fast pages draw, which
/// two Chromiums sharing two cores would distort.
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// [`browse`] with more environment.
async fn browse_with(served: &Served, name: &str, env: &[(&str, &str)]) -> Value {
    let _one = ONE_BROWSER.lock().await;
    let python = venv_python();
    let chromium = chromium();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("webui-screenshots")
        .join(name);
    std::fs::create_dir_all(&shots).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/web_ui.py");
    let run = tokio::process::Command::new(&python)
        .arg(script)
        .arg(name)
        .env("HERALD_URL", &served.url)
        .env("HERALD_LOGIN_URL", &served.login)
        .env("HERALD_TOKEN", TOKEN)
        .env("CHROMIUM", &chromium)
        .env("SHOTS", &shots)
        .envs(env.iter().copied())
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(240), run)
        .await
        .expect("the browser scenario ends within 240 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser scenario {name} failed (screenshots in {}):\n{stderr}\n{stdout}",
        shots.display()
    );
    for page in std::fs::read_dir(&shots).unwrap() {
        let page = page.unwrap();
        assert!(
            page.metadata().unwrap().len() > 1000,
            "{:?} is empty",
            page.path()
        );
    }
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

const XSS_ANSWER: &str = "Look: <script>window.__xss = 1</script> and <img src=x onerror=\"window.__xss = 2\"> after the image.";

fn long_answer() -> String {
    let mut text = String::from("# A long answer\n\n");
    for i in 0..400 {
        text.push_str(&format!(
            "Paragraph {i}: the quick brown fox jumps over the lazy dog, again and again.\n\n"
        ));
    }
    text.push_str("END-OF-LONG-ANSWER");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_login_search_stream_xss_usage_phone_and_refusals() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "tell me about zebra migration",
                vec![Reply::text(
                    "Zebras migrate across the Serengeti every year.",
                )],
            )
            .conversation("stream a long answer", vec![Reply::text(long_answer())])
            .conversation("show me html", vec![Reply::text(XSS_ANSWER)]),
    )
    .await;
    let (out, _) = h
        .run_json(Wire::OpenAi, &[], "tell me about zebra migration")
        .await;
    assert!(out.status.success());
    let served = Served::start(&h).await;
    // The answer streams at a model's pace: visible in pieces.
    h.server.set_pace(Some(Pace {
        first_token: Duration::from_millis(200),
        tokens_per_second: 4000.0,
    }));
    let seen = browse(&served, "basics").await;

    assert_eq!(seen["no_cookie_status"], 401, "{seen}");
    assert_eq!(seen["forged_host"], json!([421, "host_refused"]));
    assert_eq!(
        seen["cookie"],
        json!([{"name": "herald_session", "httpOnly": true, "sameSite": "Strict"}])
    );
    assert_eq!(
        seen["search_mark"].as_str().unwrap().to_lowercase(),
        "zebra"
    );
    assert!(
        seen["search_snippet"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("zebra migration"),
        "{seen}"
    );

    let final_chars = seen["stream_final_chars"].as_u64().unwrap();
    let partial = seen["stream_partial_chars"].as_u64().unwrap();
    assert!(final_chars > 25_000, "{seen}");
    assert!(partial < final_chars, "seen while streaming: {seen}");
    assert!(
        seen["stream_updates"].as_u64().unwrap() > 20,
        "streamed in pieces: {seen}"
    );

    let xss = seen["xss_text"].as_str().unwrap();
    assert!(xss.contains("<script>window.__xss = 1</script>"), "{xss}");
    assert!(
        xss.contains("<img src=x onerror=\"window.__xss = 2\">"),
        "{xss}"
    );
    assert_eq!(seen["xss_img_elements"], 0);
    assert_eq!(seen["xss_script_elements"], 0);
    assert_eq!(seen["xss_flag"], Value::Null, "no script ran");

    assert_eq!(
        seen["keyboard_reached"]
            .as_str()
            .map(|s| s.starts_with("Usage")),
        Some(true),
        "{seen}"
    );
    assert_eq!(
        seen["sessions_after_cross_origin"], seen["sessions_before_cross_origin"],
        "the cross-origin POST created nothing: {seen}"
    );
    assert_eq!(seen["same_origin_post"], 201);
    for (page, width) in seen["phone_widths"].as_object().unwrap() {
        assert!(
            width.as_u64().unwrap() <= 360,
            "{page} scrolls sideways on a phone: {width}"
        );
    }
    assert_eq!(seen["console_errors"], json!([]), "{seen}");
    eprintln!("webui contrast: {}", seen["contrast"]);
    // WCAG AA: text at least 4.5:1 against its background, in both themes.
    for scheme in ["light", "dark"] {
        let ratios = seen["contrast"][scheme].as_object().unwrap();
        assert!(ratios.len() >= 7, "{scheme}: {ratios:?}");
        for (what, ratio) in ratios {
            assert!(
                ratio.as_f64().unwrap() >= 4.5,
                "{scheme} {what} contrast {ratio} is under 4.5:1"
            );
        }
    }
    let settings = seen["settings_text"].as_str().unwrap();
    assert!(settings.contains("gpt-4.1-mini"), "{settings}");
    served.stop().await;

    // The usage page shows what `herald usage --json` reports.
    let cli = h.cli_json(&["usage", "--by", "model", "--json"]).await;
    let usage = &seen["usage"];
    let total = &cli["total"];
    assert_eq!(
        usage["requests"],
        total["requests"].to_string().as_str(),
        "{usage} {cli}"
    );
    assert_eq!(usage["input"], total["input"].to_string().as_str());
    assert_eq!(usage["output"], total["output"].to_string().as_str());
    let cost = format!("${:.4}", total["cost_usd"].as_f64().unwrap());
    assert_eq!(usage["cost"], cost.as_str());
    assert!(seen["usage_chart_bars"].as_u64().unwrap() >= 2, "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_delegation_tree_updates_live_and_cancels_a_child() {
    let child = |name: &str, secs: u32| {
        (
            name.to_owned(),
            vec![
                Reply::tool("terminal", json!({"command": format!("sleep {secs}")})),
                Reply::text(format!("{name} finished")),
            ],
        )
    };
    let mut script = Script::new().conversation(
        "fan out three",
        vec![
            Reply::tool(
                "delegate_task",
                json!({"tasks": [
                    {"goal": "child one: nap briefly"},
                    {"goal": "child two: nap for long"},
                    {"goal": "child three: nap briefly"}
                ]}),
            ),
            Reply::text("fan-out done"),
        ],
    );
    for (name, replies) in [
        child("child one", 3),
        child("child two", 60),
        child("child three", 3),
    ] {
        script = script.conversation(&name, replies);
    }
    let h = Harness::new(script).await;
    let served = Served::start(&h).await;
    let seen = browse(&served, "delegation").await;
    assert_eq!(
        seen["statuses"],
        json!({"child one": "completed", "child two": "interrupted", "child three": "completed"}),
        "{seen}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_answers_an_approval_and_clarify_questions_from_the_questions_page() {
    let h = Harness::new(Script::new().conversation(
        "clean the build",
        vec![
            Reply::tool("terminal", json!({"command": "rm -rf build_dir"})),
            Reply::tool(
                "clarify",
                json!({"question": "Which colour?", "choices": ["red", "blue"], "allow_freetext": false}),
            ),
            Reply::tool(
                "clarify",
                json!({"question": "Anything else?", "choices": ["no"], "allow_freetext": true}),
            ),
            Reply::text("cleared, and blue it is"),
        ],
    ))
    .await;
    std::fs::create_dir(h.work_path().join("build_dir")).unwrap();
    let served = Served::start(&h).await;
    let seen = browse(&served, "questions").await;
    let card = seen["approval_card"].as_str().unwrap();
    assert!(card.contains("rm -rf build_dir"), "{card}");
    assert!(card.contains("asked by") && card.contains("root"), "{card}");
    assert!(
        card.contains("terminal(rm -rf build_dir)"),
        "the rule Always saves: {card}"
    );
    assert!(
        seen["questions_page"].as_str().unwrap().contains("Once"),
        "{seen}"
    );
    let clarify = seen["clarify_card"].as_str().unwrap();
    assert!(
        clarify.contains("red") && clarify.contains("blue"),
        "{clarify}"
    );
    // The Questions page shows the same question as a card of its own:
    // who asks, the choices, and no free text where it is not allowed.
    let listed = seen["questions_page_clarify"].as_str().unwrap();
    for part in ["Which colour?", "asked by", "root", "red", "blue"] {
        assert!(listed.contains(part), "{part:?} missing: {listed}");
    }
    assert_eq!(seen["questions_page_clarify_free_text"], 0, "{seen}");
    assert_eq!(seen["questions_page_free_choices"], json!(["no"]), "{seen}");
    assert_eq!(seen["cards_left"], 0);
    assert!(
        !h.work_path().join("build_dir").exists(),
        "approved once: the command ran"
    );
    // Both answers given on the Questions page reached the model.
    let requests = h.requests_of("clean the build");
    let after = |turn: usize| {
        requests
            .iter()
            .find(|r| r.turn == turn)
            .unwrap_or_else(|| panic!("no request {turn}"))
            .body
            .to_string()
    };
    assert!(after(2).contains("blue"), "the choice reached the model");
    assert!(
        after(3).contains("paint it teal"),
        "the free text reached the model"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_questions_page_updates_live_without_reload() {
    let h = Harness::new(Script::new().conversation(
        "clean the build",
        vec![
            Reply::tool("terminal", json!({"command": "rm -rf build_dir"})),
            Reply::tool(
                "clarify",
                json!({"question": "Which colour?", "choices": ["red", "blue"], "allow_freetext": false}),
            ),
            Reply::tool(
                "clarify",
                json!({"question": "Anything else?", "choices": ["no"], "allow_freetext": true}),
            ),
            Reply::text("cleared, and blue it is"),
        ],
    ))
    .await;
    std::fs::create_dir(h.work_path().join("build_dir")).unwrap();
    let served = Served::start(&h).await;
    let seen = browse(&served, "questions_live").await;
    assert_eq!(seen["empty_at_start"], 0, "{seen}");
    // Recorded in docs/BENCHMARKS.md (run with --nocapture).
    eprintln!(
        "questions page: a card appeared {} ms after the session page's, left {} ms after the answer",
        seen["appear_ms"], seen["disappear_ms"]
    );
    let approval = seen["live_approval"].as_str().unwrap();
    for part in ["rm -rf build_dir", "asked by", "root", "Once"] {
        assert!(approval.contains(part), "{part:?} missing: {approval}");
    }
    assert_eq!(seen["empty_hidden"], true, "{seen}");
    // A half-typed answer outlives the polls, in the same card.
    assert_eq!(seen["typed_after_polls"], "paint it teal", "{seen}");
    assert_eq!(seen["same_card_after_polls"], true, "{seen}");
    assert_eq!(seen["cards_left"], 0, "{seen}");
    assert_eq!(seen["empty_shown_again"], true, "{seen}");
    assert_eq!(seen["badge_hidden"], true, "{seen}");
    assert_eq!(seen["no_reload"], true, "the page never reloaded: {seen}");
    assert!(!h.work_path().join("build_dir").exists(), "approved once");
    let requests = h.requests_of("clean the build");
    let turn = |n: usize| {
        requests
            .iter()
            .find(|r| r.turn == n)
            .unwrap_or_else(|| panic!("no request {n}"))
            .body
            .to_string()
    };
    assert!(
        turn(2).contains("blue"),
        "the other tab's choice reached the model"
    );
    assert!(
        turn(3).contains("paint it teal"),
        "the text typed on the live page reached the model"
    );
    served.stop().await;
}

fn everything_config() -> String {
    let js = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        js.is_file(),
        "{} is missing: run .ci/install-mcp-servers (it installs the real MCP test servers from npm into .ci/mcp)",
        js.display()
    );
    let js = js.canonicalize().unwrap().display().to_string();
    format!(
        "[mcp_servers.ev]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n[permissions]\nallow = [\"mcp__ev__*\"]\n",
        serde_json::to_string(&js).unwrap()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_answers_an_mcp_form_from_the_questions_page() {
    let h = Harness::new(Script::new().conversation(
        "fill in the form",
        vec![
            Reply::tool("mcp__ev__trigger-elicitation-request", json!({})),
            Reply::text("tool said thanks"),
        ],
    ))
    .await;
    h.config(&everything_config());
    let served = Served::start(&h).await;
    let seen = browse(&served, "elicitation").await;
    let form = seen["form_text"].as_str().unwrap();
    for part in [
        "Form from ev",
        "asked by",
        "Your full, legal name",
        "Superman",
        "Tuna",
    ] {
        assert!(form.contains(part), "{part:?} missing: {form}");
    }
    assert_eq!(seen["console_errors"], json!([]), "{seen}");
    // The answer the model got: the fields typed in and the defaults the
    // form filled in (a titled single choice, a multiple choice).
    let requests = h.requests_of("fill in the form");
    let result = requests
        .iter()
        .find(|r| r.turn == 1)
        .expect("the request after the form")
        .body
        .to_string();
    for part in [
        "- Name: Grace Hopper",
        "- Favorite Integer: 9",
        "- Favorite Number: 3.14",
        "hero-1",
        "Guitar",
        "fish-1",
    ] {
        assert!(result.contains(part), "{part:?} not sent: {result}");
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_composer_steers_interrupts_and_compacts() {
    let h = Harness::new(Script::new().responder(|view| {
        let last = view.last().map(|m| m.text.clone()).unwrap_or_default();
        if last.contains("Request for context compaction") {
            return Reply::text("SUMMARY: slow work, one more thing");
        }
        if last.starts_with("[herald] Memory flush") {
            return Reply::text("DONE");
        }
        if view.conversation.contains("run forever") {
            return Reply::endless();
        }
        if last.contains("one more thing") {
            return Reply::text("noted");
        }
        match view.turn {
            0 => Reply::tool("terminal", json!({"command": "sleep 4"})),
            _ => Reply::text("slow work done"),
        }
    }))
    .await;
    // A short conversation has a middle to summarise.
    h.config("[compression]\nprotect_first_n = 1\nprotect_last_n = 1\n");
    let served = Served::start(&h).await;
    let seen = browse(&served, "composer").await;
    // The steering text reached the model in the request after the tool.
    let requests = h.requests_of("work slowly");
    let next = requests
        .iter()
        .find(|r| r.turn == 1)
        .expect("the request after the tool call");
    assert!(
        next.body.to_string().contains("also tidy the blue folder"),
        "{}",
        next.body
    );
    assert!(
        !requests[0].body.to_string().contains("also tidy"),
        "steered after the first request"
    );
    // Tool cells show the call's duration, live and from the store.
    for key in ["live_tool_info", "stored_tool_info"] {
        let info = seen[key].as_str().unwrap();
        assert!(
            info.contains("terminal") && (info.contains("4.") || info.contains("5.")),
            "{key}: a ~4 s call: {info}"
        );
    }
    assert!(
        h.server.requests().iter().any(|r| r
            .body
            .to_string()
            .contains("Request for context compaction")),
        "a summary was asked for"
    );
    // A reply that outran the op's response still follows the user's message.
    assert_eq!(
        seen["user_before_reply"],
        json!(["user", "assistant"]),
        "{seen}"
    );
    // A second Ctrl+Enter while the turn's op was unanswered sent nothing.
    assert_eq!(seen["ops_while_held"], json!(["user_turn"]), "{seen}");
    let note = seen["compaction_note"].as_str().unwrap();
    assert!(note.contains("Compacted") && note.contains("→"), "{note}");
    assert!(
        seen["after_interrupt"]
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "{seen}"
    );
    assert_eq!(seen["send_enabled_again"], true, "{seen}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_settings_shows_the_doctors_failing_check() {
    let h = Harness::new(Script::new()).await;
    h.config("[browser]\nenabled = true\nexecutable = \"/nonexistent/chromium\"\n");
    let served = Served::start(&h).await;
    let seen = browse(&served, "doctor").await;
    let checks = seen["checks"].as_array().unwrap();
    let browser = checks
        .iter()
        .find(|c| c["name"] == "browser")
        .unwrap_or_else(|| panic!("no browser check: {seen}"));
    assert_eq!(browser["status"], "fail", "{browser}");
    assert_eq!(browser["shown"], "fail", "{browser}");
    assert!(
        browser["detail"]
            .as_str()
            .unwrap()
            .contains("apt-get install chromium"),
        "the fix is shown: {browser}"
    );
    let config = checks.iter().find(|c| c["name"] == "config").unwrap();
    assert_eq!(config["status"], "ok", "{config}");
    assert!(
        seen["summary"].as_str().unwrap().contains("failed"),
        "{seen}"
    );
    assert!(seen["phone_width"].as_u64().unwrap() <= 360, "{seen}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_serve_open_hands_the_login_url_to_browser() {
    let h = Harness::new(Script::new()).await;
    // A stand-in browser: records the URL it was given.
    let opened = h.home.path().join("opened.txt");
    let opener = h.home.path().join("fake-browser");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > {}\n", opened.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let served =
        Served::start_with(&h, &["--open"], &[("BROWSER", opener.to_str().unwrap())]).await;
    let mut url = String::new();
    for _ in 0..100 {
        url = std::fs::read_to_string(&opened).unwrap_or_default();
        if !url.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(url, served.login, "the browser got the printed login URL");
    // The URL logs that browser in: a session cookie, once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let first = client.get(&url).send().await.unwrap();
    assert_eq!(first.status().as_u16(), 303, "{first:?}");
    assert!(
        first
            .headers()
            .get("set-cookie")
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.starts_with("herald_session=")),
        "{first:?}"
    );
    let again = client.get(&url).send().await.unwrap();
    assert!(again.headers().get("set-cookie").is_none(), "{again:?}");
    served.stop().await;

    // Without --open nothing is started.
    std::fs::remove_file(&opened).unwrap();
    let served = Served::start_with(&h, &[], &[("BROWSER", opener.to_str().unwrap())]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!opened.exists(), "no browser without --open");
    served.stop().await;
}

/// Fills the store with `sessions` small sessions and one of `messages`
/// messages (tool calls among them, each with its stored `tool.started`
/// and `tool.completed` events, as a live run leaves them); returns the
/// big one's id.
fn fill_store(home: &Path, sessions: usize, messages: usize) -> String {
    use herald_protocol::{Message, ToolCall};
    use herald_store::{NewEvent, NewSession, SessionSource, Store};
    let mut store = Store::open(home.join("state.db")).unwrap();
    herald_store::bench::generate(&mut store, sessions, 2).unwrap();
    let id = "ses_webui_big".to_owned();
    store
        .create_session(&NewSession {
            id: id.clone(),
            parent_session_id: None,
            agent_id: None,
            source: SessionSource::Cli,
            cwd: "/home/dev/big".into(),
            model: "gpt-4.1-mini".into(),
            provider: "openai".into(),
            system_prompt: "You are herald.".into(),
        })
        .unwrap();
    let mut batch = Vec::new();
    let mut i = 0;
    while batch.len() < messages {
        batch.push(Message::user(format!(
            "Question {i}: how does the parser handle `{{` in strings?"
        )));
        if i % 5 == 0 {
            let call = ToolCall {
                id: format!("call_{i}"),
                name: "read_file".into(),
                arguments: format!("{{\"path\": \"src/parser_{i}.rs\"}}"),
            };
            batch.push(Message::assistant("", vec![call.clone()]));
            batch.push(Message::tool_result(
                &call,
                "fn parse(input: &str) -> Ast { todo!() }\n".repeat(20),
                false,
            ));
        }
        batch.push(Message::assistant(
            format!("## Answer {i}\n\nThe parser **skips** escaped braces:\n\n```rust\nlet depth = 0; // {i}\n```\n\n- first point\n- second point"),
            Vec::new(),
        ));
        i += 1;
    }
    batch.truncate(messages);
    store.append_messages(&id, &batch).unwrap();
    let mut events = Vec::new();
    for call in batch.iter().filter_map(|m| m.tool_call_id.as_deref()) {
        let n: u64 = call.trim_start_matches("call_").parse().unwrap();
        for (kind, payload) in [
            (
                "tool.started",
                json!({"type": "tool.started", "call_id": call, "name": "read_file", "arguments": "{}"}),
            ),
            (
                "tool.completed",
                json!({"type": "tool.completed", "call_id": call, "name": "read_file", "status": "ok",
                       "output_bytes": 860, "duration_ms": 1000 + n, "output": "fn parse"}),
            ),
        ] {
            events.push(NewEvent {
                agent_id: "root".into(),
                kind: kind.into(),
                payload: payload.to_string(),
                seq: None,
            });
        }
    }
    store.record_events(&id, &events).unwrap();
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_browser_stays_fast_with_large_stores_and_a_long_stream() {
    let mut long = String::new();
    for i in 0..2_500 {
        long.push_str(&format!("word{i} and some more words here. "));
        if i % 40 == 39 {
            long.push_str("\n\n");
        }
    }
    long.push_str("END-OF-STREAM");
    let h = Harness::new(
        Script::new().conversation("stream twenty thousand tokens", vec![Reply::text(long)]),
    )
    .await;
    let big = fill_store(h.home.path(), 10_000, 2_000);
    let served = Served::start(&h).await;
    h.server.set_pace(Some(Pace {
        first_token: Duration::from_millis(300),
        tokens_per_second: 2000.0,
    }));
    let seen = browse_with(&served, "bench", &[("BIG_SESSION", big.as_str())]).await;
    eprintln!("webui benchmark: {seen}");
    let number = |key: &str| {
        seen[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key}: {seen}"))
    };
    assert!(
        number("big_first_screen_ms") < 1000.0,
        "2,000-message session: {seen}"
    );
    assert!(
        number("list_first_screen_ms") < 1000.0,
        "10,000 sessions: {seen}"
    );
    assert!(number("stream_chars") > 75_000.0, "{seen}");
    // The stored calls show their durations (1,000 ms + the question
    // number, from their tool.completed events).
    let tool = seen["big_tool_info"].as_str().unwrap();
    assert!(tool.contains("read_file") && tool.contains(" s"), "{tool}");
    assert!(number("stream_updates") > 100.0, "it streamed: {seen}");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let sessions: Value = client
        .get(format!("{}/api/sessions?limit=1", served.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tokens = sessions["sessions"][0]["output_tokens"].as_f64().unwrap();
    eprintln!("webui benchmark: the long answer had {tokens} output tokens");
    // Rendering keeps up: 95% of the pieces are handled in the page within
    // half a second of the server sending them (a shared 2-core machine
    // has single hiccups), and the whole answer is drawn within a second
    // of its last piece arriving.
    assert!(number("delta_lag_p95_ms") < 500.0, "fell behind: {seen}");
    assert!(
        number("final_after_last_delta_ms") < 1000.0,
        "fell behind: {seen}"
    );
    eprintln!(
        "webui benchmark: the model needs {:.0} ms for it at this pace",
        300.0 + tokens / 2000.0 * 1000.0
    );
    served.stop().await;
}
