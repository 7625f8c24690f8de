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
        navigation_rule: navigation_rule(settings),
    }
}

/// The session's permission rules for `browser_navigate`, applied to the
/// navigations a page makes by itself (a link clicked, a form sent): a
/// host a rule denies is refused, and one a rule asks about is refused
/// with the advice to open it with `browser_navigate`, which can ask.
/// The mode does not enter here (the click that caused it was judged).
fn navigation_rule(settings: &Settings) -> Option<herald_browser::NavigationRule> {
    let setup = crate::permissions::load_permission_setup(settings).ok()?;
    let mut config = setup.policy;
    config.allow.extend(setup.approved);
    // Full access: only deny and ask rules decide; the mode never asks.
    config.mode = herald_permissions::Mode::FullAccess;
    let policy = herald_permissions::Policy::new(config).ok()?;
    let cwd = settings.cwd.clone();
    Some(herald_browser::NavigationRule(Arc::new(move |url| {
        let args = serde_json::json!({ "url": url.as_str() });
        let verdict = policy.check(&herald_permissions::CallInfo {
            tool: "browser_navigate",
            args: &args,
            cwd: &cwd,
            read_only: false,
        });
        match verdict.decision {
            herald_permissions::Decision::Allow => None,
            herald_permissions::Decision::Deny => Some(verdict.reason),
            herald_permissions::Decision::Ask => Some(format!(
                "{}; a page cannot ask for approval: open it with browser_navigate",
                verdict.reason
            )),
        }
    })))
}

/// The session's browser when the toolset is wanted (not started yet).
pub(crate) fn session_browser(
    settings: &Settings,
    session_id: Option<&str>,
) -> Option<Arc<herald_browser::Browser>> {
    browser_wanted(settings)
        .then(|| herald_browser::Browser::new(browser_setup(settings, session_id)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;
    use crate::config::{Config, Overrides};

    fn settings(config: &str) -> Settings {
        let config: Config = toml::from_str(config).unwrap();
        let env: HashMap<String, String> = [(
            "OPENAI_BASE_URL".to_owned(),
            "http://127.0.0.1:9/v1".to_owned(),
        )]
        .into();
        let home = tempfile::tempdir().unwrap().keep();
        Settings::resolve(
            &config,
            Path::new("/h/config.toml"),
            home,
            &env,
            &Overrides {
                cwd: Some(std::env::temp_dir()),
                ..Overrides::default()
            },
        )
        .unwrap()
    }

    /// A page's own navigations meet the deny and ask rules of
    /// `browser_navigate`, whatever the mode; other hosts pass.
    #[test]
    fn the_navigation_rule_follows_the_domain_rules_not_the_mode() {
        let settings = settings(
            "[permissions]\nmode = \"read-only\"\ndeny = [\"browser_navigate(domain:evil.example)\"]\nask = [\"browser_navigate(domain:*.corp)\"]\n",
        );
        let rule = navigation_rule(&settings).unwrap();
        let judge = |u: &str| (rule.0)(&url::Url::parse(u).unwrap());
        let denied = judge("https://www.evil.example/x").unwrap();
        assert!(denied.contains("denied by the rule"), "{denied}");
        let asked = judge("https://wiki.corp/").unwrap();
        assert!(asked.contains("open it with browser_navigate"), "{asked}");
        assert_eq!(judge("https://docs.rs/"), None);
    }
}
