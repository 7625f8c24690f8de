//! The browser toolset through the real binary, against Debian's
//! `chromium` (installed by `.ci/run`; these tests fail without it) and a
//! local site: a form, an alert, a link opening a second tab, and a
//! screenshot the test decodes. The browser is gone when herald is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use base64::Engine;
use herald_testkit::{Reply, RequestView, Script};
use serde_json::json;

use crate::common::{Harness, LiveRun, Wire, last, sleeper_command, stderr, tool_results};

const HOME: &str = r#"<!doctype html>
<html><head><title>Test shop</title></head>
<body>
<h1>Test shop</h1>
<form action="/submitted" method="get">
  <label for="name">Name</label> <input id="name" name="name">
  <button type="submit">Order</button>
</form>
<button onclick="alert('Hello from the page')">Say hello</button>
<a href="/second" target="_blank">Open the second page</a>
</body></html>"#;

const SECOND: &str = r#"<!doctype html>
<html><head><title>Second page</title></head>
<body style="background:#2050c0"><h1>Second page</h1></body></html>"#;

async fn serve() -> String {
    let app = Router::new()
        .route("/", get(|| async { Html(HOME) }))
        .route("/second", get(|| async { Html(SECOND) }))
        .route(
            "/submitted",
            get(|uri: axum::http::Uri| async move {
                let name = uri
                    .query()
                    .and_then(|q| q.strip_prefix("name="))
                    .unwrap_or_default()
                    .replace('+', " ");
                Html(format!(
                    "<!doctype html><html><head><title>Thanks</title></head><body><h1>Thanks, {name}</h1></body></html>"
                ))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    base
}

fn require_chromium() {
    if let Err(err) = herald_browser::find_executable("") {
        panic!("the browser tests need a browser: {err}");
    }
}

/// The processes running a browser with this home's profile.
fn browser_pids(home: &Path) -> Vec<i32> {
    let profile = format!("--user-data-dir={}", home.join("browser").display());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&profile))
        })
        .collect()
}

/// The ref on the latest result line containing `needle`.
fn find_ref(view: &RequestView, needle: &str) -> String {
    for (_, text) in view.tool_results().collect::<Vec<_>>().into_iter().rev() {
        if let Some(line) = text
            .lines()
            .find(|l| l.contains(needle) && l.contains("[e"))
        {
            let start = line.rfind("[e").unwrap();
            let end = start + line[start..].find(']').unwrap();
            return line[start + 1..end].to_owned();
        }
    }
    panic!("no result shows {needle:?}");
}

/// The model: fills the form, meets the alert, opens the second tab and
/// takes a screenshot of it.
fn shopper(base: String) -> Script {
    Script::new().responder(move |view| match view.turn {
        0 => Reply::tool("browser_navigate", json!({"url": base})),
        1 | 4 | 6 | 8 => Reply::tool("browser_snapshot", json!({})),
        2 => Reply::tool(
            "browser_type",
            json!({"ref": find_ref(view, "textbox \"Name\""), "text": "Ada Lovelace"}),
        ),
        3 => Reply::tool(
            "browser_click",
            json!({"ref": find_ref(view, "button \"Order\"")}),
        ),
        5 => Reply::tool("browser_back", json!({})),
        7 => Reply::tool(
            "browser_click",
            json!({"ref": find_ref(view, "button \"Say hello\"")}),
        ),
        9 => Reply::tool("browser_dialog", json!({"accept": true})),
        10 => Reply::tool(
            "browser_click",
            json!({"ref": find_ref(view, "link \"Open the second page\"")}),
        ),
        11 => Reply::tool("browser_tabs", json!({"action": "switch", "tab": "t2"})),
        12 => Reply::tool("browser_screenshot", json!({})),
        _ => Reply::text("The second page is blue."),
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_fills_a_form_answers_a_dialog_and_screenshots_a_second_tab() {
    require_chromium();
    let base = serve().await;
    let h = Harness::new(shopper(base.clone())).await;
    h.config("[web]\nallow_private = true\n");
    let (output, events) = h
        .run_json(
            Wire::OpenAi,
            &["--toolsets", "browser,file"],
            "buy something in the test shop",
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "The second page is blue.");

    let requests = h.requests_of("buy something");
    assert_eq!(requests.len(), 14);
    let tools: Vec<String> = RequestView::from_body(requests[0].api, &requests[0].body)
        .unwrap()
        .tool_names;
    assert!(tools.contains(&"browser_snapshot".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"terminal".to_owned()), "{tools:?}");
    let results = tool_results(&requests[13].body);
    assert!(
        results[0].contains("Opened \"Test shop\""),
        "{}",
        results[0]
    );
    assert!(results[1].contains("textbox \"Name\""), "{}", results[1]);
    assert!(results[2].contains("Typed 12 characters"), "{}", results[2]);
    assert!(
        results[3].contains("The page is now \"Thanks\""),
        "{}",
        results[3]
    );
    assert!(
        results[4].contains("heading \"Thanks, Ada Lovelace\""),
        "{}",
        results[4]
    );
    assert!(
        results[5].contains("Went back to \"Test shop\""),
        "{}",
        results[5]
    );
    assert!(
        results[7].contains("A alert dialog opened: \"Hello from the page\""),
        "{}",
        results[7]
    );
    assert!(
        results[8].contains("Dialog open (alert): \"Hello from the page\""),
        "{}",
        results[8]
    );
    assert!(
        results[9].contains("Accepted the alert dialog"),
        "{}",
        results[9]
    );
    assert!(
        results[10].contains("A new tab opened: t2"),
        "{}",
        results[10]
    );
    assert!(
        results[11].contains("t2 \"Second page\""),
        "{}",
        results[11]
    );
    assert!(results[12].contains("PNG screenshot"), "{}", results[12]);

    // The screenshot went to the model as an image; it decodes to the
    // second page's blue.
    let view = RequestView::from_body(requests[13].api, &requests[13].body).unwrap();
    let images: Vec<&(String, String)> = view.images().collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].0, "image/png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(images[0].1.as_bytes())
        .unwrap();
    let png = herald_testkit::png::decode(&png).unwrap();
    assert_eq!(png.width, 1280);
    assert_eq!(
        png.pixel(1200, png.height - 20),
        Some((0x20, 0x50, 0xc0, 255))
    );

    // The session's browser ended with the run.
    herald_testkit::wait_until_async(
        "the browser to be gone",
        Duration::from_secs(5),
        async || browser_pids(h.home.path()).is_empty(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_toolset_is_opt_in_and_loopback_is_refused_without_allow_private() {
    require_chromium();
    let base = serve().await;
    let script = Script::new()
        .conversation("plain session", vec![Reply::text("ok")])
        .conversation(
            "open the local shop",
            vec![
                Reply::tool("browser_navigate", json!({"url": base})),
                Reply::text("refused"),
            ],
        );
    let h = Harness::new(script).await;
    let (output, _) = h.run_json(Wire::OpenAi, &[], "plain session").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let plain = h.requests_of("plain session");
    let names = RequestView::from_body(plain[0].api, &plain[0].body)
        .unwrap()
        .tool_names;
    assert!(
        !names.iter().any(|n| n.starts_with("browser_")),
        "the browser toolset is off by default: {names:?}"
    );

    h.config("[browser]\nenabled = true\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "open the local shop").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.requests_of("open the local shop");
    let results = tool_results(&requests[1].body);
    assert!(results[0].contains("loopback"), "{}", results[0]);
    assert!(results[0].contains("allow_private"), "{}", results[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_run_takes_its_browser_with_it() {
    require_chromium();
    let base = serve().await;
    let h = Harness::new(Script::new().conversation(
        "open the shop and wait",
        vec![
            Reply::tool("browser_navigate", json!({"url": base})),
            Reply::tool("terminal", json!({"command": sleeper_command("wait.pids")})),
            Reply::text("unreachable"),
        ],
    ))
    .await;
    h.config("[browser]\nenabled = true\n[web]\nallow_private = true\n");
    let run = LiveRun::until(&h, Wire::OpenAi, "open the shop and wait", "tool.started").await;
    let sleepers = h.sleeper_pids("wait.pids").await;
    let browser = browser_pids(h.home.path());
    assert!(!browser.is_empty(), "no browser runs for this home");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(run.child.id().unwrap()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (status, _) = run.finish().await;
    assert_eq!(status.code(), Some(143));
    crate::common::assert_gone(&sleepers, "the terminal command").await;
    crate::common::assert_gone(&browser, "the browser").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_finds_the_browser_or_says_how_to_install_one() {
    require_chromium();
    let h = Harness::new(Script::new()).await;
    let check = |report: &serde_json::Value| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "browser")
            .cloned()
            .unwrap_or_else(|| panic!("no browser check: {report}"))
    };
    let doctor = async |h: &Harness| {
        let mut cmd = h.command(Wire::OpenAi);
        let output = cmd.args(["doctor", "--json"]).output().await.unwrap();
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        (output.status, report)
    };
    let (_, report) = doctor(&h).await;
    let found = check(&report);
    assert_eq!(found["status"], "ok", "{found}");
    let detail = found["detail"].as_str().unwrap();
    assert!(
        detail.contains("Chromium") || detail.contains("Chrome"),
        "{detail}"
    );
    assert!(detail.contains("toolset is off"), "{detail}");

    h.config("[browser]\nenabled = true\nexecutable = \"/nonexistent/chromium\"\n");
    let (status, report) = doctor(&h).await;
    let missing = check(&report);
    assert_eq!(missing["status"], "fail", "{missing}");
    assert!(
        missing["detail"]
            .as_str()
            .unwrap()
            .contains("apt-get install chromium"),
        "{missing}"
    );
    assert!(!status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_browser_of_a_killed_herald_is_ended_by_the_next_start() {
    require_chromium();
    let base = serve().await;
    let h = Harness::new(
        Script::new()
            .conversation(
                "open the shop and hang",
                vec![
                    Reply::tool("browser_navigate", json!({"url": base})),
                    Reply::tool("terminal", json!({"command": sleeper_command("hang.pids")})),
                    Reply::text("unreachable"),
                ],
            )
            .conversation("next start", vec![Reply::text("ok")]),
    )
    .await;
    h.config("[browser]\nenabled = true\n[web]\nallow_private = true\n");
    let run = LiveRun::until(&h, Wire::OpenAi, "open the shop and hang", "tool.started").await;
    let sleepers = h.sleeper_pids("hang.pids").await;
    let browser = browser_pids(h.home.path());
    assert!(!browser.is_empty(), "no browser runs for this home");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(run.child.id().unwrap()).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (status, _) = run.finish().await;
    assert_eq!(status.code(), None, "killed by a signal");
    assert!(
        browser.iter().any(|&pid| !herald_testkit::is_gone(pid)),
        "nothing ended the browser yet"
    );
    let (output, _) = h.run_json(Wire::OpenAi, &[], "next start").await;
    assert!(output.status.success(), "{}", stderr(&output));
    crate::common::assert_gone(&browser, "the dead run's browser").await;
    crate::common::kill_leftovers(&sleepers);
}
