//! Fetching one URL for `web_extract`: the guard on every hop, a bounded
//! number of redirects, a time limit and a size limit.

use std::time::Duration;

use futures_util::StreamExt;
use url::Url;

use crate::guard::{AddressPolicy, GuardError, GuardedResolver};

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// What pages are asked for: what a browser sends, so servers answer with
/// the page a person would see rather than an API error.
const ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,application/pdf;q=0.8,text/plain;q=0.7,application/json;q=0.7,*/*;q=0.5";

/// The limits of one fetch.
#[derive(Debug, Clone, Copy)]
pub struct FetchLimits {
    /// The whole fetch (connect, redirects, body).
    pub timeout: Duration,
    /// Bytes of body read at most; a larger body is refused.
    pub max_bytes: usize,
}

/// Why a fetch failed; each message tells the model what it can do.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("`{0}` is not a valid URL: {1}")]
    BadUrl(String, url::ParseError),
    #[error(transparent)]
    Guard(#[from] GuardError),
    #[error("the request timed out after {0} s; try again later or another source")]
    Timeout(u64),
    #[error("more than {MAX_REDIRECTS} redirects; fetch the final address directly")]
    TooManyRedirects,
    #[error("the server answered HTTP {status}{reason}")]
    Status { status: u16, reason: String },
    #[error(
        "the body is larger than {limit_mb} MB (`[web] max_download_mb`); look for a smaller page or a text version"
    )]
    TooLarge { limit_mb: usize },
    #[error("the request failed: {0}")]
    Network(String),
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

/// A fetched body with what is known about it.
#[derive(Debug)]
pub struct Fetched {
    /// The URL the body came from, after redirects.
    pub final_url: Url,
    /// The media type without parameters, lowercased (`text/html`).
    pub content_type: Option<String>,
    pub body: bytes::Bytes,
}

/// The HTTP client of one session's web tools. The client itself is
/// built at the first fetch: building one reads the system's certificate
/// store, a cost a session that never reads the web should not pay (and
/// a failure, in a container without certificates, it should not see).
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: std::sync::Arc<tokio::sync::OnceCell<reqwest::Client>>,
    policy: AddressPolicy,
    limits: FetchLimits,
}

impl Fetcher {
    /// A fetcher whose connections and redirects obey `policy`.
    pub fn new(policy: AddressPolicy, limits: FetchLimits) -> Self {
        Self {
            client: std::sync::Arc::default(),
            policy,
            limits,
        }
    }

    async fn client(&self) -> Result<&reqwest::Client, FetchError> {
        self.client
            .get_or_try_init(|| async { build_client(&self.policy, self.limits) })
            .await
    }

    /// Fetches `raw`, following redirects, within the limits.
    pub async fn fetch(&self, raw: &str) -> Result<Fetched, FetchError> {
        let url = Url::parse(raw.trim()).map_err(|err| FetchError::BadUrl(raw.to_owned(), err))?;
        self.policy.check_url(&url)?;
        let client = self.client().await?;
        let timeout = self.limits.timeout;
        match tokio::time::timeout(timeout, self.fetch_checked(client, url)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(timeout.as_secs())),
        }
    }

    async fn fetch_checked(
        &self,
        client: &reqwest::Client,
        url: Url,
    ) -> Result<Fetched, FetchError> {
        let response = client
            .get(url)
            .header(reqwest::header::ACCEPT, ACCEPT)
            .header(reqwest::header::ACCEPT_LANGUAGE, "en;q=0.9, *;q=0.5")
            .send()
            .await
            .map_err(request_error)?;
        let status = response.status();
        if !status.is_success() {
            let reason = match status.as_u16() {
                401 | 403 => "; the page needs a login or blocks automated readers (the browser tools may reach it)".to_owned(),
                404 | 410 => "; the page does not exist".to_owned(),
                429 => match retry_after(&response) {
                    Some(secs) => format!("; the site is rate limiting, retry after {secs} s"),
                    None => "; the site is rate limiting, retry later".to_owned(),
                },
                _ => String::new(),
            };
            return Err(FetchError::Status {
                status: status.as_u16(),
                reason,
            });
        }
        let final_url = response.url().clone();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            })
            .filter(|v| !v.is_empty());
        let limit = self.limits.max_bytes;
        if response
            .content_length()
            .is_some_and(|len| len > limit as u64)
        {
            return Err(FetchError::TooLarge {
                limit_mb: limit / (1024 * 1024),
            });
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(request_error)?;
            if body.len() + chunk.len() > limit {
                return Err(FetchError::TooLarge {
                    limit_mb: limit / (1024 * 1024),
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            final_url,
            content_type,
            body: body.into(),
        })
    }
}

/// The client: the guard's resolver, the guard on each redirect hop.
fn build_client(
    policy: &AddressPolicy,
    limits: FetchLimits,
) -> Result<reqwest::Client, FetchError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let hops = policy.clone();
    let redirect = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(FetchError::TooManyRedirects);
        }
        // Names are checked when they are resolved; literal addresses
        // and schemes here.
        match hops.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(err) => attempt.error(err),
        }
    });
    reqwest::Client::builder()
        .user_agent(concat!(
            "Mozilla/5.0 (compatible; herald/",
            env!("CARGO_PKG_VERSION"),
            ")"
        ))
        .redirect(redirect)
        .dns_resolver(GuardedResolver::new(policy.clone()))
        .connect_timeout(limits.timeout.min(Duration::from_secs(15)))
        .build()
        .map_err(|err| FetchError::Client(request_error(err).to_string()))
}

fn retry_after(response: &reqwest::Response) -> Option<u64> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Turns reqwest's error into ours, finding the guard's refusal or the
/// redirect limit inside it (reqwest wraps them in its own error).
fn request_error(err: reqwest::Error) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(cause) = source {
        if let Some(guard) = cause.downcast_ref::<GuardError>() {
            return FetchError::Guard(guard.clone());
        }
        if let Some(FetchError::TooManyRedirects) = cause.downcast_ref::<FetchError>() {
            return FetchError::TooManyRedirects;
        }
        source = cause.source();
    }
    if err.is_timeout() {
        return FetchError::Timeout(0);
    }
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(&err);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    FetchError::Network(text)
}
