//! `config.toml`, environment variables and command-line flags merged into
//! the settings a run uses (flags > env > file > defaults).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use herald_llm::{ClientConfig, ProviderKind, RetryPolicy};
use serde::{Deserialize, Serialize};

pub use crate::config_sections::{
    CodeExecutionConfig, CompressionConfig, DelegationConfig, MemoryConfig,
};

/// A configuration problem; the CLI exits with code 2 and prints the message.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
    #[error(
        "no API key or base URL for provider '{provider}': set {key_var} (or {base_var} for a local OpenAI-compatible server such as Ollama or vLLM), or api_key / base_url in {config}"
    )]
    MissingCredentials {
        provider: &'static str,
        key_var: &'static str,
        base_var: &'static str,
        config: String,
    },
}

/// Network behaviour of provider clients.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkConfig {
    /// Total tries per request (first try included).
    pub max_retries: u32,
    /// First backoff delay; doubles per retry, with jitter.
    pub retry_base_delay_ms: u64,
    /// Seconds without a byte before a stream is abandoned and retried.
    pub stream_idle_timeout: u64,
    pub connect_timeout: u64,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            max_retries: 4,
            retry_base_delay_ms: 1000,
            stream_idle_timeout: 120,
            connect_timeout: 30,
        }
    }
}

/// `[tools]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolsConfig {
    /// Tool results longer than this keep head and tail.
    pub output_limit_chars: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            output_limit_chars: 50_000,
        }
    }
}

/// The contents of `config.toml`. Sections later features read are kept as
/// raw tables so a file written for a newer herald still loads.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub model: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub max_iterations: Option<u32>,
    pub max_tokens: Option<u32>,
    pub toolsets: Option<Vec<String>>,
    pub network: NetworkConfig,
    pub tools: ToolsConfig,
    pub delegation: DelegationConfig,
    pub memory: MemoryConfig,
    pub compression: CompressionConfig,
    pub code_execution: CodeExecutionConfig,
    #[serde(flatten)]
    pub other: toml::Table,
}

impl Config {
    /// Loads `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text).map_err(|err| ConfigError::Parse {
                path: path.to_owned(),
                message: err.to_string(),
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }
}

/// Values given on the command line; `None` means "not given".
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub model: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub max_iterations: Option<u32>,
    pub toolsets: Option<Vec<String>>,
    pub cwd: Option<PathBuf>,
}

/// Where herald keeps its files: `$HERALD_HOME`, else `~/.herald`.
pub fn herald_home(env: &HashMap<String, String>) -> PathBuf {
    if let Some(home) = env.get("HERALD_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    let user_home = env
        .get("HOME")
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    user_home.join(".herald")
}

/// The effective settings of one run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub home: PathBuf,
    pub config_path: PathBuf,
    pub provider: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub api_key: Option<String>,
    pub max_iterations: u32,
    pub max_tokens: Option<u32>,
    pub toolsets: Option<Vec<String>>,
    pub cwd: PathBuf,
    pub output_limit_chars: usize,
    pub network: NetworkConfig,
    pub delegation: DelegationConfig,
    pub memory: MemoryConfig,
    pub compression: CompressionConfig,
    pub code_execution: CodeExecutionConfig,
}

impl Settings {
    /// Merges file, environment and flags. Fails when nothing says where or
    /// how to reach a model.
    pub fn resolve(
        config: &Config,
        config_path: &Path,
        home: PathBuf,
        env: &HashMap<String, String>,
        flags: &Overrides,
    ) -> Result<Self, ConfigError> {
        let env_value = |name: &str| env.get(name).filter(|v| !v.trim().is_empty()).cloned();
        let provider_name = flags
            .provider
            .clone()
            .or_else(|| env_value("HERALD_PROVIDER"))
            .or_else(|| config.provider.clone())
            .unwrap_or_else(|| "openai".to_owned());
        let provider: ProviderKind = provider_name.parse().map_err(ConfigError::Invalid)?;
        let model = flags
            .model
            .clone()
            .or_else(|| env_value("HERALD_MODEL"))
            .or_else(|| config.model.clone())
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| match provider {
                ProviderKind::OpenAi => "gpt-4.1".to_owned(),
                ProviderKind::Anthropic => "claude-sonnet-4-5".to_owned(),
            });
        let base_url = flags
            .base_url
            .clone()
            .or_else(|| env_value(provider.base_url_var()))
            .or_else(|| config.base_url.clone())
            .unwrap_or_default();
        let api_key = env_value(provider.key_var())
            .or_else(|| config.api_key.clone())
            .filter(|k| !k.trim().is_empty());
        if api_key.is_none() && base_url.trim().is_empty() {
            return Err(ConfigError::MissingCredentials {
                provider: provider.as_str(),
                key_var: provider.key_var(),
                base_var: provider.base_url_var(),
                config: config_path.display().to_string(),
            });
        }
        let scheme_ok = base_url.starts_with("http://") || base_url.starts_with("https://");
        if !base_url.is_empty() && !scheme_ok {
            return Err(ConfigError::Invalid(format!(
                "base URL '{base_url}' must start with http:// or https://"
            )));
        }
        let max_iterations = flags.max_iterations.or(config.max_iterations).unwrap_or(90);
        if max_iterations == 0 {
            return Err(ConfigError::Invalid(
                "max_iterations must be at least 1".to_owned(),
            ));
        }
        let cwd = match &flags.cwd {
            Some(dir) => dir
                .canonicalize()
                .map_err(|err| ConfigError::Invalid(format!("--cwd {}: {err}", dir.display())))?,
            None => std::env::current_dir().map_err(|err| {
                ConfigError::Invalid(format!("cannot read the current directory: {err}"))
            })?,
        };
        if !cwd.is_dir() {
            return Err(ConfigError::Invalid(format!(
                "--cwd {} is not a directory",
                cwd.display()
            )));
        }
        let toolsets = flags
            .toolsets
            .clone()
            .or_else(|| config.toolsets.clone())
            .map(|sets| {
                sets.iter()
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            });
        Ok(Self {
            home,
            config_path: config_path.to_owned(),
            provider,
            model,
            base_url,
            api_key,
            max_iterations,
            max_tokens: config.max_tokens,
            toolsets,
            cwd,
            output_limit_chars: config.tools.output_limit_chars,
            network: config.network.clone(),
            delegation: config.delegation.clone(),
            memory: config.memory.clone(),
            compression: config.compression.clone(),
            code_execution: config.code_execution.clone(),
        })
    }

    /// The provider client configuration these settings describe.
    pub fn client_config(&self) -> ClientConfig {
        ClientConfig {
            provider: self.provider,
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            model: self.model.clone(),
            max_tokens: self.max_tokens,
            retry: RetryPolicy {
                max_attempts: self.network.max_retries.max(1),
                base_delay: Duration::from_millis(self.network.retry_base_delay_ms),
                max_delay: Duration::from_secs(60),
            },
            idle_timeout: Duration::from_secs(self.network.stream_idle_timeout.max(1)),
            connect_timeout: Duration::from_secs(self.network.connect_timeout.max(1)),
        }
    }
}

/// The commented file `herald config path` creates when none exists.
pub const DEFAULT_CONFIG: &str = r#"# herald configuration. Precedence: command-line flags > environment > this file.
# model = "gpt-4.1"            # or "claude-sonnet-4-5", a local model name, ...
# provider = "openai"          # openai (any OpenAI-compatible server) | anthropic
# base_url = ""                # empty = provider default; e.g. http://127.0.0.1:11434/v1 for Ollama
# api_key = ""                 # prefer OPENAI_API_KEY / ANTHROPIC_API_KEY in the environment
# max_iterations = 90          # model requests per turn before a final summary is requested
# toolsets = ["terminal", "file"]

[network]
# max_retries = 4              # tries per request on 429 / 5xx / connection errors
# retry_base_delay_ms = 1000   # first backoff; doubles each retry, with jitter
# stream_idle_timeout = 120    # seconds without a byte before the stream is retried

[tools]
# output_limit_chars = 50000   # longer tool results keep head and tail

[delegation]
# max_iterations = 50          # model requests per child
# max_concurrent_children = 3  # largest delegate_task batch (floor 1); larger batches are an error
# max_spawn_depth = 1          # 1 = children cannot delegate; up to 3
# orchestrator_enabled = true  # role="orchestrator" children may delegate when depth allows
# child_timeout_seconds = 600  # inactivity timeout per child; 0 = none
# model = ""                   # child model/provider/base_url/api_key override (empty = parent's)
# max_background_agents = 8
# budget_tokens = 0            # token cap per delegation tree; 0 = unlimited
# prune_after_hours = 24       # finished agent records older than this are pruned

[memory]
# memory_enabled = true
# user_profile_enabled = true
# memory_char_limit = 2200
# user_char_limit = 1375

[compression]
# enabled = true
# threshold = 0.50             # fraction of the context window that triggers compression
# target_ratio = 0.20
# protect_first_n = 3
# protect_last_n = 20
# context_window = 0           # 0 = built-in table by model name

[code_execution]
# timeout = 300
# max_tool_calls = 50
# landlock = false             # confine scripts with Landlock (Linux)
"#;

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

    fn resolve(
        config: &Config,
        env_pairs: &[(&str, &str)],
        flags: &Overrides,
    ) -> Result<Settings, ConfigError> {
        Settings::resolve(
            config,
            Path::new("/h/config.toml"),
            PathBuf::from("/h"),
            &env(env_pairs),
            flags,
        )
    }

    #[test]
    fn missing_key_and_base_url_names_the_variables() {
        let err = resolve(&Config::default(), &[], &Overrides::default()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("OPENAI_API_KEY") && text.contains("OPENAI_BASE_URL"),
            "{text}"
        );
        let err = resolve(
            &Config::default(),
            &[("HERALD_PROVIDER", "anthropic")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"));
    }

    #[test]
    fn flags_beat_env_beat_file() {
        let config: Config = toml::from_str(
            "model = \"file-model\"\nprovider = \"anthropic\"\nbase_url = \"http://file\"\nmax_iterations = 7\n[network]\nmax_retries = 2\n",
        )
        .unwrap();
        let s = resolve(&config, &[], &Overrides::default()).unwrap();
        assert_eq!(
            (
                s.model.as_str(),
                s.provider,
                s.base_url.as_str(),
                s.max_iterations
            ),
            ("file-model", ProviderKind::Anthropic, "http://file", 7)
        );
        assert_eq!(s.network.max_retries, 2);
        let s = resolve(
            &config,
            &[
                ("HERALD_MODEL", "env-model"),
                ("ANTHROPIC_BASE_URL", "http://env"),
            ],
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            (s.model.as_str(), s.base_url.as_str()),
            ("env-model", "http://env")
        );
        let flags = Overrides {
            model: Some("flag-model".into()),
            provider: Some("openai".into()),
            base_url: Some("http://flag".into()),
            max_iterations: Some(3),
            ..Overrides::default()
        };
        let s = resolve(&config, &[("HERALD_MODEL", "env-model")], &flags).unwrap();
        assert_eq!(
            (
                s.model.as_str(),
                s.provider,
                s.base_url.as_str(),
                s.max_iterations
            ),
            ("flag-model", ProviderKind::OpenAi, "http://flag", 3)
        );
    }

    #[test]
    fn provider_default_models_and_bad_values() {
        let s = resolve(
            &Config::default(),
            &[("ANTHROPIC_API_KEY", "k"), ("HERALD_PROVIDER", "anthropic")],
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(s.model, "claude-sonnet-4-5");
        assert_eq!(s.api_key.as_deref(), Some("k"));
        let err = resolve(
            &Config::default(),
            &[("HERALD_PROVIDER", "gemini")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown provider 'gemini'"));
        let err = resolve(
            &Config::default(),
            &[("OPENAI_BASE_URL", "localhost:1")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("http://"));
        let flags = Overrides {
            cwd: Some(PathBuf::from("/definitely/not/here")),
            ..Overrides::default()
        };
        let err = resolve(&Config::default(), &[("OPENAI_API_KEY", "k")], &flags).unwrap_err();
        assert!(err.to_string().contains("--cwd"));
    }

    #[test]
    fn unknown_sections_load_and_bad_toml_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[delegation]\nmax_concurrent_children = 3\n").unwrap();
        assert!(Config::load(&path).is_ok());
        std::fs::write(&path, "model = [").unwrap();
        assert!(matches!(
            Config::load(&path),
            Err(ConfigError::Parse { .. })
        ));
        assert!(Config::load(&dir.path().join("missing.toml")).is_ok());
        let parsed: Config = toml::from_str(DEFAULT_CONFIG).unwrap();
        assert_eq!(parsed.network.max_retries, 4);
    }
}
