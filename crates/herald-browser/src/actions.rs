//! What the browser tools do, on the active tab of a running browser. Each
//! action that can change the page waits for what it caused to settle (a
//! navigation to load, a dialog to open, a tab to appear) and says what
//! happened, so the model knows whether to look again.

use std::time::Duration;

use herald_protocol::ImageData;
use serde_json::{Value, json};
use url::Url;

use crate::BrowserError;
use crate::browser::{BrowserSetup, Running};
use crate::tabs::{Tab, Tabs};

/// How long an action waits for a navigation it may have caused to start.
const SETTLE_START: Duration = Duration::from_millis(500);
/// How long a load that stopped is given to report its navigation.
const COMMIT_GRACE: Duration = Duration::from_secs(1);
/// How long a new tab is given to load before it is reported.
const NEW_TAB_LOAD: Duration = Duration::from_secs(10);
/// Limit of page commands while a dialog is open (the page is blocked).
const BLOCKED_LIMIT: Duration = Duration::from_secs(3);
/// Longest full-page screenshot, in CSS pixels.
const MAX_SHOT_HEIGHT: f64 = 16_000.0;
/// Longest result of an evaluated expression.
const EVAL_CHARS: usize = 20_000;

/// Counters of a tab before an action, to tell what the action caused.
#[derive(Debug, Clone, Copy, Default)]
struct Marks {
    navigations: u64,
    started: u64,
    dialog: bool,
    blocked: u64,
    tabs: usize,
}

fn marks(tabs: &Tabs, target: &str) -> Marks {
    let tab = tabs.get(target);
    Marks {
        navigations: tab.map_or(0, |t| t.navigations),
        started: tab.map_or(0, |t| t.started),
        dialog: tab.is_some_and(|t| t.dialog.is_some()),
        blocked: tab.map_or(0, |t| t.blocked_total),
        tabs: tabs.list.len(),
    }
}

/// The active tab: `(target id, session id)`.
#[derive(Debug, Clone)]
pub(crate) struct Active {
    pub target: String,
    pub session: String,
}

/// Maps an error of a DOM command about a node to what the model should do.
fn node_error(reference: &str, label: &str, err: BrowserError) -> BrowserError {
    match &err {
        BrowserError::Protocol { message, .. } => {
            let m = message.to_ascii_lowercase();
            if m.contains("no node") || m.contains("detached") || m.contains("could not find node")
            {
                BrowserError::usage(format!(
                    "{reference} ({label}) is no longer on the page; take a new browser_snapshot"
                ))
            } else if m.contains("layout object") || m.contains("could not compute") {
                BrowserError::usage(format!(
                    "{reference} ({label}) is not visible (it has no box on the page; it may be hidden or inside a closed menu)"
                ))
            } else if m.contains("not focusable") {
                BrowserError::usage(format!(
                    "{reference} ({label}) cannot take keyboard focus; click it, or type into a textbox"
                ))
            } else {
                err
            }
        }
        _ => err,
    }
}

impl Running {
    /// The active tab, opening one if none is left.
    pub(crate) async fn active(&self) -> Result<Active, BrowserError> {
        let ready = |tabs: &Tabs| -> Option<Active> {
            let pick = tabs
                .active
                .as_deref()
                .and_then(|id| tabs.get(id))
                .or_else(|| tabs.list.iter().rev().find(|t| t.ready))?;
            pick.ready.then(|| Active {
                target: pick.target_id.clone(),
                session: pick.session_id.clone(),
            })
        };
        // A browser just started shows its first tab within moments.
        let wait = if self.shared.own_all {
            Duration::from_secs(5)
        } else {
            Duration::ZERO
        };
        let found = self
            .shared
            .wait_for(wait, |tabs| {
                if tabs.list.is_empty() {
                    // Every tab was closed: open one now.
                    return tabs.seen_any().then_some(None);
                }
                ready(tabs).map(Some)
            })
            .await
            .flatten();
        let active = match found {
            Some(active) => active,
            None => self.open_tab().await?,
        };
        self.shared
            .update(|tabs| tabs.active = Some(active.target.clone()));
        Ok(active)
    }

    /// Opens a new blank tab and waits until it is set up.
    pub(crate) async fn open_tab(&self) -> Result<Active, BrowserError> {
        let created = self
            .call("Target.createTarget", json!({ "url": "about:blank" }), None)
            .await?;
        let target = created
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !self.shared.own_all {
            self.shared.update(|tabs| tabs.ours.insert(target.clone()));
            self.call(
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
                None,
            )
            .await?;
        }
        let active = self
            .shared
            .wait_for(Duration::from_secs(10), |tabs| {
                tabs.get(&target).filter(|t| t.ready).map(|t| Active {
                    target: t.target_id.clone(),
                    session: t.session_id.clone(),
                })
            })
            .await
            .ok_or_else(|| BrowserError::Launch {
                executable: "browser".to_owned(),
                reason: format!("a new tab did not become ready{}", self.stderr_tail()),
            })?;
        self.shared
            .update(|tabs| tabs.active = Some(active.target.clone()));
        Ok(active)
    }

    fn dialog_error(&self, target: &str) -> Result<(), BrowserError> {
        let tabs = self.shared.tabs();
        match tabs.get(target).and_then(|t| t.dialog.as_ref()) {
            Some(dialog) => Err(BrowserError::usage(format!(
                "a {} dialog is open (\"{}\"); the page is blocked until you answer it with browser_dialog",
                dialog.kind, dialog.message
            ))),
            None => Ok(()),
        }
    }

    fn ref_target(
        &self,
        target: &str,
        reference: &str,
    ) -> Result<crate::snapshot::RefTarget, BrowserError> {
        let tabs = self.shared.tabs();
        let tab = tabs
            .get(target)
            .ok_or_else(|| BrowserError::usage("the active tab was closed; see browser_tabs"))?;
        tab.refs.get(reference).cloned()
    }

    /// Runs `action` (which sends input to the page), but returns as soon
    /// as a dialog opens: the page's answer to input waits for the dialog.
    async fn input(
        &self,
        target: &str,
        action: impl std::future::Future<Output = Result<(), BrowserError>>,
    ) -> Result<(), BrowserError> {
        let dialog = self.shared.wait_for(Duration::from_secs(3600), |tabs| {
            tabs.get(target).and_then(|t| t.dialog.as_ref()).map(|_| ())
        });
        tokio::select! {
            result = action => result,
            _ = dialog => Ok(()),
        }
    }

    /// Reads the tab's current URL and title from the browser (the events
    /// that carry them may come later than the load).
    async fn refresh(&self, target: &str) {
        let Ok(info) = self
            .call("Target.getTargetInfo", json!({ "targetId": target }), None)
            .await
        else {
            return;
        };
        let field = |name: &str| {
            info.pointer(&format!("/targetInfo/{name}"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let (url, title) = (field("url"), field("title"));
        self.shared.update(|tabs| {
            if let Some(tab) = tabs.get_mut(target) {
                if let Some(url) = url {
                    tab.url = url;
                }
                if let Some(title) = title {
                    tab.title = title;
                }
            }
        });
    }

    /// Waits for what an action caused, and says it.
    async fn settle(&self, target: &str, before: Marks, limit: Duration) -> String {
        let shared = &self.shared;
        let changed = |tabs: &Tabs| {
            let now = marks(tabs, target);
            (now.started > before.started
                || now.navigations > before.navigations
                || (now.dialog && !before.dialog)
                || now.tabs > before.tabs
                || now.blocked > before.blocked)
                .then_some(())
        };
        if shared.wait_for(SETTLE_START, changed).await.is_some() {
            // Loading, unless a dialog holds the page.
            shared
                .wait_for(limit, |tabs| {
                    let tab = tabs.get(target)?;
                    (!tab.loading || tab.dialog.is_some() || tab.crashed).then_some(())
                })
                .await;
            // A page restored from the back/forward cache reports its
            // navigation after it stopped loading.
            shared
                .wait_for(COMMIT_GRACE, |tabs| {
                    let tab = tabs.get(target)?;
                    (tab.started == before.started
                        || tab.navigations > before.navigations
                        || tab.dialog.is_some()
                        || tab.crashed)
                        .then_some(())
                })
                .await;
        }
        let new_tabs: Vec<String> = {
            let tabs = shared.tabs();
            tabs.list
                .iter()
                .skip(before.tabs)
                .map(|t| t.target_id.clone())
                .collect()
        };
        for new in &new_tabs {
            shared
                .wait_for(NEW_TAB_LOAD.min(limit), |tabs| {
                    let tab = tabs.get(new)?;
                    (tab.ready && !tab.loading && tab.started > 0).then_some(())
                })
                .await;
        }
        self.refresh(target).await;
        for new in &new_tabs {
            self.refresh(new).await;
        }
        let tabs = shared.tabs();
        let Some(tab) = tabs.get(target) else {
            return " The tab closed.".to_owned();
        };
        let mut out = String::new();
        if tab.navigations > before.navigations {
            out.push_str(&format!(" The page is now {}.", page_line(tab)));
        }
        if tab.loading {
            out.push_str(&format!(
                " It is still loading after {} s.",
                limit.as_secs()
            ));
        }
        if tab.blocked_total > before.blocked {
            let count = usize::try_from(tab.blocked_total - before.blocked).unwrap_or(usize::MAX);
            for entry in tab.blocked.iter().rev().take(count).rev() {
                out.push_str(&format!(" Refused navigation to {entry}."));
            }
        }
        if let Some(dialog) = tab.dialog.as_ref().filter(|_| !before.dialog) {
            out.push_str(&format!(
                " A {} dialog opened: \"{}\". The page waits until you answer it with browser_dialog.",
                dialog.kind, dialog.message
            ));
        }
        for new in &new_tabs {
            if let Some(opened) = tabs.get(new) {
                out.push_str(&format!(
                    " A new tab opened: {}. Switch to it with browser_tabs (action \"switch\", tab \"t{}\").",
                    opened.describe(),
                    opened.number
                ));
            }
        }
        if tab.crashed {
            out.push_str(" The page crashed; navigate again.");
        }
        out
    }

    /// `browser_navigate`: opens `url` in the active tab.
    pub(crate) async fn navigate(
        &self,
        setup: &BrowserSetup,
        raw: &str,
    ) -> Result<String, BrowserError> {
        let url = parse_url(raw)?;
        setup.policy.check_url_resolved(&url).await?;
        let active = self.active().await?;
        self.dialog_error(&active.target)?;
        self.go(&active, &url, setup.navigation_timeout).await
    }

    async fn go(
        &self,
        active: &Active,
        url: &Url,
        limit: Duration,
    ) -> Result<String, BrowserError> {
        let before = marks(&self.shared.tabs(), &active.target);
        let answer = self
            .conn
            .call(
                "Page.navigate",
                json!({ "url": url.as_str() }),
                Some(&active.session),
                limit,
            )
            .await;
        let answer = match answer {
            Err(BrowserError::Timeout { .. }) => {
                return Ok(format!(
                    "Navigation to {url} did not answer within {} s; the page may still be loading. Check with browser_snapshot.",
                    limit.as_secs()
                ));
            }
            other => other?,
        };
        if let Some(error) = answer
            .get("errorText")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty())
        {
            let refused = {
                let tabs = self.shared.tabs();
                tabs.get(&active.target)
                    .filter(|t| t.blocked_total > before.blocked)
                    .and_then(|t| t.blocked.back().cloned())
            };
            return Err(BrowserError::usage(match refused {
                Some(entry) => format!("refused navigation to {entry}"),
                None => format!("could not load {url}: {error}"),
            }));
        }
        let outcome = self.settle(&active.target, before, limit).await;
        Ok(self.arrived("Opened", &active.target, &outcome))
    }

    /// `Opened "Title" (url). <what else happened> Read it with browser_snapshot.`
    fn arrived(&self, verb: &str, target: &str, outcome: &str) -> String {
        let tabs = self.shared.tabs();
        let page = tabs.get(target).map_or_else(String::new, page_line);
        let outcome = outcome
            .replace(&format!(" The page is now {page}."), "")
            .trim()
            .to_owned();
        let mut text = format!("{verb} {page}.");
        if !outcome.is_empty() {
            text.push(' ');
            text.push_str(&outcome);
        }
        text.push_str(" Read it with browser_snapshot.");
        text
    }

    /// `browser_back`: the previous page of the active tab's history.
    pub(crate) async fn back(&self, setup: &BrowserSetup) -> Result<String, BrowserError> {
        let active = self.active().await?;
        self.dialog_error(&active.target)?;
        let history = self
            .call(
                "Page.getNavigationHistory",
                json!({}),
                Some(&active.session),
            )
            .await?;
        let index = history
            .get("currentIndex")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(0);
        let entries = history
            .get("entries")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(entry) = index.checked_sub(1).and_then(|i| entries.get(i)) else {
            return Err(BrowserError::usage(
                "there is no earlier page in this tab's history",
            ));
        };
        let url = entry.get("url").and_then(Value::as_str).unwrap_or_default();
        if let Ok(parsed) = Url::parse(url)
            && matches!(parsed.scheme(), "http" | "https")
        {
            setup.policy.check_url_resolved(&parsed).await?;
        }
        let before = marks(&self.shared.tabs(), &active.target);
        self.call(
            "Page.navigateToHistoryEntry",
            json!({ "entryId": entry.get("id").cloned().unwrap_or(Value::Null) }),
            Some(&active.session),
        )
        .await?;
        let outcome = self
            .settle(&active.target, before, setup.navigation_timeout)
            .await;
        Ok(self.arrived("Went back to", &active.target, &outcome))
    }

    /// `browser_snapshot`: the header and outline of the active tab.
    pub(crate) async fn snapshot(
        &self,
        setup: &BrowserSetup,
        max_chars: usize,
    ) -> Result<String, BrowserError> {
        let active = self.active().await?;
        self.refresh(&active.target).await;
        let (header, dialog_open) = {
            let tabs = self.shared.tabs();
            let tab = tabs.get(&active.target).ok_or_else(|| {
                BrowserError::usage("the active tab was closed; see browser_tabs")
            })?;
            (header(&tabs, tab), tab.dialog.is_some())
        };
        let limit = if dialog_open {
            BLOCKED_LIMIT
        } else {
            crate::browser::CALL_LIMIT
        };
        let tree = self
            .conn
            .call(
                "Accessibility.getFullAXTree",
                json!({}),
                Some(&active.session),
                limit,
            )
            .await;
        let body = match tree {
            Ok(tree) => {
                let mut tabs = self.shared.tabs();
                let tab = tabs
                    .get_mut(&active.target)
                    .ok_or_else(|| BrowserError::usage("the active tab was closed"))?;
                crate::snapshot::render(&tree, &mut tab.refs)
            }
            Err(BrowserError::Timeout { .. }) if dialog_open => {
                "(the page cannot be read while the dialog is open)\n".to_owned()
            }
            Err(err) => return Err(err),
        };
        let body = window(&setup.spill_dir, body, max_chars).await?;
        Ok(format!("{header}\n{body}"))
    }

    /// The point to click on the node `backend` (scrolled into view).
    async fn center(
        &self,
        session: &str,
        reference: &str,
        label: &str,
        backend: i64,
    ) -> Result<(f64, f64), BrowserError> {
        let quad = self.quad(session, reference, label, backend).await?;
        let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
        let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
        Ok((x, y))
    }

    /// The first visible quad of the node, in viewport coordinates.
    async fn quad(
        &self,
        session: &str,
        reference: &str,
        label: &str,
        backend: i64,
    ) -> Result<[f64; 8], BrowserError> {
        let node = json!({ "backendNodeId": backend });
        if let Err(err) = self
            .call("DOM.scrollIntoViewIfNeeded", node.clone(), Some(session))
            .await
        {
            return Err(node_error(reference, label, err));
        }
        let quads = self
            .call("DOM.getContentQuads", node, Some(session))
            .await
            .map_err(|e| node_error(reference, label, e))?;
        let quads = quads
            .get("quads")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for quad in quads {
            let points: Vec<f64> = quad
                .as_array()
                .map(|q| q.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            let Ok(points) = <[f64; 8]>::try_from(points) else {
                continue;
            };
            let area = ((points[0] * points[3] - points[2] * points[1])
                + (points[2] * points[5] - points[4] * points[3])
                + (points[4] * points[7] - points[6] * points[5])
                + (points[6] * points[1] - points[0] * points[7]))
                .abs()
                / 2.0;
            if area > 1.0 {
                return Ok(points);
            }
        }
        Err(BrowserError::usage(format!(
            "{reference} ({label}) is not visible (it has no box on the page; it may be hidden or inside a closed menu)"
        )))
    }

    /// `browser_click`.
    pub(crate) async fn click(
        &self,
        setup: &BrowserSetup,
        reference: &str,
    ) -> Result<String, BrowserError> {
        let active = self.active().await?;
        self.dialog_error(&active.target)?;
        let node = self.ref_target(&active.target, reference)?;
        let (x, y) = self
            .center(&active.session, reference, &node.label, node.backend)
            .await?;
        let before = marks(&self.shared.tabs(), &active.target);
        let session = active.session.as_str();
        self.input(&active.target, async {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": "mouseMoved", "x": x, "y": y }),
                Some(session),
            )
            .await?;
            for kind in ["mousePressed", "mouseReleased"] {
                self.call(
                    "Input.dispatchMouseEvent",
                    json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
                    Some(session),
                )
                .await?;
            }
            Ok(())
        })
        .await?;
        let outcome = self
            .settle(&active.target, before, setup.navigation_timeout)
            .await;
        Ok(format!(
            "Clicked {} ({}).{outcome}",
            short_ref(reference),
            node.label
        ))
    }

    /// `browser_type`.
    pub(crate) async fn type_text(
        &self,
        setup: &BrowserSetup,
        reference: &str,
        text: &str,
        clear: bool,
        submit: bool,
    ) -> Result<String, BrowserError> {
        let active = self.active().await?;
        self.dialog_error(&active.target)?;
        let node = self.ref_target(&active.target, reference)?;
        let session = active.session.as_str();
        let by_node = json!({ "backendNodeId": node.backend });
        self.call("DOM.scrollIntoViewIfNeeded", by_node.clone(), Some(session))
            .await
            .map_err(|e| node_error(reference, &node.label, e))?;
        self.call("DOM.focus", by_node.clone(), Some(session))
            .await
            .map_err(|e| node_error(reference, &node.label, e))?;
        let object = self
            .call("DOM.resolveNode", by_node, Some(session))
            .await
            .map_err(|e| node_error(reference, &node.label, e))?;
        if let Some(object_id) = object.pointer("/object/objectId").and_then(Value::as_str) {
            // Select what the field holds, so the typed text replaces it,
            // or put the caret at its end, so the text is appended.
            self.call(
                "Runtime.callFunctionOn",
                json!({
                    "objectId": object_id,
                    "functionDeclaration": if clear { SELECT_CONTENT } else { CARET_TO_END },
                    "awaitPromise": false,
                }),
                Some(session),
            )
            .await?;
        }
        let before = marks(&self.shared.tabs(), &active.target);
        self.input(&active.target, async {
            if text.is_empty() && clear {
                self.press_key(session, &crate::keys::parse("Delete")?)
                    .await?;
            } else {
                self.call("Input.insertText", json!({ "text": text }), Some(session))
                    .await?;
            }
            if submit {
                self.press_key(session, &crate::keys::parse("Enter")?)
                    .await?;
            }
            Ok(())
        })
        .await?;
        let outcome = self
            .settle(&active.target, before, setup.navigation_timeout)
            .await;
        let chars = text.chars().count();
        let submitted = if submit { " and pressed Enter" } else { "" };
        Ok(format!(
            "Typed {chars} characters into {} ({}){submitted}.{outcome}",
            short_ref(reference),
            node.label
        ))
    }

    async fn press_key(
        &self,
        session: &str,
        key: &crate::keys::KeyPress,
    ) -> Result<(), BrowserError> {
        for event in key.events() {
            self.call("Input.dispatchKeyEvent", event, Some(session))
                .await?;
        }
        Ok(())
    }

    /// `browser_press`.
    pub(crate) async fn press(
        &self,
        setup: &BrowserSetup,
        key: &str,
        reference: Option<&str>,
    ) -> Result<String, BrowserError> {
        let parsed = crate::keys::parse(key)?;
        let active = self.active().await?;
        self.dialog_error(&active.target)?;
        let session = active.session.as_str();
        let mut on = String::new();
        if let Some(reference) = reference {
            let node = self.ref_target(&active.target, reference)?;
            self.call(
                "DOM.focus",
                json!({ "backendNodeId": node.backend }),
                Some(session),
            )
            .await
            .map_err(|e| node_error(reference, &node.label, e))?;
            on = format!(" in {} ({})", short_ref(reference), node.label);
        }
        let before = marks(&self.shared.tabs(), &active.target);
        self.input(&active.target, self.press_key(session, &parsed))
            .await?;
        let outcome = self
            .settle(&active.target, before, setup.navigation_timeout)
            .await;
        Ok(format!("Pressed {key}{on}.{outcome}"))
    }

    /// `browser_scroll`.
    pub(crate) async fn scroll(
        &self,
        direction: Option<&str>,
        amount: Option<u32>,
        reference: Option<&str>,
    ) -> Result<String, BrowserError> {
        let active = self.active().await?;
        self.dialog_error(&active.target)?;
        let session = active.session.as_str();
        let node = match reference {
            Some(reference) => Some(self.ref_target(&active.target, reference)?),
            None => None,
        };
        let (reference, direction) = match (reference.zip(node.as_ref()), direction) {
            (Some((reference, node)), None) => {
                self.call(
                    "DOM.scrollIntoViewIfNeeded",
                    json!({ "backendNodeId": node.backend }),
                    Some(session),
                )
                .await
                .map_err(|e| node_error(reference, &node.label, e))?;
                let position = self.position(session).await;
                return Ok(format!(
                    "Scrolled {} ({}) into view.{position}",
                    short_ref(reference),
                    node.label
                ));
            }
            (r, d) => (r, d.unwrap_or("down")),
        };
        let metrics = self
            .call("Page.getLayoutMetrics", json!({}), Some(session))
            .await?;
        let width = metrics
            .pointer("/cssLayoutViewport/clientWidth")
            .and_then(Value::as_f64)
            .unwrap_or(1280.0);
        let height = metrics
            .pointer("/cssLayoutViewport/clientHeight")
            .and_then(Value::as_f64)
            .unwrap_or(800.0);
        let (x, y) = match reference {
            Some((reference, node)) => {
                self.center(session, reference, &node.label, node.backend)
                    .await?
            }
            None => (width / 2.0, height / 2.0),
        };
        let step = f64::from(amount.unwrap_or(0));
        let (dx, dy) = match direction {
            "down" => (0.0, if step > 0.0 { step } else { height * 0.8 }),
            "up" => (0.0, -(if step > 0.0 { step } else { height * 0.8 })),
            "right" => (if step > 0.0 { step } else { width * 0.8 }, 0.0),
            "left" => (-(if step > 0.0 { step } else { width * 0.8 }), 0.0),
            other => {
                return Err(BrowserError::usage(format!(
                    "direction must be up, down, left or right, not `{other}`"
                )));
            }
        };
        self.call(
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy }),
            Some(session),
        )
        .await?;
        // The wheel scrolls on the next frames.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let position = self.position(session).await;
        let within = reference
            .map(|(r, node)| format!(" within {} ({})", short_ref(r), node.label))
            .unwrap_or_default();
        Ok(format!("Scrolled {direction}{within}.{position}"))
    }

    /// ` The viewport shows y 600–1400 of 3000.` (empty when unknown).
    async fn position(&self, session: &str) -> String {
        let answer = self
            .conn
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": "[scrollX, scrollY, innerWidth, innerHeight, document.documentElement.scrollWidth, document.documentElement.scrollHeight]",
                    "returnByValue": true,
                }),
                Some(session),
                BLOCKED_LIMIT,
            )
            .await;
        let Ok(answer) = answer else {
            return String::new();
        };
        let v: Vec<i64> = answer
            .pointer("/result/value")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_f64())
                    .map(|n| n as i64)
                    .collect()
            })
            .unwrap_or_default();
        match v.as_slice() {
            [_, y, _, h, _, total] => format!(
                " The viewport shows y {y}–{} of a page {total} px tall.",
                y + h
            ),
            _ => String::new(),
        }
    }

    /// `browser_screenshot`: a PNG of the viewport, the whole page or one
    /// element.
    pub(crate) async fn screenshot(
        &self,
        full_page: bool,
        reference: Option<&str>,
    ) -> Result<(String, ImageData), BrowserError> {
        let active = self.active().await?;
        let session = active.session.as_str();
        let mut params = json!({ "format": "png" });
        let what = if let Some(reference) = reference {
            let node = self.ref_target(&active.target, reference)?;
            let quad = self
                .quad(session, reference, &node.label, node.backend)
                .await?;
            let metrics = self
                .call("Page.getLayoutMetrics", json!({}), Some(session))
                .await?;
            let page_x = metrics
                .pointer("/cssVisualViewport/pageX")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let page_y = metrics
                .pointer("/cssVisualViewport/pageY")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let xs = [quad[0], quad[2], quad[4], quad[6]];
            let ys = [quad[1], quad[3], quad[5], quad[7]];
            let (x0, x1) = (
                xs.iter().copied().fold(f64::MAX, f64::min),
                xs.iter().copied().fold(f64::MIN, f64::max),
            );
            let (y0, y1) = (
                ys.iter().copied().fold(f64::MAX, f64::min),
                ys.iter().copied().fold(f64::MIN, f64::max),
            );
            params["clip"] = json!({
                "x": x0 + page_x, "y": y0 + page_y,
                "width": (x1 - x0).max(1.0), "height": (y1 - y0).max(1.0), "scale": 1,
            });
            params["captureBeyondViewport"] = json!(true);
            format!("{} ({})", short_ref(reference), node.label)
        } else if full_page {
            let metrics = self
                .call("Page.getLayoutMetrics", json!({}), Some(session))
                .await?;
            let width = metrics
                .pointer("/cssContentSize/width")
                .and_then(Value::as_f64)
                .unwrap_or(1280.0);
            let height = metrics
                .pointer("/cssContentSize/height")
                .and_then(Value::as_f64)
                .unwrap_or(800.0);
            params["clip"] = json!({
                "x": 0, "y": 0, "width": width, "height": height.min(MAX_SHOT_HEIGHT), "scale": 1,
            });
            params["captureBeyondViewport"] = json!(true);
            if height > MAX_SHOT_HEIGHT {
                format!("the first {MAX_SHOT_HEIGHT} px of the page")
            } else {
                "the whole page".to_owned()
            }
        } else {
            "the viewport".to_owned()
        };
        let blocked = self
            .shared
            .tabs()
            .get(&active.target)
            .is_some_and(|t| t.dialog.is_some());
        let limit = if blocked {
            BLOCKED_LIMIT
        } else {
            Duration::from_secs(30)
        };
        let shot = self
            .conn
            .call("Page.captureScreenshot", params, Some(session), limit)
            .await;
        let shot = match shot {
            Err(BrowserError::Timeout { .. }) if blocked => {
                self.dialog_error(&active.target)?;
                return Err(BrowserError::usage("the page is blocked by a dialog"));
            }
            other => other?,
        };
        let data = shot
            .get("data")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if data.is_empty() {
            return Err(BrowserError::usage(
                "the browser returned an empty screenshot",
            ));
        }
        let page = {
            let tabs = self.shared.tabs();
            tabs.get(&active.target).map(page_line).unwrap_or_default()
        };
        let bytes = data.len() / 4 * 3;
        Ok((
            format!(
                "[image: PNG screenshot of {what} of {page}, about {} KB]",
                bytes.div_ceil(1024)
            ),
            ImageData::new("image/png", data),
        ))
    }

    /// `browser_console`: new console messages, after evaluating
    /// `expression` when given.
    pub(crate) async fn console(
        &self,
        expression: Option<&str>,
        all: bool,
    ) -> Result<String, BrowserError> {
        let active = self.active().await?;
        let mut out = String::new();
        if let Some(expression) = expression.filter(|e| !e.trim().is_empty()) {
            self.dialog_error(&active.target)?;
            let answer = self
                .conn
                .call(
                    "Runtime.evaluate",
                    json!({
                        "expression": expression,
                        "returnByValue": true,
                        "awaitPromise": true,
                        "userGesture": true,
                        "timeout": 10_000,
                    }),
                    Some(&active.session),
                    Duration::from_secs(15),
                )
                .await?;
            if let Some(details) = answer.get("exceptionDetails") {
                let text = details
                    .pointer("/exception/description")
                    .and_then(Value::as_str)
                    .or_else(|| details.get("text").and_then(Value::as_str))
                    .unwrap_or("an exception");
                out.push_str(&format!("The expression threw: {text}\n"));
            } else {
                let result = answer.get("result").cloned().unwrap_or(Value::Null);
                let text = match result.get("value") {
                    Some(value) => {
                        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
                    }
                    None => crate::tabs::remote_text(&result),
                };
                let kept: String = text.chars().take(EVAL_CHARS).collect();
                let cut = if kept.len() < text.len() {
                    format!("\n[… cut at {EVAL_CHARS} characters]")
                } else {
                    String::new()
                };
                out.push_str(&format!("Result:\n{kept}{cut}\n"));
            }
        }
        let console = self.shared.update(|tabs| {
            let Some(tab) = tabs.get_mut(&active.target) else {
                return String::new();
            };
            let total = tab.console_total;
            let kept = tab.console.len() as u64;
            let first_kept = total - kept;
            let from = if all {
                first_kept
            } else {
                tab.console_read.max(first_kept)
            };
            let lost = if all {
                first_kept
            } else {
                from.saturating_sub(tab.console_read)
            };
            tab.console_read = total;
            let skip = usize::try_from(from - first_kept).unwrap_or(usize::MAX);
            let lines: Vec<String> = tab
                .console
                .iter()
                .skip(skip)
                .map(|e| format!("[{}] {}", e.level, e.text))
                .collect();
            let mut text = String::new();
            if lost > 0 {
                text.push_str(&format!("({lost} earlier messages are no longer kept)\n"));
            }
            if lines.is_empty() {
                text.push_str(if all {
                    "The console is empty."
                } else {
                    "No new console messages."
                });
            } else {
                text.push_str(&format!(
                    "Console of t{} ({} messages):\n{}",
                    tab.number,
                    lines.len(),
                    lines.join("\n")
                ));
            }
            text
        });
        out.push_str(&console);
        Ok(out)
    }

    /// `browser_dialog`: answers the open dialog (of the active tab, or of
    /// any tab that has one).
    pub(crate) async fn dialog(
        &self,
        setup: &BrowserSetup,
        accept: bool,
        prompt_text: Option<&str>,
    ) -> Result<String, BrowserError> {
        let active = self.active().await?;
        let found = {
            let tabs = self.shared.tabs();
            tabs.get(&active.target)
                .filter(|t| t.dialog.is_some())
                .or_else(|| tabs.list.iter().find(|t| t.dialog.is_some()))
                .and_then(|t| Some((t.target_id.clone(), t.session_id.clone(), t.dialog.clone()?)))
        };
        let Some((target, session, dialog)) = found else {
            return Err(BrowserError::usage("no dialog is open"));
        };
        let mut params = json!({ "accept": accept });
        if let Some(text) = prompt_text {
            params["promptText"] = json!(text);
        }
        let before = marks(&self.shared.tabs(), &target);
        self.call("Page.handleJavaScriptDialog", params, Some(&session))
            .await?;
        self.shared.update(|tabs| {
            if let Some(tab) = tabs.get_mut(&target) {
                tab.dialog = None;
            }
        });
        let before = Marks {
            dialog: false,
            ..before
        };
        let outcome = self.settle(&target, before, setup.navigation_timeout).await;
        let verb = if accept { "Accepted" } else { "Dismissed" };
        let typed = match prompt_text {
            Some(text) if dialog.kind == "prompt" && accept => format!(" with {text:?}"),
            _ => String::new(),
        };
        Ok(format!(
            "{verb} the {} dialog \"{}\"{typed}.{outcome}",
            dialog.kind, dialog.message
        ))
    }

    /// `browser_tabs`.
    pub(crate) async fn tabs(
        &self,
        setup: &BrowserSetup,
        action: &str,
        tab: Option<&str>,
        url: Option<&str>,
    ) -> Result<String, BrowserError> {
        let active = self.active().await?;
        let named = |tabs: &Tabs, name: Option<&str>| -> Result<String, BrowserError> {
            match name {
                None => Ok(active.target.clone()),
                Some(name) => tabs
                    .by_name(name)
                    .map(|t| t.target_id.clone())
                    .ok_or_else(|| {
                        BrowserError::usage(format!(
                            "no tab `{name}`; the tabs are {}",
                            tabs.list
                                .iter()
                                .map(|t| format!("t{}", t.number))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    }),
            }
        };
        match action {
            "list" => {}
            "switch" => {
                if tab.is_none() {
                    return Err(BrowserError::usage(
                        "name the tab to switch to, e.g. tab \"t2\"",
                    ));
                }
                let target = named(&self.shared.tabs(), tab)?;
                let _ = self
                    .call("Target.activateTarget", json!({ "targetId": target }), None)
                    .await;
                self.shared.update(|tabs| tabs.active = Some(target));
            }
            "close" => {
                let target = named(&self.shared.tabs(), tab)?;
                self.call("Target.closeTarget", json!({ "targetId": target }), None)
                    .await?;
                self.shared
                    .wait_for(Duration::from_secs(5), |tabs| {
                        tabs.get(&target).is_none().then_some(())
                    })
                    .await;
                self.shared.update(|tabs| {
                    if tabs.active.as_deref() == Some(target.as_str()) || tabs.active.is_none() {
                        tabs.active = tabs.list.last().map(|t| t.target_id.clone());
                    }
                });
            }
            "new" => {
                let url = match url {
                    Some(raw) => {
                        let url = parse_url(raw)?;
                        setup.policy.check_url_resolved(&url).await?;
                        Some(url)
                    }
                    None => None,
                };
                let opened = self.open_tab().await?;
                if let Some(url) = url {
                    self.go(&opened, &url, setup.navigation_timeout).await?;
                }
            }
            other => {
                return Err(BrowserError::usage(format!(
                    "action must be list, switch, close or new, not `{other}`"
                )));
            }
        }
        let targets: Vec<String> = self
            .shared
            .tabs()
            .list
            .iter()
            .map(|t| t.target_id.clone())
            .collect();
        for target in &targets {
            self.refresh(target).await;
        }
        let tabs = self.shared.tabs();
        let mut lines = Vec::new();
        for t in &tabs.list {
            let mut line = t.describe();
            if tabs.active.as_deref() == Some(t.target_id.as_str()) {
                line.push_str(" (active)");
            }
            if let Some(dialog) = &t.dialog {
                line.push_str(&format!(" [{} dialog open]", dialog.kind));
            }
            lines.push(line);
        }
        if lines.is_empty() {
            return Ok("No tabs are open; browser_navigate opens one.".to_owned());
        }
        Ok(format!("Tabs:\n{}", lines.join("\n")))
    }
}

/// `select()` of an input (or the node's contents) so typed text replaces
/// what is there; fields that cannot select (number, date) are emptied.
const SELECT_CONTENT: &str = "function () {\
  if (typeof this.select === 'function') {\
    this.select();\
    if (this.value && (this.selectionStart === null || this.selectionEnd - this.selectionStart !== this.value.length)) { this.value = ''; }\
    return;\
  }\
  const range = document.createRange(); range.selectNodeContents(this);\
  const selection = window.getSelection(); selection.removeAllRanges(); selection.addRange(range);\
}";

/// Puts the caret after what an input (or an editable node) holds.
const CARET_TO_END: &str = "function () {\
  if (typeof this.setSelectionRange === 'function') {\
    try { const n = this.value.length; this.setSelectionRange(n, n); } catch (e) {}\
    return;\
  }\
  const range = document.createRange(); range.selectNodeContents(this); range.collapse(false);\
  const selection = window.getSelection(); selection.removeAllRanges(); selection.addRange(range);\
}";

/// `e12` of `[e12]`, `ref=e12` or `12`, for messages.
fn short_ref(reference: &str) -> String {
    let trimmed = reference
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_start_matches("ref=");
    if trimmed.starts_with('e') {
        trimmed.to_owned()
    } else {
        format!("e{trimmed}")
    }
}

/// `"Title" (https://…, HTTP 404)`.
fn page_line(tab: &Tab) -> String {
    let title = if tab.title.is_empty() || tab.title == tab.url {
        String::new()
    } else {
        format!("{:?} ", tab.title)
    };
    let status = match tab.status {
        Some(status) if status >= 400 => format!(", HTTP {status}"),
        _ => String::new(),
    };
    format!("{title}({}{status})", tab.url)
}

/// The lines above an outline: the tab, its page, other tabs, a dialog.
fn header(tabs: &Tabs, tab: &Tab) -> String {
    let mut out = format!("Tab t{}: {}", tab.number, page_line(tab));
    if tab.loading {
        out.push_str(" — still loading");
    }
    let others: Vec<String> = tabs
        .list
        .iter()
        .filter(|t| t.target_id != tab.target_id)
        .map(|t| format!("t{}", t.number))
        .collect();
    if !others.is_empty() {
        out.push_str(&format!(
            "\nOther tabs: {} (browser_tabs)",
            others.join(", ")
        ));
    }
    let unread = tab.console_total.saturating_sub(tab.console_read);
    if unread > 0 {
        out.push_str(&format!(
            "\n{unread} new console messages (browser_console)"
        ));
    }
    if let Some(dialog) = &tab.dialog {
        out.push_str(&format!(
            "\nDialog open ({}): \"{}\"{} — the page is blocked until browser_dialog answers it.",
            dialog.kind,
            dialog.message,
            if dialog.kind == "prompt" && !dialog.default_prompt.is_empty() {
                format!(" (default answer {:?})", dialog.default_prompt)
            } else {
                String::new()
            }
        ));
    }
    if tab.crashed {
        out.push_str("\nThe page crashed; navigate again.");
    }
    out
}

/// A URL from what the model wrote: a scheme is added when missing
/// (`docs.rs/tokio` → `https://docs.rs/tokio`).
fn parse_url(raw: &str) -> Result<Url, BrowserError> {
    let raw = raw.trim();
    let parsed = match Url::parse(raw) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => Url::parse(&format!("https://{raw}"))
            .map_err(|e| BrowserError::usage(format!("`{raw}` is not a URL: {e}")))?,
        Err(e) => return Err(BrowserError::usage(format!("`{raw}` is not a URL: {e}"))),
    };
    Ok(parsed)
}

/// The outline as the result carries it: whole when it fits `max_chars`,
/// else its head and tail around a note naming the file that holds all
/// of it.
async fn window(
    dir: &std::path::Path,
    text: String,
    max_chars: usize,
) -> Result<String, BrowserError> {
    let total = text.chars().count();
    if total <= max_chars {
        return Ok(text);
    }
    let lines: Vec<&str> = text.lines().collect();
    let head_budget = max_chars * 6 / 10;
    let tail_budget = max_chars - head_budget;
    let mut head = 0;
    let mut used = 0;
    while head < lines.len() && used + lines[head].chars().count() < head_budget {
        used += lines[head].chars().count() + 1;
        head += 1;
    }
    let mut tail = lines.len();
    used = 0;
    while tail > head && used + lines[tail - 1].chars().count() < tail_budget {
        used += lines[tail - 1].chars().count() + 1;
        tail -= 1;
    }
    let dir = dir.to_path_buf();
    let whole = text.clone();
    let path = tokio::task::spawn_blocking(move || crate::browser::spill(&dir, &whole))
        .await
        .map_err(|e| BrowserError::Io(format!("saving the snapshot failed: {e}")))??;
    Ok(format!(
        "{}\n[… lines {}–{} of {} left out ({total} characters in all). The whole snapshot is in {}: read_file it with offset {} to see them. Their refs work.]\n{}\n",
        lines[..head].join("\n"),
        head + 1,
        tail,
        lines.len(),
        path.display(),
        head + 1,
        lines[tail..].join("\n"),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn urls_get_a_scheme_when_missing() {
        assert_eq!(
            parse_url("docs.rs/tokio").unwrap().as_str(),
            "https://docs.rs/tokio"
        );
        assert_eq!(
            parse_url("http://x.org/").unwrap().as_str(),
            "http://x.org/"
        );
        assert_eq!(parse_url("file:///etc/passwd").unwrap().scheme(), "file");
        assert!(parse_url("http://").is_err());
    }

    #[test]
    fn refs_are_named_the_same_in_messages() {
        assert_eq!(short_ref("[e3]"), "e3");
        assert_eq!(short_ref("3"), "e3");
        assert_eq!(short_ref("ref=e3"), "e3");
    }

    #[tokio::test]
    async fn a_long_outline_is_windowed_and_saved_whole() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..1000)
            .map(|i| format!("- button \"b{i}\" [e{i}]\n"))
            .collect();
        let short = window(dir.path(), "- a\n".to_owned(), 100).await.unwrap();
        assert_eq!(short, "- a\n");
        let out = window(dir.path(), text.clone(), 2_000).await.unwrap();
        assert!(out.chars().count() < 2_600, "{}", out.len());
        assert!(out.starts_with("- button \"b0\" [e0]\n"));
        assert!(out.contains("- button \"b999\" [e999]"));
        let saved = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert_eq!(std::fs::read_to_string(&saved).unwrap(), text);
        assert!(out.contains(&saved.display().to_string()));
    }
}
