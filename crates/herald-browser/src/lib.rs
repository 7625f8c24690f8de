//! herald's browser toolset: a local Chromium or Chrome driven over the
//! Chrome DevTools Protocol, one browser per session tree.
//!
//! * [`cdp`]: a small DevTools client over one WebSocket (flat sessions).
//! * [`launch`]: finding and starting the browser, its profile and its
//!   process group.
//! * [`Browser`]: the session's browser, started on first use and closed
//!   with the session.
//! * [`snapshot`]: the accessibility tree as an outline with element refs.
//! * [`register`]: the tools (`browser_navigate`, `browser_snapshot`, …).
//!
//! Every request a page makes passes the SSRF guard of `herald-web`
//! (intercepted with `Fetch.enable` before any target runs), unless
//! `[web] allow_private` lifts it.

mod actions;
mod browser;
pub mod cdp;
mod error;
mod keys;
pub mod launch;
pub mod snapshot;
mod tabs;
mod tools;

pub use browser::{Browser, BrowserSetup, probe};
pub use error::BrowserError;
pub use launch::{INSTALL_HINT, find_executable};
pub use tools::{TOOL_NAMES, TOOLSET, register};

/// Judges a navigation a page makes by itself: `Some(reason)` refuses it.
/// The session builds it from its permission rules.
#[derive(Clone)]
pub struct NavigationRule(pub std::sync::Arc<NavigationJudge>);

/// The function of a [`NavigationRule`].
pub type NavigationJudge = dyn Fn(&url::Url) -> Option<String> + Send + Sync;

impl std::fmt::Debug for NavigationRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NavigationRule")
    }
}
