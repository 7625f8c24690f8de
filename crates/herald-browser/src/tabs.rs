//! What herald knows of the browser's tabs, kept current from the
//! browser's events: each tab's page, loading state, console, pending
//! dialog, refs and the requests the SSRF guard refused. One task applies
//! the events in order; the actions read the state and wait on its changes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use herald_web::AddressPolicy;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use url::Url;

use crate::cdp::{Connection, Event};
use crate::snapshot::Refs;

/// Console entries kept per tab (the oldest go first).
const CONSOLE_ENTRIES: usize = 200;
/// Longest console entry kept.
const CONSOLE_CHARS: usize = 2_000;
/// Refused requests remembered per tab.
const BLOCKED_ENTRIES: usize = 50;
/// Limit of the calls that set a new target up.
const SETUP_LIMIT: Duration = Duration::from_secs(10);
/// How long a guard verdict for a host is reused.
const GUARD_TTL: Duration = Duration::from_secs(30);

/// A JavaScript dialog waiting for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// Its message.
    pub message: String,
    /// A prompt's default text.
    pub default_prompt: String,
}

/// One console message (or uncaught exception, or browser log entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleEntry {
    /// `log`, `error`, `warning`, `exception`, …
    pub level: String,
    /// The text.
    pub text: String,
}

/// One tab (a page target).
#[derive(Debug)]
pub struct Tab {
    /// `t1`, `t2`, … in the order tabs appeared.
    pub number: u32,
    pub target_id: String,
    pub session_id: String,
    pub url: String,
    pub title: String,
    /// Set up (domains enabled, the guard in place).
    pub ready: bool,
    pub refs: Refs,
    pub console: VecDeque<ConsoleEntry>,
    /// Console entries ever added, and how many of them were read.
    pub console_total: u64,
    pub console_read: u64,
    pub dialog: Option<Dialog>,
    /// Main-frame navigations (new documents and in-page moves).
    pub navigations: u64,
    /// Main-frame loads started and finished.
    pub started: u64,
    pub loading: bool,
    /// HTTP status of the main document.
    pub status: Option<u16>,
    /// Requests the guard refused: `url: reason`.
    pub blocked: VecDeque<String>,
    pub blocked_total: u64,
    pub crashed: bool,
}

impl Tab {
    fn new(number: u32, target_id: String, session_id: String, url: String, title: String) -> Self {
        Self {
            number,
            target_id,
            session_id,
            url,
            title,
            ready: false,
            refs: Refs::default(),
            console: VecDeque::new(),
            console_total: 0,
            console_read: 0,
            dialog: None,
            navigations: 0,
            started: 0,
            loading: false,
            status: None,
            blocked: VecDeque::new(),
            blocked_total: 0,
            crashed: false,
        }
    }

    fn log(&mut self, level: &str, text: &str) {
        if self.console.len() == CONSOLE_ENTRIES {
            self.console.pop_front();
        }
        let mut kept: String = text.chars().take(CONSOLE_CHARS).collect();
        if kept.len() < text.len() {
            kept.push('…');
        }
        self.console.push_back(ConsoleEntry {
            level: level.to_owned(),
            text: kept,
        });
        self.console_total += 1;
    }

    /// `t2 "Title" https://…`, for messages.
    pub fn describe(&self) -> String {
        let title = if self.title.is_empty() {
            "(untitled)".to_owned()
        } else {
            format!("{:?}", self.title)
        };
        format!("t{} {title} {}", self.number, self.url)
    }
}

/// Every tab, and which one the actions work on.
#[derive(Debug, Default)]
pub struct Tabs {
    pub list: Vec<Tab>,
    /// The active tab's target id.
    pub active: Option<String>,
    /// Sessions of frames and workers → the target id of their tab.
    children: HashMap<String, String>,
    next_number: u32,
    /// Page targets herald created or that one of its tabs opened (when
    /// attached to a browser the user runs, other tabs are left alone).
    pub ours: HashSet<String>,
}

impl Tabs {
    /// Whether any tab was ever open.
    pub fn seen_any(&self) -> bool {
        self.next_number > 0
    }

    /// The tab of `target_id`.
    pub fn get(&self, target_id: &str) -> Option<&Tab> {
        self.list.iter().find(|t| t.target_id == target_id)
    }

    /// The tab of `target_id`, to change.
    pub fn get_mut(&mut self, target_id: &str) -> Option<&mut Tab> {
        self.list.iter_mut().find(|t| t.target_id == target_id)
    }

    /// The tab `session` belongs to (its own session or one of its
    /// frames' or workers').
    fn by_session(&mut self, session: &str) -> Option<&mut Tab> {
        let target = self.children.get(session).cloned();
        self.list
            .iter_mut()
            .find(|t| t.session_id == session || target.as_deref() == Some(t.target_id.as_str()))
    }

    /// The tab named `t2` (or `2`).
    pub fn by_name(&self, name: &str) -> Option<&Tab> {
        let number: u32 = name.trim().trim_start_matches('t').parse().ok()?;
        self.list.iter().find(|t| t.number == number)
    }

    fn remove(&mut self, target_id: &str) {
        self.list.retain(|t| t.target_id != target_id);
        self.children.retain(|_, owner| owner != target_id);
        if self.active.as_deref() == Some(target_id) {
            self.active = None;
        }
    }
}

/// The SSRF guard for requests the pages make, with a short cache of
/// verdicts per host (a page loads many resources from one host).
#[derive(Debug)]
pub struct Guard {
    pub policy: AddressPolicy,
    /// The permission rules a page's own navigations pass (a click, a
    /// form, a script), as `browser_navigate` calls do.
    rule: Option<crate::NavigationRule>,
    cache: Mutex<HashMap<String, (Instant, Option<String>)>>,
}

impl Guard {
    /// A guard applying `policy`.
    pub fn new(policy: AddressPolicy) -> Self {
        Self {
            policy,
            rule: None,
            cache: Mutex::default(),
        }
    }

    /// This guard, also judging the page's navigations by `rule`.
    #[must_use]
    pub fn with_rule(mut self, rule: Option<crate::NavigationRule>) -> Self {
        self.rule = rule;
        self
    }

    /// Why a request of a page must not be made: the navigation rule for
    /// documents (`document`), then the address guard.
    pub async fn refusal_of(&self, raw: &str, document: bool) -> Option<String> {
        if document
            && let Some(rule) = &self.rule
            && let Ok(url) = Url::parse(raw)
            && matches!(url.scheme(), "http" | "https")
            && let Some(why) = (rule.0)(&url)
        {
            return Some(why);
        }
        self.refusal(raw).await
    }

    /// Why a request to `raw` must not be made, or `None`. Only http(s)
    /// and ws(s) are checked; other schemes never reach the network.
    pub async fn refusal(&self, raw: &str) -> Option<String> {
        let mut url = Url::parse(raw).ok()?;
        match url.scheme() {
            "http" | "https" => {}
            "ws" => url.set_scheme("http").ok()?,
            "wss" => url.set_scheme("https").ok()?,
            _ => return None,
        }
        let key = format!(
            "{}:{}",
            url.host_str().unwrap_or_default(),
            url.port_or_known_default().unwrap_or(0)
        );
        {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((at, verdict)) = cache.get(&key)
                && at.elapsed() < GUARD_TTL
            {
                return verdict.clone();
            }
        }
        let verdict = self
            .policy
            .check_url_resolved(&url)
            .await
            .err()
            .map(|e| e.to_string());
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() > 1_000 {
            cache.clear();
        }
        cache.insert(key, (Instant::now(), verdict.clone()));
        verdict
    }
}

/// The state the event task keeps and the actions read.
#[derive(Debug)]
pub struct Shared {
    tabs: Mutex<Tabs>,
    changed: watch::Sender<u64>,
    /// `None` when private addresses are allowed (nothing to intercept).
    pub guard: Option<Arc<Guard>>,
    /// herald launched the browser and owns every tab in it.
    pub own_all: bool,
}

impl Shared {
    /// Empty state.
    pub fn new(guard: Option<Arc<Guard>>, own_all: bool) -> Arc<Self> {
        Arc::new(Self {
            tabs: Mutex::default(),
            changed: watch::channel(0).0,
            guard,
            own_all,
        })
    }

    /// The tabs, locked (never across an await).
    pub fn tabs(&self) -> MutexGuard<'_, Tabs> {
        self.tabs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the tabs and wakes whoever waits on a change.
    pub fn update<T>(&self, change: impl FnOnce(&mut Tabs) -> T) -> T {
        let out = change(&mut self.tabs());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        out
    }

    /// Waits until `check` finds what it looks for in the tabs, at most
    /// `limit`; returns its last answer.
    pub async fn wait_for<T>(
        &self,
        limit: Duration,
        mut check: impl FnMut(&Tabs) -> Option<T>,
    ) -> Option<T> {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(found) = check(&self.tabs()) {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return check(&self.tabs()),
            }
        }
    }
}

/// Applies the browser's events to `shared` until the connection closes.
pub async fn run_events(
    shared: Arc<Shared>,
    conn: Arc<Connection>,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    while let Some(event) = events.recv().await {
        handle(&shared, &conn, event);
    }
    // The browser is gone: nobody should wait for it any more.
    shared.update(|tabs| {
        for tab in &mut tabs.list {
            tab.loading = false;
        }
    });
}

fn str_of<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn handle(shared: &Arc<Shared>, conn: &Arc<Connection>, event: Event) {
    tracing::trace!(method = %event.method, session = ?event.session_id, "browser event");
    let params = &event.params;
    let session = event.session_id.as_deref();
    match event.method.as_str() {
        "Target.attachedToTarget" => attached(shared, conn, session, params),
        "Target.detachedFromTarget" => {
            let detached = str_of(params, "/sessionId");
            shared.update(|tabs| {
                if let Some(target) = tabs
                    .list
                    .iter()
                    .find(|t| t.session_id == detached)
                    .map(|t| t.target_id.clone())
                {
                    tabs.remove(&target);
                }
                tabs.children.remove(detached);
            });
        }
        "Target.targetDestroyed" => {
            let target = str_of(params, "/targetId").to_owned();
            shared.update(|tabs| tabs.remove(&target));
        }
        "Target.targetInfoChanged" => {
            let info = &params["targetInfo"];
            let target = str_of(info, "/targetId");
            shared.update(|tabs| {
                if let Some(tab) = tabs.get_mut(target) {
                    tab.url = str_of(info, "/url").to_owned();
                    tab.title = str_of(info, "/title").to_owned();
                }
            });
        }
        "Target.targetCreated" => created(shared, conn, params),
        _ => {
            if let Some(session) = session {
                page_event(shared, conn, session, &event);
            }
        }
    }
}

/// A new target in a browser herald attached to (not one it launched): a
/// page one of herald's tabs opened is herald's too, so it is attached,
/// guarded and listed; the user's own tabs are left alone.
fn created(shared: &Arc<Shared>, conn: &Arc<Connection>, params: &Value) {
    if shared.own_all {
        return;
    }
    let info = &params["targetInfo"];
    let opener = str_of(info, "/openerId");
    if str_of(info, "/type") != "page" || opener.is_empty() {
        return;
    }
    let target = str_of(info, "/targetId").to_owned();
    let adopt = shared.update(|tabs| {
        let adopt = tabs.ours.contains(opener) && !tabs.ours.contains(&target);
        if adopt {
            tabs.ours.insert(target.clone());
        }
        adopt
    });
    if adopt {
        let conn = Arc::clone(conn);
        tokio::spawn(async move {
            let _ = conn
                .call(
                    "Target.attachToTarget",
                    json!({ "targetId": target, "flatten": true }),
                    None,
                    SETUP_LIMIT,
                )
                .await;
        });
    }
}

fn attached(shared: &Arc<Shared>, conn: &Arc<Connection>, parent: Option<&str>, params: &Value) {
    let session = str_of(params, "/sessionId").to_owned();
    let info = &params["targetInfo"];
    let kind = str_of(info, "/type").to_owned();
    let target = str_of(info, "/targetId").to_owned();
    let waiting = params
        .get("waitingForDebugger")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if kind == "page" && parent.is_none() {
        let ours = shared.update(|tabs| {
            let ours = shared.own_all || tabs.ours.contains(&target);
            if ours && tabs.get(&target).is_none() {
                tabs.next_number += 1;
                let number = tabs.next_number;
                tabs.list.push(Tab::new(
                    number,
                    target.clone(),
                    session.clone(),
                    str_of(info, "/url").to_owned(),
                    str_of(info, "/title").to_owned(),
                ));
            }
            ours
        });
        let conn = Arc::clone(conn);
        let shared = Arc::clone(shared);
        let url = str_of(info, "/url").to_owned();
        tokio::spawn(async move {
            if ours {
                set_up_page(&shared, &conn, &target, &session, waiting, &url).await;
            } else {
                // Auto-attach found a tab of the user's: leave it alone.
                let _ = conn
                    .call(
                        "Target.detachFromTarget",
                        json!({ "sessionId": session }),
                        None,
                        SETUP_LIMIT,
                    )
                    .await;
            }
        });
        return;
    }
    // A frame, a worker, or a service worker of the browser.
    if let Some(parent) = parent {
        shared.update(|tabs| {
            if let Some(owner) = tabs.by_session(parent).map(|t| t.target_id.clone()) {
                tabs.children.insert(session.clone(), owner);
            }
        });
    }
    let conn = Arc::clone(conn);
    let guarded = shared.guard.is_some();
    tokio::spawn(async move {
        let call = |method: &'static str, params: Value| {
            let conn = Arc::clone(&conn);
            let session = session.clone();
            async move { conn.call(method, params, Some(&session), SETUP_LIMIT).await }
        };
        let mut guarded_ok = true;
        if guarded {
            guarded_ok = call("Fetch.enable", fetch_patterns()).await.is_ok();
        }
        if !guarded_ok && kind != "worker" && kind != "service_worker" && kind != "shared_worker" {
            tracing::warn!(
                kind,
                "could not put the address guard on a frame; closing it"
            );
            let _ = conn
                .call(
                    "Target.closeTarget",
                    json!({ "targetId": target }),
                    None,
                    SETUP_LIMIT,
                )
                .await;
            return;
        }
        let mut setup = Vec::new();
        if kind == "iframe" || kind == "page" {
            setup.push(call("Target.setAutoAttach", auto_attach()));
        }
        if waiting {
            setup.push(call("Runtime.runIfWaitingForDebugger", json!({})));
        }
        futures_util::future::join_all(setup).await;
    });
}

fn fetch_patterns() -> Value {
    json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] })
}

fn auto_attach() -> Value {
    json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true })
}

/// Enables what herald reads of a new tab, puts the guard in place before
/// the tab loads anything (it waits for herald when auto-attached), then
/// lets it run.
async fn set_up_page(
    shared: &Arc<Shared>,
    conn: &Arc<Connection>,
    target: &str,
    session: &str,
    waiting: bool,
    url: &str,
) {
    let call =
        |method: &'static str, params: Value| conn.call(method, params, Some(session), SETUP_LIMIT);
    let mut ok = true;
    if shared.guard.is_some() {
        ok = call("Fetch.enable", fetch_patterns()).await.is_ok();
    }
    // A tab that was already running when herald attached (one the user's
    // browser opened for a tab of ours) may already show a refused page.
    if ok
        && !waiting
        && let Some(guard) = &shared.guard
        && let Some(why) = guard.refusal(url).await
    {
        note_blocked(shared, session, "Document", url, &why);
        ok = false;
    }
    if !ok {
        tracing::warn!("a tab could not be guarded; closing it");
        let _ = conn
            .call(
                "Target.closeTarget",
                json!({ "targetId": target }),
                None,
                SETUP_LIMIT,
            )
            .await;
        return;
    }
    // Sent together, in order, the last one letting the tab run: some
    // answer only once the tab's renderer runs.
    let mut setup = vec![
        ("Page.enable", json!({})),
        ("Runtime.enable", json!({})),
        ("Log.enable", json!({})),
        (
            "Network.enable",
            json!({ "maxTotalBufferSize": 1_000_000, "maxResourceBufferSize": 500_000 }),
        ),
        ("Target.setAutoAttach", auto_attach()),
    ];
    if waiting {
        setup.push(("Runtime.runIfWaitingForDebugger", json!({})));
    }
    let answers = futures_util::future::join_all(setup.into_iter().map(|(m, p)| call(m, p))).await;
    for err in answers.into_iter().filter_map(Result::err) {
        tracing::debug!("setting up a tab failed: {err}");
    }
    shared.update(|tabs| {
        if let Some(tab) = tabs.get_mut(target) {
            tab.ready = true;
        }
    });
}

fn note_blocked(shared: &Shared, session: &str, kind: &str, url: &str, why: &str) {
    shared.update(|tabs| {
        if let Some(tab) = tabs.by_session(session) {
            tab.log("herald", &format!("blocked {kind} request to {url}: {why}"));
            if kind == "Document" {
                if tab.blocked.len() == BLOCKED_ENTRIES {
                    tab.blocked.pop_front();
                }
                tab.blocked.push_back(format!("{url}: {why}"));
                tab.blocked_total += 1;
            }
        }
    });
}

/// The text of a `Runtime.RemoteObject` as a console shows it.
pub fn remote_text(object: &Value) -> String {
    if let Some(value) = object.get("value") {
        return match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
    }
    if let Some(s) = object.get("unserializableValue").and_then(Value::as_str) {
        return s.to_owned();
    }
    if let Some(s) = object.get("description").and_then(Value::as_str) {
        return s.to_owned();
    }
    str_of(object, "/type").to_owned()
}

fn is_main_frame(frame: &Value) -> bool {
    frame.get("parentId").is_none()
}

fn page_event(shared: &Arc<Shared>, conn: &Arc<Connection>, session: &str, event: &Event) {
    let params = &event.params;
    match event.method.as_str() {
        "Fetch.requestPaused" => {
            let (Some(guard), Some(id)) = (
                shared.guard.clone(),
                params.get("requestId").and_then(Value::as_str),
            ) else {
                return;
            };
            let (id, url, kind) = (
                id.to_owned(),
                str_of(params, "/request/url").to_owned(),
                str_of(params, "/resourceType").to_owned(),
            );
            let (shared, conn, session) =
                (Arc::clone(shared), Arc::clone(conn), session.to_owned());
            tokio::spawn(async move {
                let refusal = guard.refusal_of(&url, kind == "Document").await;
                let (method, params) = match &refusal {
                    None => ("Fetch.continueRequest", json!({ "requestId": id })),
                    Some(_) => (
                        "Fetch.failRequest",
                        json!({ "requestId": id, "errorReason": "BlockedByClient" }),
                    ),
                };
                let _ = conn.call(method, params, Some(&session), SETUP_LIMIT).await;
                if let Some(why) = refusal {
                    note_blocked(&shared, &session, &kind, &url, &why);
                }
            });
        }
        "Page.javascriptDialogOpening" => shared.update(|tabs| {
            if let Some(tab) = tabs.by_session(session) {
                tab.dialog = Some(Dialog {
                    kind: str_of(params, "/type").to_owned(),
                    message: str_of(params, "/message").to_owned(),
                    default_prompt: str_of(params, "/defaultPrompt").to_owned(),
                });
            }
        }),
        "Page.javascriptDialogClosed" => shared.update(|tabs| {
            if let Some(tab) = tabs.by_session(session) {
                tab.dialog = None;
            }
        }),
        "Page.frameNavigated" => {
            let frame = &params["frame"];
            if !is_main_frame(frame) {
                return;
            }
            shared.update(|tabs| {
                if let Some(tab) = tabs.by_session(session)
                    && tab.session_id == session
                {
                    tab.url = str_of(frame, "/url").to_owned();
                    tab.navigations += 1;
                    tab.refs.new_document();
                }
            });
        }
        "Page.navigatedWithinDocument" => shared.update(|tabs| {
            if let Some(tab) = tabs.by_session(session)
                && tab.session_id == session
                && tab.target_id == str_of(params, "/frameId")
            {
                tab.url = str_of(params, "/url").to_owned();
                tab.navigations += 1;
            }
        }),
        "Page.frameStartedLoading" | "Page.frameStoppedLoading" | "Page.loadEventFired" => {
            let started = event.method == "Page.frameStartedLoading";
            let frame = str_of(params, "/frameId").to_owned();
            shared.update(|tabs| {
                if let Some(tab) = tabs.by_session(session)
                    && tab.session_id == session
                    && (frame.is_empty() || frame == tab.target_id)
                {
                    if started {
                        tab.started += 1;
                        tab.loading = true;
                        tab.status = None;
                    } else {
                        tab.loading = false;
                    }
                }
            });
        }
        "Network.responseReceived" => {
            if str_of(params, "/type") != "Document" {
                return;
            }
            let frame = str_of(params, "/frameId");
            let status = params
                .pointer("/response/status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok());
            shared.update(|tabs| {
                if let Some(tab) = tabs.by_session(session)
                    && tab.target_id == frame
                {
                    tab.status = status;
                }
            });
        }
        "Runtime.consoleAPICalled" => {
            let text = params
                .get("args")
                .and_then(Value::as_array)
                .map(|args| args.iter().map(remote_text).collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            let level = str_of(params, "/type").to_owned();
            shared.update(|tabs| {
                if let Some(tab) = tabs.by_session(session) {
                    tab.log(&level, &text);
                }
            });
        }
        "Runtime.exceptionThrown" => {
            let details = &params["exceptionDetails"];
            let text = details
                .pointer("/exception/description")
                .and_then(Value::as_str)
                .unwrap_or_else(|| str_of(details, "/text"))
                .to_owned();
            shared.update(|tabs| {
                if let Some(tab) = tabs.by_session(session) {
                    tab.log("exception", &text);
                }
            });
        }
        "Log.entryAdded" => {
            let entry = &params["entry"];
            let mut text = str_of(entry, "/text").to_owned();
            let url = str_of(entry, "/url");
            if !url.is_empty() {
                text.push_str(&format!(" ({url})"));
            }
            let level = str_of(entry, "/level").to_owned();
            shared.update(|tabs| {
                if let Some(tab) = tabs.by_session(session) {
                    tab.log(&level, &text);
                }
            });
        }
        "Inspector.targetCrashed" => shared.update(|tabs| {
            if let Some(tab) = tabs.by_session(session) {
                tab.crashed = true;
                tab.loading = false;
            }
        }),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn remote_objects_read_like_a_console() {
        assert_eq!(remote_text(&json!({"type": "string", "value": "hi"})), "hi");
        assert_eq!(remote_text(&json!({"type": "number", "value": 3})), "3");
        assert_eq!(
            remote_text(&json!({"type": "number", "unserializableValue": "NaN"})),
            "NaN"
        );
        assert_eq!(
            remote_text(&json!({"type": "object", "description": "Array(2)"})),
            "Array(2)"
        );
        assert_eq!(remote_text(&json!({"type": "undefined"})), "undefined");
    }

    #[tokio::test]
    async fn the_guard_refuses_private_addresses_and_passes_other_schemes() {
        let guard = Guard::new(AddressPolicy::default());
        let why = guard.refusal("http://127.0.0.1:9/x").await.unwrap();
        assert!(why.contains("loopback"), "{why}");
        assert!(guard.refusal("ws://169.254.169.254/").await.is_some());
        assert!(guard.refusal("data:text/html,hi").await.is_none());
        let open = Guard::new(AddressPolicy::new(true, &[]));
        assert!(open.refusal("http://127.0.0.1:9/x").await.is_none());
    }

    #[test]
    fn console_entries_are_bounded() {
        let mut tab = Tab::new(1, "T".into(), "S".into(), String::new(), String::new());
        for i in 0..(CONSOLE_ENTRIES + 5) {
            tab.log("log", &format!("line {i}"));
        }
        assert_eq!(tab.console.len(), CONSOLE_ENTRIES);
        assert_eq!(tab.console_total, (CONSOLE_ENTRIES + 5) as u64);
        assert_eq!(tab.console.front().unwrap().text, "line 5");
    }
}
