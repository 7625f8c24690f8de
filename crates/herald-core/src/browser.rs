//! `[browser]` resolved into a session's browser: one per session tree,
//! started by the first browser call, closed when the session ends.

use std::sync::Arc;
use std::time::Duration;

use crate::config::Settings;

/// Whether the session offers the `browser` toolset: `[browser] enabled`,
/// or `browser` named in `--toolsets` / `toolsets` (its schemas weigh on
/// every request, so it is never on by default).
pub fn browser_wanted(settings: &Settings) -> bool {
    settings.browser.enabled
        || settings
            .toolsets
            .as_ref()
            .is_some_and(|sets| sets.iter().any(|s| s == herald_browser::TOOLSET))
}

/// What a browser would be started with for `settings` (`session_id`
/// names the directory long snapshots are saved in, beside the web
/// tools' files).
pub fn browser_setup(
    settings: &Settings,
    session_id: Option<&str>,
) -> herald_browser::BrowserSetup {
    let browser = &settings.browser;
    let web = crate::web::web_settings(settings, session_id);
    herald_browser::BrowserSetup {
        executable: browser.executable.clone(),
        cdp_url: browser.cdp_url.clone(),
        headless: browser.headless,
        policy: web.policy,
        dir: settings.home.join("browser"),
        spill_dir: web.spill_dir,
        navigation_timeout: Duration::from_secs(browser.timeout_seconds.clamp(1, 600)),
    }
}

/// The session's browser when the toolset is wanted (not started yet).
pub(crate) fn session_browser(
    settings: &Settings,
    session_id: Option<&str>,
) -> Option<Arc<herald_browser::Browser>> {
    browser_wanted(settings)
        .then(|| herald_browser::Browser::new(browser_setup(settings, session_id)))
}
