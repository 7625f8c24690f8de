//! Providers that keep working: `api_key_env` (one key variable, or a list
//! of them: a credential pool rotated on 429), `[[fallback]]` endpoints
//! tried in order when the current one fails, and `fallback_cooldown`.
//! Checked here when settings are resolved; the rotation and switching
//! live in `herald_llm` behind `LlmClient::complete`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use herald_llm::{LlmClient, LlmError, PoolKey, ProviderKind};
use serde::{Deserialize, Serialize};

use super::{ConfigError, Settings, default_model};

/// One `[[fallback]]` table as written in `config.toml`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackEntry {
    /// `openai` (any OpenAI-compatible server) or `anthropic`.
    pub provider: Option<String>,
    /// Model name; that provider's default when unset.
    pub model: Option<String>,
    /// Base URL; empty = that provider's base URL variable, else its public endpoint.
    pub base_url: Option<String>,
    /// The variable holding the key, or a list of them (a credential pool);
    /// that provider's key variable when unset.
    pub api_key_env: Option<toml::Value>,
}

/// A `[[fallback]]` endpoint, resolved.
#[derive(Debug, Clone)]
pub struct FallbackProvider {
    pub provider: ProviderKind,
    pub model: String,
    /// Empty = the provider's public endpoint.
    pub base_url: String,
    /// Its credential pool, in order (empty for a keyless local server).
    pub api_keys: Vec<PoolKey>,
}

/// Default `fallback_cooldown` in seconds.
pub(crate) const DEFAULT_COOLDOWN_SECS: u64 = 300;

/// The variable names of an `api_key_env` value (`key` names it in errors):
/// a string or a list of strings, none empty. `None` when absent.
pub(crate) fn key_vars(
    value: Option<&toml::Value>,
    key: &str,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let bad = || {
        ConfigError::Invalid(format!(
            "{key} must be the name of an environment variable or a list of names \
             (a credential pool), e.g. api_key_env = [\"OPENAI_API_KEY\", \"OPENAI_API_KEY_2\"]"
        ))
    };
    let names: Vec<String> = match value {
        toml::Value::String(name) => vec![name.trim().to_owned()],
        toml::Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().map(|s| s.trim().to_owned()).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        _ => return Err(bad()),
    };
    if names.is_empty() || names.iter().any(String::is_empty) {
        return Err(bad());
    }
    Ok(Some(names))
}

/// The keys the variables hold, in order; unset or empty ones are skipped.
pub(crate) fn pool(names: &[String], env: &HashMap<String, String>) -> Vec<PoolKey> {
    names
        .iter()
        .filter_map(|name| {
            let value = env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())?;
            Some(PoolKey {
                source: name.clone(),
                value: value.to_owned(),
            })
        })
        .collect()
}

/// Resolves every `[[fallback]]` entry; the first bad one is an error that
/// names it (`[[fallback]] #2 provider`).
pub(crate) fn resolve_fallbacks(
    entries: &[FallbackEntry],
    env: &HashMap<String, String>,
    config_path: &Path,
    require_credentials: bool,
) -> Result<Vec<FallbackProvider>, ConfigError> {
    let set = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let name = format!("[[fallback]] #{} in {}", i + 1, config_path.display());
            let provider_name = set(&entry.provider).ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "{name}: provider is missing; set provider = \"openai\" or \"anthropic\""
                ))
            })?;
            let provider: ProviderKind = provider_name
                .parse()
                .map_err(|err| ConfigError::Invalid(format!("{name}: provider: {err}")))?;
            let model = set(&entry.model).unwrap_or_else(|| default_model(provider));
            let base_url = set(&entry.base_url)
                .or_else(|| set(&env.get(provider.base_url_var()).cloned()))
                .unwrap_or_default();
            let scheme_ok = base_url.starts_with("http://") || base_url.starts_with("https://");
            if !base_url.is_empty() && !scheme_ok {
                return Err(ConfigError::Invalid(format!(
                    "{name}: base_url '{base_url}' must start with http:// or https://"
                )));
            }
            let named = key_vars(entry.api_key_env.as_ref(), &format!("{name}: api_key_env"))?;
            let explicit = named.is_some();
            let names = named.unwrap_or_else(|| vec![provider.key_var().to_owned()]);
            let api_keys = pool(&names, env);
            // Variables named on purpose must hold a key, even for a local server.
            if require_credentials && api_keys.is_empty() && (explicit || base_url.is_empty()) {
                return Err(ConfigError::Invalid(format!(
                    "{name}: no API key for provider '{}': set {} (a local server without a key needs base_url and no api_key_env)",
                    provider.as_str(),
                    names.join(" or ")
                )));
            }
            Ok(FallbackProvider {
                provider,
                model,
                base_url,
                api_keys,
            })
        })
        .collect()
}

impl Settings {
    /// The root's client: its credential pool and `[[fallback]]` endpoints
    /// included. Agents that share it (subagents on the parent's model)
    /// share both.
    pub fn build_client(&self) -> Result<LlmClient, LlmError> {
        let fallbacks = self
            .fallbacks
            .iter()
            .map(|f| {
                LlmClient::new(herald_llm::ClientConfig {
                    provider: f.provider,
                    base_url: f.base_url.clone(),
                    api_key: f.api_keys.first().map(|k| k.value.clone()),
                    model: f.model.clone(),
                    ..self.client_config()
                })
                .map(|client| client.with_keys(f.api_keys.clone()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LlmClient::new(self.client_config())?
            .with_keys(self.api_keys.clone())
            .with_fallbacks(fallbacks, self.fallback_cooldown))
    }
}

/// `fallback_cooldown` as a duration.
pub(crate) fn cooldown(secs: Option<u64>) -> Duration {
    Duration::from_secs(secs.unwrap_or(DEFAULT_COOLDOWN_SECS))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn key_vars_take_a_name_or_a_list() {
        let one = toml::Value::String("K".into());
        assert_eq!(key_vars(Some(&one), "k").unwrap(), Some(vec!["K".into()]));
        let list: toml::Value =
            toml::from_str::<toml::Table>("v = [\"A\", \"B\"]").unwrap()["v"].clone();
        assert_eq!(
            key_vars(Some(&list), "k").unwrap(),
            Some(vec!["A".into(), "B".into()])
        );
        assert_eq!(key_vars(None, "k").unwrap(), None);
        for bad in ["v = 3", "v = []", "v = [\"A\", 1]", "v = \" \""] {
            let value = toml::from_str::<toml::Table>(bad).unwrap()["v"].clone();
            let err = key_vars(Some(&value), "api_key_env")
                .unwrap_err()
                .to_string();
            assert!(err.contains("api_key_env must be"), "{bad}: {err}");
        }
    }

    #[test]
    fn pool_keeps_set_variables_in_order() {
        let names = vec!["A".to_owned(), "B".to_owned(), "C".to_owned()];
        let keys = pool(&names, &env(&[("C", "sk-c"), ("A", "sk-a"), ("B", " ")]));
        let sources: Vec<&str> = keys.iter().map(|k| k.source.as_str()).collect();
        assert_eq!(sources, ["A", "C"]);
        assert_eq!(keys[1].value, "sk-c");
    }

    #[test]
    fn fallbacks_resolve_and_bad_entries_are_named() {
        let path = Path::new("/h/config.toml");
        let entry = |provider: &str, base: &str| FallbackEntry {
            provider: Some(provider.into()),
            base_url: Some(base.into()),
            ..FallbackEntry::default()
        };
        let resolved = resolve_fallbacks(
            &[entry("anthropic", ""), entry("openai", "http://local/v1")],
            &env(&[("ANTHROPIC_API_KEY", "sk-ant")]),
            path,
            true,
        )
        .unwrap();
        assert_eq!(resolved[0].provider, ProviderKind::Anthropic);
        assert_eq!(resolved[0].model, "claude-sonnet-4-5");
        assert_eq!(resolved[0].api_keys[0].source, "ANTHROPIC_API_KEY");
        assert!(resolved[1].api_keys.is_empty());
        let err = |entries: &[FallbackEntry]| {
            resolve_fallbacks(entries, &env(&[]), path, true)
                .unwrap_err()
                .to_string()
        };
        let e = err(&[entry("openai", "http://x"), entry("gemini", "")]);
        assert!(
            e.contains("[[fallback]] #2") && e.contains("unknown provider 'gemini'"),
            "{e}"
        );
        let e = err(&[entry("openai", "ftp://x")]);
        assert!(
            e.contains("#1") && e.contains("must start with http"),
            "{e}"
        );
        let e = err(&[entry("anthropic", "")]);
        assert!(e.contains("ANTHROPIC_API_KEY"), "{e}");
        let e = err(&[FallbackEntry::default()]);
        assert!(e.contains("provider is missing"), "{e}");
        // Without the credentials check (config show) a keyless entry is fine.
        assert!(resolve_fallbacks(&[entry("anthropic", "")], &env(&[]), path, false).is_ok());
    }
}
