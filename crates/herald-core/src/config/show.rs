//! The effective settings as `herald config show` prints them: every
//! section, keys redacted, as TOML or JSON.

use serde::Serialize;

use super::{
    CodeExecutionConfig, CompressionConfig, ConfigWarning, DelegationConfig, MemoryConfig,
    NetworkConfig, ServeConfig, Settings, ToolsConfig,
};

/// A key as shown: its first characters when long enough to stay secret,
/// never the whole key.
fn redact(key: Option<&str>) -> String {
    match key {
        Some(key) if key.chars().count() > 8 => {
            format!("{}… (set)", key.chars().take(3).collect::<String>())
        }
        Some(_) => "(set)".to_owned(),
        None => "(not set)".to_owned(),
    }
}

/// A base URL as used: the provider's public endpoint when none is set.
fn effective_url(base_url: &str, provider: herald_llm::ProviderKind) -> String {
    match base_url.trim() {
        "" => provider.default_base_url().to_owned(),
        url => url.to_owned(),
    }
}

/// The children's endpoint as shown.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveChild {
    /// Wire API of children.
    pub provider: String,
    /// Children's model.
    pub model: String,
    /// Children's base URL (the provider default when none is set).
    pub base_url: String,
    /// The redacted key.
    pub api_key: String,
    /// Where the key comes from, or that there is none.
    pub key_source: String,
}

/// `[delegation]` as shown: the section with its key redacted, plus the
/// endpoint children really use.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveDelegation {
    /// The section's values (`api_key` redacted).
    #[serde(flatten)]
    pub config: DelegationConfig,
    /// What children use: the parent's endpoint, or the override's.
    pub children_use: EffectiveChild,
}

/// Every effective setting, keys redacted (`herald config show`). Field
/// order is the TOML order: plain values first, then sections.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveConfig {
    /// The config file read.
    pub config_path: String,
    /// Whether the config file exists (defaults apply when it does not).
    pub config_exists: bool,
    /// `$HERALD_HOME`.
    pub home: String,
    /// The agent's working directory.
    pub cwd: String,
    /// Root provider.
    pub provider: String,
    /// Root model.
    pub model: String,
    /// Root base URL (the provider default when none is set).
    pub base_url: String,
    /// The redacted root key.
    pub api_key: String,
    /// Whether a run could start: where the key comes from, or what to set.
    pub credentials: String,
    /// Model requests per turn.
    pub max_iterations: u32,
    /// Output token cap per reply; absent = the provider's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Whether tool results send their images to the model.
    pub images: bool,
    /// `reasoning_effort` sent to OpenAI-compatible reasoning models;
    /// absent = not sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Enabled toolsets; absent = all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<Vec<String>>,
    /// Warnings about the file (unknown keys, unimplemented sections).
    pub warnings: Vec<String>,
    /// `[network]`.
    pub network: NetworkConfig,
    /// `[tools]`.
    pub tools: ToolsConfig,
    /// `[thinking]`: Anthropic extended thinking (no `budget_tokens` = off).
    pub thinking: crate::config::ThinkingConfig,
    /// `[delegation]`.
    pub delegation: EffectiveDelegation,
    /// `[memory]`.
    pub memory: MemoryConfig,
    /// `[compression]`.
    pub compression: CompressionConfig,
    /// `[sessions]`.
    pub sessions: crate::config::SessionsConfig,
    /// `[checkpoints]`.
    pub checkpoints: crate::config::CheckpointsConfig,
    /// `[watch]`.
    pub watch: crate::config::WatchConfig,
    /// `[code_execution]`.
    pub code_execution: CodeExecutionConfig,
    /// `[web]`.
    pub web: crate::config::WebConfig,
    /// `[browser]`.
    pub browser: crate::config::BrowserConfig,
    /// `[routing]`, with the effective routes in words.
    pub routing: EffectiveRouting,
    /// `[serve]`.
    pub serve: ServeConfig,
}

/// `[routing]` as set, and each route it makes (`herald config show`).
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveRouting {
    #[serde(flatten)]
    pub config: crate::routing::RoutingConfig,
    /// One line per route, in the order they are tried.
    pub effective_routes: Vec<String>,
}

impl EffectiveConfig {
    /// The view of `settings`; `key_var_set` says whether the root key came
    /// from the provider's environment variable (else from the file), and
    /// `warnings` are the file's.
    pub fn new(settings: &Settings, key_var_set: bool, warnings: &[ConfigWarning]) -> Self {
        let provider = settings.provider;
        let credentials = match (&settings.api_key, settings.base_url.trim()) {
            (Some(_), _) if key_var_set => format!("API key from {}", provider.key_var()),
            (Some(_), _) => "API key from the config file".to_owned(),
            (None, "") => format!(
                "missing: set {} (or {} for a local server) before running a session",
                provider.key_var(),
                provider.base_url_var()
            ),
            (None, _) => "no API key; the base URL is set (a local server needs none)".to_owned(),
        };
        let children_use = match &settings.child {
            Some(child) => EffectiveChild {
                provider: child.provider.as_str().to_owned(),
                model: child.model.clone(),
                base_url: effective_url(&child.base_url, child.provider),
                api_key: redact(child.api_key.as_deref()),
                key_source: child.key_source.clone().unwrap_or_else(|| {
                    format!(
                        "none: set {} or [delegation] api_key",
                        child.provider.key_var()
                    )
                }),
            },
            None => EffectiveChild {
                provider: provider.as_str().to_owned(),
                model: settings.model.clone(),
                base_url: effective_url(&settings.base_url, provider),
                api_key: redact(settings.api_key.as_deref()),
                key_source: "the parent's client (no [delegation] override)".to_owned(),
            },
        };
        let mut delegation = settings.delegation.clone();
        if !delegation.api_key.is_empty() {
            delegation.api_key = redact(Some(&delegation.api_key));
        }
        Self {
            config_path: settings.config_path.display().to_string(),
            config_exists: settings.config_path.exists(),
            home: settings.home.display().to_string(),
            cwd: settings.cwd.display().to_string(),
            provider: provider.as_str().to_owned(),
            model: settings.model.clone(),
            base_url: effective_url(&settings.base_url, provider),
            api_key: redact(settings.api_key.as_deref()),
            credentials,
            max_iterations: settings.max_iterations,
            max_tokens: settings.max_tokens,
            images: settings.images,
            reasoning_effort: settings
                .reasoning
                .effort
                .map(|effort| effort.as_str().to_owned()),
            toolsets: settings.toolsets.clone(),
            warnings: warnings.iter().map(ToString::to_string).collect(),
            network: settings.network.clone(),
            tools: ToolsConfig {
                output_limit_chars: settings.output_limit_chars,
            },
            thinking: crate::config::ThinkingConfig {
                budget_tokens: settings.reasoning.thinking_budget,
            },
            delegation: EffectiveDelegation {
                config: delegation,
                children_use,
            },
            memory: settings.memory.clone(),
            compression: settings.compression.clone(),
            sessions: settings.sessions.clone(),
            checkpoints: settings.checkpoints.clone(),
            watch: settings.watch.clone(),
            code_execution: settings.code_execution.clone(),
            web: settings.web.clone(),
            browser: settings.browser.clone(),
            routing: EffectiveRouting {
                config: settings.routing.clone(),
                effective_routes: settings.routing.describe(),
            },
            serve: settings.serve.clone(),
        }
    }

    /// The view as TOML text, sections in file order.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::config::{Config, Overrides};

    #[test]
    fn shows_every_section_without_credentials_and_never_a_key() {
        let config = Config::parse(
            "[delegation]\nprovider = \"anthropic\"\napi_key = \"sk-ant-secret-123\"\n",
            Path::new("/h/config.toml"),
        )
        .unwrap();
        let settings = Settings::resolve_without_credentials(
            &config,
            Path::new("/h/config.toml"),
            PathBuf::from("/h"),
            &HashMap::new(),
            &Overrides {
                cwd: Some(std::env::temp_dir()),
                ..Overrides::default()
            },
        )
        .unwrap();
        let view = EffectiveConfig::new(&settings, false, &config.warnings);
        let text = view.to_toml().unwrap();
        for section in [
            "[network]",
            "[tools]",
            "[delegation]",
            "[delegation.children_use]",
            "[memory]",
            "[compression]",
            "[code_execution]",
            "[serve]",
        ] {
            assert!(text.contains(section), "{section} missing:\n{text}");
        }
        assert!(text.contains("credentials = \"missing: set OPENAI_API_KEY"));
        assert!(text.contains("base_url = \"https://api.openai.com/v1\""));
        assert!(text.contains("key_source = \"[delegation] api_key\""));
        assert!(!text.contains("sk-ant-secret-123"), "{text}");
        let reparsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(reparsed["compression"]["threshold"].as_float(), Some(0.5));
    }
}
