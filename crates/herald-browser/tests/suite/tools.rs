//! The browser tools against a real Chromium (Debian's `chromium`, which
//! `.ci/run` installs) and the local site of [`super::site`]. A machine
//! without a browser fails these tests: they never skip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use herald_browser::{Browser, BrowserSetup};
use herald_tools::{AgentState, ToolContext, ToolRegistry, ToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::site;

struct Rig {
    browser: Arc<Browser>,
    registry: ToolRegistry,
    ctx: ToolContext,
    dir: tempfile::TempDir,
}

fn require_chromium() {
    if let Err(err) = herald_browser::find_executable("") {
        panic!("these tests drive a real browser: {err}");
    }
}

impl Rig {
    fn new(allow_private: bool) -> Self {
        Self::with_rule(allow_private, None)
    }

    fn with_rule(
        allow_private: bool,
        navigation_rule: Option<herald_browser::NavigationRule>,
    ) -> Self {
        require_chromium();
        let dir = tempfile::tempdir().unwrap();
        let browser = Browser::new(BrowserSetup {
            executable: String::new(),
            cdp_url: String::new(),
            headless: true,
            policy: herald_web::AddressPolicy::new(allow_private, &[]),
            dir: dir.path().join("browser"),
            spill_dir: dir.path().join("snapshots"),
            navigation_timeout: Duration::from_secs(20),
            navigation_rule,
        });
        let mut registry = ToolRegistry::new(100_000);
        herald_browser::register(&mut registry, &browser);
        let ctx = ToolContext::new(
            AgentState::new(dir.path().to_path_buf()),
            CancellationToken::new(),
        );
        Self {
            browser,
            registry,
            ctx,
            dir,
        }
    }

    async fn call(&self, name: &str, args: Value) -> ToolResult {
        let tool = self.registry.get(name).unwrap();
        tokio::time::timeout(Duration::from_secs(60), tool.call(args, &self.ctx))
            .await
            .unwrap_or_else(|_| panic!("{name} did not finish within 60 s"))
    }

    async fn ok(&self, name: &str, args: Value) -> String {
        let result = self.call(name, args.clone()).await;
        assert!(!result.is_error, "{name} {args}: {}", result.content);
        result.content
    }

    async fn err(&self, name: &str, args: Value) -> String {
        let result = self.call(name, args.clone()).await;
        assert!(
            result.is_error,
            "{name} {args} should fail: {}",
            result.content
        );
        result.content
    }
}

/// The ref on the first snapshot line containing `needle`.
fn ref_of(snapshot: &str, needle: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{snapshot}"));
    let start = line
        .rfind("[e")
        .unwrap_or_else(|| panic!("no ref on {line:?}"));
    let end = start + line[start..].find(']').unwrap();
    line[start + 1..end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_dialogs_and_a_second_tab_end_in_a_screenshot() {
    let site = site::serve().await;
    let rig = Rig::new(true);
    let opened = rig.ok("browser_navigate", json!({"url": site.base})).await;
    assert!(opened.contains("\"Test shop\""), "{opened}");

    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(snap.starts_with("Tab t1: \"Test shop\""), "{snap}");
    assert!(snap.contains("- heading \"Test shop\" (level=1)"), "{snap}");
    assert!(snap.contains("new console messages"), "{snap}");
    let name = ref_of(&snap, "textbox \"Name\"");
    let gift = ref_of(&snap, "checkbox \"Gift wrap\"");
    let order = ref_of(&snap, "button \"Order\"");
    // Refs stay the same in a second snapshot of the page.
    let again = rig.ok("browser_snapshot", json!({})).await;
    assert_eq!(ref_of(&again, "button \"Order\""), order);

    let typed = rig
        .ok("browser_type", json!({"ref": name, "text": "Ada Lovelace"}))
        .await;
    assert!(typed.contains("Typed 12 characters"), "{typed}");
    rig.ok("browser_click", json!({"ref": gift})).await;
    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(
        snap.contains("value=\"Ada Lovelace\""),
        "the old value is replaced: {snap}"
    );
    let gift_line = snap
        .lines()
        .find(|l| l.contains("checkbox \"Gift wrap\""))
        .unwrap();
    assert!(
        gift_line.contains("checked") && !gift_line.contains("unchecked"),
        "{snap}"
    );

    let clicked = rig.ok("browser_click", json!({"ref": order})).await;
    assert!(clicked.contains("The page is now \"Thanks\""), "{clicked}");
    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(snap.contains("heading \"Thanks, Ada Lovelace\""), "{snap}");
    assert!(snap.contains("Ordered with gift wrap."), "{snap}");
    // The old page's refs are stale now.
    let stale = rig.err("browser_click", json!({"ref": order})).await;
    assert!(stale.contains("take a new browser_snapshot"), "{stale}");

    let back = rig.ok("browser_back", json!({})).await;
    assert!(back.contains("Test shop"), "{back}");
    let snap = rig.ok("browser_snapshot", json!({})).await;

    // An alert: reported by the click, shown atop the snapshot, answered.
    let hello = ref_of(&snap, "button \"Say hello\"");
    let clicked = rig.ok("browser_click", json!({"ref": hello})).await;
    assert!(
        clicked.contains("A alert dialog opened: \"Hello from the page\""),
        "{clicked}"
    );
    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(
        snap.contains("Dialog open (alert): \"Hello from the page\""),
        "{snap}"
    );
    let blocked = rig.err("browser_click", json!({"ref": hello})).await;
    assert!(blocked.contains("browser_dialog"), "{blocked}");
    let answered = rig.ok("browser_dialog", json!({"accept": true})).await;
    assert!(answered.contains("Accepted the alert dialog"), "{answered}");
    let none = rig.err("browser_dialog", json!({"accept": true})).await;
    assert!(none.contains("no dialog"), "{none}");

    // A confirm, dismissed: the page sees Cancel.
    let snap = rig.ok("browser_snapshot", json!({})).await;
    let delete = ref_of(&snap, "button \"Delete\"");
    rig.ok("browser_click", json!({"ref": delete})).await;
    rig.ok("browser_dialog", json!({"accept": false})).await;
    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(snap.contains("cancelled"), "{snap}");

    let console = rig.ok("browser_console", json!({"all": true})).await;
    assert!(console.contains("[log] shop ready"), "{console}");
    assert!(console.contains("[error] a test error"), "{console}");
    let title = rig
        .ok(
            "browser_console",
            json!({"expression": "document.title + '!'"}),
        )
        .await;
    assert!(title.contains("\"Test shop!\""), "{title}");
    let thrown = rig
        .ok("browser_console", json!({"expression": "nope()"}))
        .await;
    assert!(thrown.contains("threw: ReferenceError"), "{thrown}");

    // The link opens a second tab.
    let link = ref_of(&snap, "link \"Open the second page\"");
    let clicked = rig.ok("browser_click", json!({"ref": link})).await;
    assert!(clicked.contains("A new tab opened: t2"), "{clicked}");
    assert!(clicked.contains("/second"), "{clicked}");
    let tabs = rig.ok("browser_tabs", json!({})).await;
    assert!(
        tabs.contains("t1 \"Test shop\"") && tabs.contains("(active)"),
        "{tabs}"
    );
    let switched = rig
        .ok("browser_tabs", json!({"action": "switch", "tab": "t2"}))
        .await;
    assert!(switched.contains("t2 \"Second page\""), "{switched}");
    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(snap.contains("Welcome to the second tab."), "{snap}");
    assert!(snap.contains("Other tabs: t1"), "{snap}");

    let shot = rig.call("browser_screenshot", json!({})).await;
    assert!(!shot.is_error, "{}", shot.content);
    assert!(
        shot.content.contains("PNG screenshot of the viewport"),
        "{}",
        shot.content
    );
    assert_eq!(shot.images.len(), 1);
    assert_eq!(shot.images[0].mime_type, "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(shot.images[0].data.as_bytes())
        .unwrap();
    let png = herald_testkit::png::decode(&bytes).unwrap();
    // The window is 1280×800; the viewport is what the window leaves.
    assert!(
        png.width == 1280 && (600..=800).contains(&png.height),
        "{}x{}",
        png.width,
        png.height
    );
    // The second page's blue background (#2050c0), away from its text.
    assert_eq!(png.pixel(1200, 700), Some((0x20, 0x50, 0xc0, 255)));

    let pid = rig.browser.pid().await.unwrap();
    rig.browser.close().await;
    herald_testkit::assert_gone_within(
        &[i32::try_from(pid).unwrap()],
        "the browser",
        Duration::from_secs(5),
    )
    .await;
    let after = rig.err("browser_snapshot", json!({})).await;
    assert!(after.contains("closed with the session"), "{after}");
}

/// The session's permission rules hold for the page's own navigations: a
/// script (or a link) sending the tab to a host a rule refuses is stopped,
/// and the console says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_cannot_navigate_to_a_host_the_rules_refuse() {
    let site = site::serve().await;
    let rule = herald_browser::NavigationRule(std::sync::Arc::new(|url: &url::Url| {
        (url.host_str() == Some("localhost")).then(|| {
            "browser_navigate of localhost is denied by the rule `browser_navigate(domain:localhost)`"
                .to_owned()
        })
    }));
    let rig = Rig::with_rule(true, Some(rule));
    rig.ok("browser_navigate", json!({"url": site.base})).await;
    let port = site.base.rsplit(':').next().unwrap().trim_end_matches('/');
    rig.ok(
        "browser_console",
        json!({"expression": format!("location.href = 'http://localhost:{port}/second'; 1")}),
    )
    .await;
    herald_testkit::wait_until_async(
        "the refused navigation in the console",
        Duration::from_secs(10),
        async || {
            rig.ok("browser_console", json!({"all": true}))
                .await
                .contains("blocked Document request to http://localhost")
        },
    )
    .await;
    let console = rig.ok("browser_console", json!({"all": true})).await;
    assert!(
        console.contains("browser_navigate(domain:localhost)"),
        "{console}"
    );
    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(
        snap.contains("\"Test shop\""),
        "still on the first page: {snap}"
    );
    // A host the rules allow navigates as before.
    rig.ok(
        "browser_console",
        json!({"expression": format!("location.href = '{}/second'; 1", site.base)}),
    )
    .await;
    herald_testkit::wait_until_async(
        "the allowed navigation",
        Duration::from_secs(10),
        async || {
            !rig.ok("browser_snapshot", json!({}))
                .await
                .contains("\"Test shop\"")
        },
    )
    .await;
    rig.browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_refused_before_and_during_navigation() {
    let site = site::serve().await;
    let rig = Rig::new(false);
    let refused = rig.err("browser_navigate", json!({"url": site.base})).await;
    assert!(refused.contains("loopback"), "{refused}");
    assert!(refused.contains("allow_private"), "{refused}");
    let refused = rig
        .err("browser_navigate", json!({"url": "file:///etc/passwd"}))
        .await;
    assert!(refused.contains("only http and https"), "{refused}");
    let refused = rig
        .err(
            "browser_tabs",
            json!({"action": "new", "url": "http://169.254.169.254/"}),
        )
        .await;
    assert!(refused.contains("metadata"), "{refused}");

    // A page that sends itself (or a request) to a private address is
    // stopped by the interception, not only by the tool's own check.
    let fetched = rig
        .ok(
            "browser_console",
            json!({"expression": format!("fetch('{}/').then(() => 'fetched', e => 'failed: ' + e)", site.base)}),
        )
        .await;
    assert!(fetched.contains("failed: TypeError"), "{fetched}");
    let moved = rig
        .ok(
            "browser_console",
            json!({"expression": format!("location.href = '{}/'; 1", site.base)}),
        )
        .await;
    assert!(moved.contains("Result:\n1"), "{moved}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let console = rig.ok("browser_console", json!({"all": true})).await;
    assert!(
        console.contains("[herald] blocked Document request to http://127.0.0.1"),
        "{console}"
    );
    assert!(
        console.contains("blocked XHR request") || console.contains("blocked Fetch request"),
        "{console}"
    );
    assert_eq!(
        site.home_hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the site was never reached"
    );

    // A tab the page opens is guarded from its first request on.
    rig.ok(
        "browser_console",
        json!({"expression": "window.open('http://169.254.169.254/latest/meta-data/'); 1"}),
    )
    .await;
    herald_testkit::wait_until_async(
        "a tab opened by the page",
        Duration::from_secs(10),
        async || rig.ok("browser_tabs", json!({})).await.contains("t2"),
    )
    .await;
    rig.ok("browser_tabs", json!({"action": "switch", "tab": "t2"}))
        .await;
    herald_testkit::wait_until_async(
        "the metadata address refused in the new tab",
        Duration::from_secs(10),
        async || {
            rig.ok("browser_console", json!({"all": true}))
                .await
                .contains("blocked Document request to http://169.254.169.254/")
        },
    )
    .await;
    rig.browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_page_is_windowed_with_the_whole_outline_in_a_file() {
    let site = site::serve().await;
    let rig = Rig::new(true);
    rig.ok(
        "browser_navigate",
        json!({"url": format!("{}/long", site.base)}),
    )
    .await;
    let snap = rig.ok("browser_snapshot", json!({"max_chars": 5000})).await;
    assert!(snap.chars().count() < 6_000, "{}", snap.len());
    assert!(snap.contains("link \"Item number 0\""), "{snap}");
    assert!(
        snap.contains("button \"Last button\""),
        "the tail is kept: {snap}"
    );
    let path = snap
        .split("The whole snapshot is in ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap();
    assert!(path.starts_with(rig.dir.path().join("snapshots").to_str().unwrap()));
    let whole = std::fs::read_to_string(path).unwrap();
    assert!(whole.contains("link \"Item number 1500\""));
    // A ref from the left-out middle works.
    let middle = ref_of(&whole, "link \"Item number 1500\"");
    let clicked = rig.ok("browser_click", json!({"ref": middle})).await;
    assert!(clicked.contains("/item/1500"), "{clicked}");

    // Closing the last tab: the next action opens a new one.
    let closed = rig.ok("browser_tabs", json!({"action": "close"})).await;
    assert!(closed.contains("No tabs"), "{closed}");
    let opened = rig.ok("browser_navigate", json!({"url": site.base})).await;
    assert!(opened.contains("Test shop"), "{opened}");

    // A browser that died is started again, and the result says so.
    let pid = rig.browser.pid().await.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    herald_testkit::wait_until_async(
        "the connection to close",
        Duration::from_secs(10),
        async || !rig.browser.is_running().await,
    )
    .await;
    let again = rig.ok("browser_navigate", json!({"url": site.base})).await;
    assert!(again.contains("had exited"), "{again}");
    assert!(again.contains("Test shop"), "{again}");
    assert_ne!(rig.browser.pid().await, Some(pid));
    rig.browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_scrolling_and_element_screenshots() {
    let site = site::serve().await;
    let rig = Rig::new(true);
    rig.ok("browser_navigate", json!({"url": site.base})).await;
    let snap = rig.ok("browser_snapshot", json!({})).await;
    let name = ref_of(&snap, "textbox \"Name\"");
    rig.ok(
        "browser_type",
        json!({"ref": name, "text": "Bob", "clear": false}),
    )
    .await;
    let pressed = rig
        .ok("browser_press", json!({"key": "Enter", "ref": name}))
        .await;
    assert!(
        pressed.contains("\"Thanks\""),
        "Enter submits the form: {pressed}"
    );
    let snap = rig.ok("browser_snapshot", json!({})).await;
    assert!(snap.contains("Thanks, oldBob"), "{snap}");
    let bad = rig.err("browser_press", json!({"key": "Hyper+q"})).await;
    assert!(bad.contains("unknown key"), "{bad}");

    rig.ok(
        "browser_navigate",
        json!({"url": format!("{}/long", site.base)}),
    )
    .await;
    let scrolled = rig
        .ok(
            "browser_scroll",
            json!({"direction": "down", "amount": 500}),
        )
        .await;
    assert!(scrolled.contains("viewport shows y 500–"), "{scrolled}");
    let snap = rig.ok("browser_snapshot", json!({})).await;
    let last = ref_of(&snap, "button \"Last button\"");
    let into_view = rig.ok("browser_scroll", json!({"ref": last})).await;
    assert!(into_view.contains("into view"), "{into_view}");
    let shot = rig.call("browser_screenshot", json!({"ref": last})).await;
    assert!(!shot.is_error, "{}", shot.content);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(shot.images[0].data.as_bytes())
        .unwrap();
    let png = herald_testkit::png::decode(&bytes).unwrap();
    assert!(
        png.width < 300 && png.height < 100,
        "{}x{}",
        png.width,
        png.height
    );
    rig.browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_to_a_running_browser_leaves_it_running() {
    use tokio::io::AsyncBufReadExt;
    require_chromium();
    let site = site::serve().await;
    let profile = tempfile::tempdir().unwrap();
    let executable = herald_browser::find_executable("").unwrap();
    let mut cmd = tokio::process::Command::new(executable);
    cmd.args([
        "--headless=new",
        "--remote-debugging-port=0",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "about:blank",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .stderr(std::process::Stdio::piped())
    .kill_on_drop(true);
    if nix::unistd::geteuid().is_root() {
        cmd.arg("--no-sandbox");
    }
    let mut user_browser = cmd.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(user_browser.stderr.take().unwrap()).lines();
    let ws = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                return url.trim().to_owned();
            }
        }
        panic!("the browser printed no DevTools address");
    })
    .await
    .unwrap();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let port = ws.split(':').nth(2).unwrap().split('/').next().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let browser = Browser::new(BrowserSetup {
        executable: String::new(),
        cdp_url: format!("http://127.0.0.1:{port}"),
        headless: true,
        policy: herald_web::AddressPolicy::new(true, &[]),
        dir: dir.path().join("browser"),
        spill_dir: dir.path().join("snapshots"),
        navigation_timeout: Duration::from_secs(20),
        navigation_rule: None,
    });
    let mut registry = ToolRegistry::new(100_000);
    herald_browser::register(&mut registry, &browser);
    let ctx = ToolContext::new(
        AgentState::new(dir.path().to_path_buf()),
        CancellationToken::new(),
    );
    let navigate = registry.get("browser_navigate").unwrap();
    let result = navigate.call(json!({"url": site.base}), &ctx).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("Test shop"), "{}", result.content);
    let tabs = registry
        .get("browser_tabs")
        .unwrap()
        .call(json!({}), &ctx)
        .await;
    // Only the tab herald opened is herald's; the user's blank tab is not listed.
    assert_eq!(tabs.content.matches("\nt").count(), 1, "{}", tabs.content);
    assert_eq!(browser.pid().await, None, "herald launched nothing");
    browser.close().await;
    assert!(
        user_browser.try_wait().unwrap().is_none(),
        "closing the session left the user's browser running"
    );
    user_browser.kill().await.unwrap();
}
