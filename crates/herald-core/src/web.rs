//! `[web]` resolved into what the web tools need.

use std::collections::HashMap;
use std::time::Duration;

use crate::config::{Settings, WebConfig};

/// Checks `[web]` and reads the search key: an unknown backend, or
/// SearXNG without its URL, is a configuration error; a missing key is
/// not (each search then says which variable to set).
pub(crate) fn web_search_key(
    web: &WebConfig,
    env: &HashMap<String, String>,
) -> Result<Option<String>, String> {
    if web.search.trim().is_empty() {
        return Ok(None);
    }
    let backend = herald_web::Backend::parse(&web.search).ok_or_else(|| {
        format!(
            "[web] search = \"{}\" is not a search backend; use searxng, brave, tavily or exa (or remove it)",
            web.search
        )
    })?;
    if backend.default_url().is_none() && web.search_url.trim().is_empty() {
        return Err(format!(
            "[web] search = \"{}\" needs search_url, the instance's address (e.g. \"http://localhost:8888\")",
            backend.name()
        ));
    }
    Ok(key_env(web, backend).and_then(|name| {
        env.get(&name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }))
}

/// The variable the key comes from.
fn key_env(web: &WebConfig, backend: herald_web::Backend) -> Option<String> {
    let set = web.api_key_env.trim();
    if set.is_empty() {
        backend.default_key_env().map(str::to_owned)
    } else {
        Some(set.to_owned())
    }
}

/// The web tools' settings of a session (`session_id` names the
/// directory long pages are saved in).
pub fn web_settings(settings: &Settings, session_id: Option<&str>) -> herald_web::WebSettings {
    let web = &settings.web;
    let search = herald_web::Backend::parse(&web.search).map(|backend| {
        let url = match web.search_url.trim() {
            "" => backend.default_url().unwrap_or_default().to_owned(),
            set => set.to_owned(),
        };
        herald_web::SearchSetup {
            backend,
            url,
            key: settings.web_search_key.clone(),
            key_env: key_env(web, backend).unwrap_or_default(),
        }
    });
    herald_web::WebSettings {
        search,
        policy: herald_web::AddressPolicy::new(web.allow_private, &web.allow_hosts),
        timeout: Duration::from_secs(web.timeout_seconds.clamp(1, 600)),
        max_download_bytes: usize::try_from(web.max_download_mb.clamp(1, 1024))
            .unwrap_or(10)
            .saturating_mul(1024 * 1024),
        spill_dir: settings
            .home
            .join("web")
            .join(session_id.unwrap_or("no-session")),
    }
}
