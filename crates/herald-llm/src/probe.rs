//! Whether a provider's endpoint answers a key: its models list, asked the
//! way [`crate::LlmClient`] would ask (same base URL rules, headers and API
//! version). Backs `herald doctor`; costs no tokens.

use std::time::Duration;

use crate::ProviderKind;

/// What the endpoint said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// It answered (any status but 401/403: the endpoint and key work, or
    /// it has no models list, which still proves it is there).
    Answered { url: String, status: u16 },
    /// It is there but refused the key (401 or 403).
    KeyRefused { url: String, status: u16 },
    /// No answer: the message says why (DNS, connection, TLS, timeout).
    Unreachable { url: String, error: String },
}

/// The models-list URL of `provider` at `base_url` (empty: the provider's
/// default).
pub fn models_url(provider: ProviderKind, base_url: &str) -> String {
    let base = match base_url.trim() {
        "" => provider.default_base_url(),
        base => base,
    }
    .trim_end_matches('/');
    match provider {
        ProviderKind::Anthropic if !base.ends_with("/v1") => format!("{base}/v1/models"),
        _ => format!("{base}/models"),
    }
}

/// Asks `provider`'s models endpoint with `api_key`, waiting at most
/// `timeout`.
pub async fn probe(
    provider: ProviderKind,
    base_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> ProbeOutcome {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = models_url(provider, base_url);
    let client = match reqwest::Client::builder()
        .user_agent(herald_protocol::USER_AGENT)
        .timeout(timeout)
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            return ProbeOutcome::Unreachable {
                url,
                error: format!("cannot build an HTTP client: {err}"),
            };
        }
    };
    let mut request = client.get(&url);
    if let Some(key) = api_key {
        request = match provider {
            ProviderKind::OpenAi => request.bearer_auth(key),
            ProviderKind::Anthropic => request
                .header("x-api-key", key)
                .header("anthropic-version", crate::anthropic::API_VERSION),
        };
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            if status == 401 || status == 403 {
                ProbeOutcome::KeyRefused { url, status }
            } else {
                ProbeOutcome::Answered { url, status }
            }
        }
        Err(err) => ProbeOutcome::Unreachable {
            url,
            error: crate::error_chain(&err),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_urls_follow_the_client_base_url_rules() {
        assert_eq!(
            models_url(ProviderKind::OpenAi, "http://h:1/v1/"),
            "http://h:1/v1/models"
        );
        assert_eq!(
            models_url(ProviderKind::Anthropic, "http://h:1"),
            "http://h:1/v1/models"
        );
        assert_eq!(
            models_url(ProviderKind::Anthropic, "http://h:1/v1"),
            "http://h:1/v1/models"
        );
        assert_eq!(
            models_url(ProviderKind::OpenAi, " "),
            format!("{}/models", ProviderKind::OpenAi.default_base_url())
        );
    }
}
