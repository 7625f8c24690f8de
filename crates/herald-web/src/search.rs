//! Search backends for `web_search`: SearXNG, Brave, Tavily and Exa, each
//! spoken in its own documented JSON.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

/// The search services herald can ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A SearXNG instance (often self-hosted); needs `search_url`.
    Searxng,
    Brave,
    Tavily,
    Exa,
}

impl Backend {
    /// The backend `[web] search` names.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "searxng" => Some(Self::Searxng),
            "brave" => Some(Self::Brave),
            "tavily" => Some(Self::Tavily),
            "exa" => Some(Self::Exa),
            _ => None,
        }
    }

    /// The name used in config and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Brave => "brave",
            Self::Tavily => "tavily",
            Self::Exa => "exa",
        }
    }

    /// Where requests go when `[web] search_url` is not set.
    pub fn default_url(self) -> Option<&'static str> {
        match self {
            Self::Searxng => None,
            Self::Brave => Some("https://api.search.brave.com/res/v1/web/search"),
            Self::Tavily => Some("https://api.tavily.com/search"),
            Self::Exa => Some("https://api.exa.ai/search"),
        }
    }

    /// The environment variable holding the key when `api_key_env` is
    /// not set; SearXNG needs none.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Self::Searxng => None,
            Self::Brave => Some("BRAVE_API_KEY"),
            Self::Tavily => Some("TAVILY_API_KEY"),
            Self::Exa => Some("EXA_API_KEY"),
        }
    }
}

/// How recent results must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TimeRange {
    Day,
    Week,
    Month,
    Year,
}

impl TimeRange {
    fn days(self) -> i64 {
        match self {
            Self::Day => 1,
            Self::Week => 7,
            Self::Month => 31,
            Self::Year => 366,
        }
    }
}

/// One search as the model asked for it.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub text: String,
    pub limit: usize,
    pub include_domains: Vec<String>,
    pub exclude_domains: Vec<String>,
    pub time_range: Option<TimeRange>,
}

/// One result: what the model needs to choose what to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Why a search failed; the model reads the message and decides.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(
        "{backend} is rate limiting searches (HTTP 429){retry}; wait, search less often, or read a page you already found"
    )]
    RateLimited {
        backend: &'static str,
        retry: String,
    },
    #[error(
        "{backend} refused the API key (HTTP {status}); the user must set a valid key in ${env}"
    )]
    Unauthorized {
        backend: &'static str,
        status: u16,
        env: String,
    },
    #[error(
        "web_search has no {backend} API key: the user must set ${env} (or `[web] api_key_env`)"
    )]
    NoKey { backend: &'static str, env: String },
    #[error("{backend} answered HTTP {status}: {body}")]
    Status {
        backend: &'static str,
        status: u16,
        body: String,
    },
    #[error("{backend} could not be reached: {reason}")]
    Network {
        backend: &'static str,
        reason: String,
    },
    #[error("{backend} answered something that is not its search JSON: {reason}")]
    Malformed {
        backend: &'static str,
        reason: String,
    },
}

/// A configured search backend and its HTTP client.
#[derive(Debug, Clone)]
pub struct Searcher {
    backend: Backend,
    url: String,
    key: Option<String>,
    key_env: String,
    timeout: Duration,
    /// Built at the first search (see [`crate::fetch::Fetcher`]).
    client: std::sync::Arc<tokio::sync::OnceCell<reqwest::Client>>,
}

impl Searcher {
    /// A searcher for `backend` at `url` with `key` (read from `key_env`).
    pub fn new(
        backend: Backend,
        url: String,
        key: Option<String>,
        key_env: String,
        timeout: Duration,
    ) -> Self {
        Self {
            backend,
            url,
            key,
            key_env,
            timeout,
            client: std::sync::Arc::default(),
        }
    }

    async fn client(&self) -> Result<&reqwest::Client, SearchError> {
        self.client
            .get_or_try_init(|| async {
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::builder()
                    .user_agent(herald_protocol::USER_AGENT)
                    .timeout(self.timeout)
                    .build()
                    .map_err(|err| SearchError::Network {
                        backend: self.backend.name(),
                        reason: format!("could not build the HTTP client: {}", chain(&err)),
                    })
            })
            .await
    }

    /// The backend this searcher asks.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Runs `query`; results outside the domain filters are dropped even
    /// when the backend cannot filter itself.
    pub async fn search(&self, query: &Query) -> Result<Vec<Hit>, SearchError> {
        if self.key.is_none() && self.backend.default_key_env().is_some() {
            return Err(SearchError::NoKey {
                backend: self.backend.name(),
                env: self.key_env.clone(),
            });
        }
        let client = self.client().await?;
        let request = match self.backend {
            Backend::Searxng => self.searxng(client, query)?,
            Backend::Brave => self.brave(client, query)?,
            Backend::Tavily => self.tavily(client, query),
            Backend::Exa => self.exa(client, query),
        };
        let name = self.backend.name();
        let response = request.send().await.map_err(|err| SearchError::Network {
            backend: name,
            reason: chain(&err),
        })?;
        let status = response.status().as_u16();
        if status == 429 {
            let retry = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(|v| format!(", retry after {} s", v.trim()))
                .unwrap_or_default();
            return Err(SearchError::RateLimited {
                backend: name,
                retry,
            });
        }
        if status == 401 || status == 403 {
            return Err(SearchError::Unauthorized {
                backend: name,
                status,
                env: self.key_env.clone(),
            });
        }
        let body = response.text().await.map_err(|err| SearchError::Network {
            backend: name,
            reason: chain(&err),
        })?;
        if !(200..300).contains(&status) {
            let body: String = body.chars().take(300).collect();
            return Err(SearchError::Status {
                backend: name,
                status,
                body,
            });
        }
        let value: Value = serde_json::from_str(&body).map_err(|err| SearchError::Malformed {
            backend: name,
            reason: err.to_string(),
        })?;
        let hits = parse_hits(self.backend, &value).ok_or_else(|| SearchError::Malformed {
            backend: name,
            reason: "no results list".to_owned(),
        })?;
        Ok(hits
            .into_iter()
            .filter(|hit| domain_allowed(&hit.url, query))
            .take(query.limit)
            .collect())
    }

    fn key(&self) -> &str {
        self.key.as_deref().unwrap_or_default()
    }

    /// A GET of `base` with `params` in its query string.
    fn get(
        &self,
        client: &reqwest::Client,
        base: &str,
        params: &[(&str, String)],
    ) -> Result<reqwest::RequestBuilder, SearchError> {
        let mut url = url::Url::parse(base).map_err(|err| SearchError::Network {
            backend: self.backend.name(),
            reason: format!("`[web] search_url` {base} is not a URL: {err}"),
        })?;
        url.query_pairs_mut()
            .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())));
        Ok(client.get(url))
    }

    fn searxng(
        &self,
        client: &reqwest::Client,
        query: &Query,
    ) -> Result<reqwest::RequestBuilder, SearchError> {
        let base = self.url.trim_end_matches('/');
        let endpoint = if base.ends_with("/search") {
            base.to_owned()
        } else {
            format!("{base}/search")
        };
        let mut params = vec![
            ("q", with_sites(&query.text, &query.include_domains)),
            ("format", "json".to_owned()),
        ];
        if let Some(range) = query.time_range {
            params.push(("time_range", format!("{range:?}").to_ascii_lowercase()));
        }
        self.get(client, &endpoint, &params)
    }

    fn brave(
        &self,
        client: &reqwest::Client,
        query: &Query,
    ) -> Result<reqwest::RequestBuilder, SearchError> {
        let mut params = vec![
            ("q", with_sites(&query.text, &query.include_domains)),
            ("count", query.limit.clamp(1, 20).to_string()),
        ];
        if let Some(range) = query.time_range {
            let freshness = match range {
                TimeRange::Day => "pd",
                TimeRange::Week => "pw",
                TimeRange::Month => "pm",
                TimeRange::Year => "py",
            };
            params.push(("freshness", freshness.to_owned()));
        }
        Ok(self
            .get(client, &self.url, &params)?
            .header("Accept", "application/json")
            .header("X-Subscription-Token", self.key()))
    }

    fn tavily(&self, client: &reqwest::Client, query: &Query) -> reqwest::RequestBuilder {
        let mut body = json!({
            "query": query.text,
            "max_results": query.limit.clamp(1, 20),
        });
        if !query.include_domains.is_empty() {
            body["include_domains"] = json!(query.include_domains);
        }
        if !query.exclude_domains.is_empty() {
            body["exclude_domains"] = json!(query.exclude_domains);
        }
        if let Some(range) = query.time_range {
            body["time_range"] = json!(format!("{range:?}").to_ascii_lowercase());
        }
        client.post(&self.url).bearer_auth(self.key()).json(&body)
    }

    fn exa(&self, client: &reqwest::Client, query: &Query) -> reqwest::RequestBuilder {
        let mut body = json!({
            "query": query.text,
            "numResults": query.limit.clamp(1, 20),
            "contents": {"highlights": {"numSentences": 3}},
        });
        if !query.include_domains.is_empty() {
            body["includeDomains"] = json!(query.include_domains);
        }
        if !query.exclude_domains.is_empty() {
            body["excludeDomains"] = json!(query.exclude_domains);
        }
        if let Some(range) = query.time_range {
            let since = time::OffsetDateTime::now_utc() - time::Duration::days(range.days());
            if let Ok(text) = since.format(&time::format_description::well_known::Rfc3339) {
                body["startPublishedDate"] = json!(text);
            }
        }
        client
            .post(&self.url)
            .header("x-api-key", self.key())
            .json(&body)
    }
}

/// `query site:a OR site:b` for backends that filter through the query.
fn with_sites(text: &str, domains: &[String]) -> String {
    if domains.is_empty() {
        return text.to_owned();
    }
    let sites: Vec<String> = domains.iter().map(|d| format!("site:{d}")).collect();
    format!("{text} {}", sites.join(" OR "))
}

/// Reads the results list of `backend`'s JSON.
fn parse_hits(backend: Backend, value: &Value) -> Option<Vec<Hit>> {
    let (list, snippet_of): (&Value, fn(&Value) -> String) = match backend {
        Backend::Searxng => (value.get("results")?, |r| text(r, "content")),
        Backend::Brave => (value.get("web")?.get("results")?, |r| {
            text(r, "description")
        }),
        Backend::Tavily => (value.get("results")?, |r| text(r, "content")),
        Backend::Exa => (value.get("results")?, |r| {
            let highlights: Vec<&str> = r
                .get("highlights")
                .and_then(Value::as_array)
                .map(|h| h.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if highlights.is_empty() {
                let full = text(r, "summary");
                if full.is_empty() {
                    text(r, "text")
                } else {
                    full
                }
            } else {
                highlights.join(" … ")
            }
        }),
    };
    let hits = list
        .as_array()?
        .iter()
        .filter_map(|r| {
            let url = text(r, "url");
            (!url.is_empty()).then(|| Hit {
                title: text(r, "title"),
                url,
                snippet: clip(&strip_tags(&snippet_of(r)), 400),
            })
        })
        .collect();
    Some(hits)
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Brave marks matches with `<strong>`; the model needs none of it.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for ch in text.chars() {
        match ch {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(ch),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// Whether `url`'s host passes the query's domain filters (a domain
/// covers its subdomains).
fn domain_allowed(url: &str, query: &Query) -> bool {
    let Some(host) = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
    else {
        return false;
    };
    let covers = |domain: &String| {
        let domain = domain.trim().trim_start_matches("*.").to_ascii_lowercase();
        host == domain || host.ends_with(&format!(".{domain}"))
    };
    (query.include_domains.is_empty() || query.include_domains.iter().any(covers))
        && !query.exclude_domains.iter().any(covers)
}

fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The hits as the tool result shows them.
pub fn render(hits: &[Hit], backend: Backend) -> String {
    if hits.is_empty() {
        return format!(
            "{} found nothing; try other words or fewer filters",
            backend.name()
        );
    }
    let mut out = String::new();
    for (i, hit) in hits.iter().enumerate() {
        let title = if hit.title.is_empty() {
            "(no title)"
        } else {
            &hit.title
        };
        out.push_str(&format!("{}. {title}\n   {}\n", i + 1, hit.url));
        if !hit.snippet.is_empty() {
            out.push_str(&format!("   {}\n", hit.snippet));
        }
    }
    out.push_str("\nRead a result with web_extract.");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn domain_filters_cover_subdomains_and_exclude() {
        let q = Query {
            include_domains: vec!["rs".into(), "tokio.rs".into()],
            exclude_domains: vec!["blog.tokio.rs".into()],
            ..Default::default()
        };
        let only_tokio = Query {
            include_domains: vec!["tokio.rs".into()],
            exclude_domains: vec!["blog.tokio.rs".into()],
            ..Default::default()
        };
        assert!(domain_allowed("https://tokio.rs/x", &only_tokio));
        assert!(domain_allowed("https://docs.tokio.rs/x", &only_tokio));
        assert!(!domain_allowed("https://blog.tokio.rs/x", &only_tokio));
        assert!(!domain_allowed("https://nottokio.rs/x", &only_tokio));
        assert!(!domain_allowed("not a url", &q));
    }

    #[test]
    fn brave_snippets_lose_their_markup() {
        let value = json!({"web": {"results": [
            {"title": "Tokio", "url": "https://tokio.rs", "description": "The <strong>async</strong>   runtime"}
        ]}});
        let hits = parse_hits(Backend::Brave, &value).unwrap();
        assert_eq!(hits[0].snippet, "The async runtime");
    }

    #[test]
    fn results_without_a_url_are_dropped_and_missing_lists_are_malformed() {
        let value = json!({"results": [{"title": "x"}, {"url": "https://a.org", "title": "A"}]});
        let hits = parse_hits(Backend::Tavily, &value).unwrap();
        assert_eq!(hits.len(), 1);
        assert!(parse_hits(Backend::Brave, &json!({"results": []})).is_none());
    }
}
