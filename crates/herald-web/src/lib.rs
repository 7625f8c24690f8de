//! herald's web tools: `web_search` over a configured search backend and
//! `web_extract`, which turns pages, PDFs and text into clean markdown
//! without a model in between. Every fetch passes the SSRF guard
//! ([`guard`]), which the browser tools share.

pub mod extract;
pub mod fetch;
pub mod guard;
pub mod search;
pub mod tools;

use std::path::PathBuf;
use std::time::Duration;

pub use guard::{AddressKind, AddressPolicy, GuardError, GuardedResolver};
pub use search::Backend;
pub use tools::{WEB_TOOLSET, WebExtract, WebSearch};

/// The search backend a session's `web_search` asks.
#[derive(Debug, Clone)]
pub struct SearchSetup {
    pub backend: Backend,
    /// Where requests go (`[web] search_url`, or the service's own).
    pub url: String,
    /// The API key, read from `key_env`.
    pub key: Option<String>,
    /// The variable the key comes from, named in messages.
    pub key_env: String,
}

/// What the web tools of one session need, resolved from `[web]`.
#[derive(Debug, Clone)]
pub struct WebSettings {
    /// `None` leaves `web_search` out of the tool list.
    pub search: Option<SearchSetup>,
    pub policy: AddressPolicy,
    /// Time limit of one request.
    pub timeout: Duration,
    /// Body bytes one `web_extract` URL may download.
    pub max_download_bytes: usize,
    /// Where pages over a call's budget are saved whole.
    pub spill_dir: PathBuf,
}

/// Registers `web_extract`, and `web_search` when a backend is configured.
/// Nothing touches the network or the certificate store until a call.
pub fn register(registry: &mut herald_tools::ToolRegistry, settings: &WebSettings) {
    let fetcher = fetch::Fetcher::new(
        settings.policy.clone(),
        fetch::FetchLimits {
            timeout: settings.timeout,
            max_bytes: settings.max_download_bytes,
        },
    );
    registry.register(herald_tools::typed(WebExtract::new(
        fetcher,
        settings.spill_dir.clone(),
    )));
    if let Some(search) = &settings.search {
        let searcher = search::Searcher::new(
            search.backend,
            search.url.clone(),
            search.key.clone(),
            search.key_env.clone(),
            settings.timeout,
        );
        registry.register(herald_tools::typed(WebSearch::new(searcher)));
    }
}
