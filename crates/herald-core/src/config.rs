//! `config.toml`, environment variables and command-line flags merged into
//! the settings a run uses (flags > env > file > defaults).
//!
//! Loading checks the file (`check.rs`): unknown keys and sections that are
//! not implemented yet become [`ConfigWarning`]s, numbers outside their
//! documented range are a [`ConfigError::OutOfRange`]. `show.rs` renders the
//! effective settings for `herald config show`.

mod check;
mod fallback;
mod pricing;
mod reasoning;
mod show;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use herald_llm::{ClientConfig, ProviderKind, RetryPolicy};
use serde::{Deserialize, Serialize};

pub use crate::config_sections::{
    BrowserConfig, CheckpointsConfig, CodeExecutionConfig, CompressionConfig, DelegationConfig,
    McpConfig, MemoryConfig, PermissionsConfig, ServeConfig, SessionsConfig, WatchConfig,
    WebConfig,
};
pub use check::ConfigWarning;
pub use fallback::{FallbackEntry, FallbackProvider};
pub use reasoning::ThinkingConfig;
pub use show::EffectiveConfig;

/// A configuration problem; the CLI exits with code 2 and prints the message.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not valid TOML or a value has the wrong type.
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A number outside its documented range.
    #[error("{0}")]
    OutOfRange(Box<OutOfRange>),
    /// Any other invalid value; the message names it.
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
    /// `[delegation] provider` names another provider, and nothing says how
    /// to reach it.
    #[error(
        "no API key or base URL for the [delegation] provider '{provider}' (children do not reuse the parent's {parent} key): set {key_var} (or {base_var} for a local server), or api_key / base_url under [delegation] in {config}"
    )]
    MissingChildCredentials {
        provider: &'static str,
        parent: &'static str,
        key_var: &'static str,
        base_var: &'static str,
        config: String,
    },
}

/// A number outside its documented range: what [`ConfigError::OutOfRange`]
/// reports.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{path}: {key} = {value} is out of range; allowed: {allowed} ({meaning}). Change it, or remove the line to use the default ({default})"
)]
pub struct OutOfRange {
    /// The config file.
    pub path: PathBuf,
    /// `[compression] threshold`, or a top-level key or flag.
    pub key: String,
    /// The value as written.
    pub value: String,
    /// The allowed range, e.g. `0.05 to 0.95`.
    pub allowed: String,
    /// What the setting means.
    pub meaning: &'static str,
    /// The value used when the key is absent.
    pub default: &'static str,
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
    /// Seconds one model request may take in all, however steadily it
    /// streams: a reply still running then is cut there (a runaway local
    /// model otherwise generates for many minutes).
    pub request_timeout_seconds: u64,
    /// Seconds to establish a connection to the provider.
    pub connect_timeout: u64,
    /// Requests in flight to one provider endpoint from this process at
    /// most (every agent of a tree shares them; each holds a connection).
    pub max_requests_in_flight: usize,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            max_retries: 4,
            retry_base_delay_ms: 1000,
            stream_idle_timeout: 120,
            request_timeout_seconds: 600,
            connect_timeout: 30,
            max_requests_in_flight: herald_llm::DEFAULT_MAX_IN_FLIGHT,
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

/// The contents of `config.toml`. Unknown keys and the sections herald does
/// not implement yet (`[mcp_servers]`, `[[hooks]]`, ...) are kept as raw
/// tables in `other`, so a file written for a newer herald still loads; each
/// one is reported in `warnings`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Model name; the provider's default when unset.
    pub model: Option<String>,
    /// `openai` (any OpenAI-compatible server) or `anthropic`.
    pub provider: Option<String>,
    /// Provider base URL; the provider's public endpoint when unset.
    pub base_url: Option<String>,
    /// Provider key; the provider's key variable wins over it.
    pub api_key: Option<String>,
    /// The variable holding the key, or a list of them (a credential pool
    /// rotated on 429); the provider's key variable when unset.
    pub api_key_env: Option<toml::Value>,
    /// `[[fallback]]`: endpoints tried in order when the current one fails.
    pub fallback: Vec<FallbackEntry>,
    /// Seconds on a fallback before the primary is tried again (default 300).
    pub fallback_cooldown: Option<u64>,
    /// Model requests per turn (default 90).
    pub max_iterations: Option<u32>,
    /// Output token cap per reply.
    pub max_tokens: Option<u32>,
    /// The model takes images (tool results send theirs); `false` for
    /// text-only models. Default true.
    pub images: Option<bool>,
    /// `reasoning_effort` sent to OpenAI-compatible reasoning models
    /// (`low`, `medium`, `high`); unset = not sent.
    pub reasoning_effort: Option<String>,
    /// `[thinking]`: Anthropic extended thinking.
    pub thinking: reasoning::ThinkingConfig,
    /// Toolsets to enable; all when unset.
    pub toolsets: Option<Vec<String>>,
    /// `[network]`.
    pub network: NetworkConfig,
    /// `[tools]`.
    pub tools: ToolsConfig,
    /// `[delegation]`.
    pub delegation: DelegationConfig,
    /// `[memory]`.
    pub memory: MemoryConfig,
    /// `[compression]`.
    pub compression: CompressionConfig,
    /// `[sessions]`.
    pub sessions: SessionsConfig,
    /// `[checkpoints]`.
    pub checkpoints: CheckpointsConfig,
    /// `[watch]`.
    pub watch: WatchConfig,
    /// `[code_execution]`.
    pub code_execution: CodeExecutionConfig,
    /// `[web]`.
    pub web: WebConfig,
    /// `[browser]`.
    pub browser: BrowserConfig,
    /// `[routing]`: which model does which work.
    pub routing: crate::routing::RoutingConfig,
    /// `[serve]`.
    pub serve: ServeConfig,
    /// `[permissions]`.
    pub permissions: PermissionsConfig,
    /// `[mcp]`.
    pub mcp: McpConfig,
    /// `[mcp_servers]`, parsed and checked by `herald_mcp::parse_servers`
    /// when settings are resolved.
    pub mcp_servers: toml::Table,
    /// `[[hooks]]`: commands run on session events (checked when loaded).
    pub hooks: Vec<crate::hooks::HookEntry>,
    /// `[pricing."model"]`: USD per million tokens that extend or override
    /// the built-in price table (checked when loaded).
    pub pricing: toml::Table,
    /// Every other key of the file, unread.
    #[serde(flatten)]
    pub other: toml::Table,
    /// What the check of the file found that does not stop herald: unknown
    /// keys (with the closest valid key) and unimplemented sections.
    #[serde(skip)]
    pub warnings: Vec<ConfigWarning>,
}

impl Config {
    /// Loads and checks `path`; a missing file is an empty configuration.
    /// A number out of its range is an error; unknown keys and
    /// unimplemented sections end up in [`Config::warnings`].
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Parses and checks the text of a config file (`path` is only named in
    /// messages).
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let parse_error = |err: toml::de::Error| ConfigError::Parse {
            path: path.to_owned(),
            message: err.to_string(),
        };
        let table: toml::Table = toml::from_str(text).map_err(parse_error)?;
        let warnings = check::check(&table).map_err(|err| {
            ConfigError::OutOfRange(Box::new(OutOfRange {
                path: path.to_owned(),
                key: err.key,
                value: err.value,
                allowed: err.allowed,
                meaning: err.meaning,
                default: err.default,
            }))
        })?;
        let mut config: Self = toml::from_str(text).map_err(parse_error)?;
        crate::hooks::check_hooks(&config.hooks, crate::hooks::HookOrigin::User, path)
            .map_err(ConfigError::Invalid)?;
        pricing::parse(&config.pricing)
            .map_err(|err| ConfigError::Invalid(format!("{}: {err}", path.display())))?;
        config.warnings = warnings;
        Ok(config)
    }
}

/// Values given on the command line; `None` means "not given".
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--model`.
    pub model: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub max_iterations: Option<u32>,
    pub toolsets: Option<Vec<String>>,
    pub cwd: Option<PathBuf>,
    /// `--reasoning-effort`.
    pub reasoning_effort: Option<String>,
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

/// The model endpoint children use when `[delegation]` overrides the
/// parent's, resolved the way the root resolves its own: a child on another
/// provider takes that provider's key and base URL variables (or
/// `[delegation] api_key` / `base_url`), never the parent's.
#[derive(Debug, Clone)]
pub struct ChildProvider {
    /// The child's wire API.
    pub provider: ProviderKind,
    /// The child's model.
    pub model: String,
    /// The child's base URL; empty = the provider's public endpoint.
    pub base_url: String,
    /// The child's key, if any (a local server needs none).
    pub api_key: Option<String>,
    /// Where the key came from, for `herald doctor` and `config show`:
    /// `ANTHROPIC_API_KEY`, `[delegation] api_key`, `the parent's settings`.
    pub key_source: Option<String>,
}

/// The effective settings of one run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `$HERALD_HOME`.
    pub home: PathBuf,
    /// The config file read (it may not exist).
    pub config_path: PathBuf,
    /// The root agent's wire API.
    pub provider: ProviderKind,
    /// The root agent's model.
    pub model: String,
    /// The root agent's base URL; empty = the provider's public endpoint.
    pub base_url: String,
    /// The root agent's key, if any (the first of `api_keys` when a pool is set).
    pub api_key: Option<String>,
    /// The root's credential pool from `api_key_env` (empty = `api_key` alone).
    pub api_keys: Vec<herald_llm::PoolKey>,
    /// `[[fallback]]` endpoints, resolved, in order.
    pub fallbacks: Vec<FallbackProvider>,
    /// `fallback_cooldown`.
    pub fallback_cooldown: Duration,
    /// Model requests per turn.
    pub max_iterations: u32,
    /// Output token cap per reply.
    pub max_tokens: Option<u32>,
    /// Top-level `images`: tool results send their images to the model.
    pub images: bool,
    /// `reasoning_effort` and `[thinking]`, checked.
    pub reasoning: herald_llm::ReasoningConfig,
    /// Toolsets to enable; all when `None`.
    pub toolsets: Option<Vec<String>>,
    /// The agent's working directory.
    pub cwd: PathBuf,
    /// `[tools] output_limit_chars`.
    pub output_limit_chars: usize,
    /// `[network]`.
    pub network: NetworkConfig,
    /// `[delegation]`.
    pub delegation: DelegationConfig,
    /// The children's endpoint when `[delegation]` overrides the model,
    /// provider, base URL or key; `None` = children use the parent's client.
    pub child: Option<ChildProvider>,
    /// `[memory]`.
    pub memory: MemoryConfig,
    /// `[compression]`.
    pub compression: CompressionConfig,
    /// `[sessions]`.
    pub sessions: SessionsConfig,
    /// `[checkpoints]`.
    pub checkpoints: CheckpointsConfig,
    /// `[watch]`.
    pub watch: WatchConfig,
    /// `[code_execution]`.
    pub code_execution: CodeExecutionConfig,
    /// `[web]`.
    pub web: WebConfig,
    /// The `web_search` key, read from `[web] api_key_env` (or the
    /// backend's usual variable).
    pub web_search_key: Option<String>,
    /// `[browser]`.
    pub browser: BrowserConfig,
    /// `[routing]`, checked.
    pub routing: crate::routing::RoutingConfig,
    /// `[serve]`.
    pub serve: ServeConfig,
    /// `[permissions]`, with `--mode` applied.
    pub permissions: PermissionsConfig,
    /// `[mcp]`.
    pub mcp: McpConfig,
    /// `[mcp_servers]` (disabled ones included), by name.
    pub mcp_servers: std::collections::BTreeMap<String, herald_mcp::McpServerConfig>,
    /// The project's `.mcp.json`, if the working directory has one.
    pub project_mcp: Option<ProjectMcp>,
    /// `[[hooks]]` of the config file, checked, in file order.
    pub hooks: Vec<crate::hooks::HookSpec>,
    /// The project's `.herald/hooks.toml`, if the working directory has one
    /// (its hooks run only once approved).
    pub project_hooks: Option<crate::hooks::ProjectHooks>,
    /// `[pricing]`: price overrides by model name, installed for the
    /// process when a session opens (`herald_llm::install_price_overrides`).
    pub pricing: Vec<(String, herald_llm::Price)>,
}

/// A project's `.mcp.json` and whether the user approved it as it is.
#[derive(Debug, Clone)]
pub struct ProjectMcp {
    /// Its servers (none, with the reason in `problems`, when unreadable).
    pub servers: herald_mcp::ProjectServers,
    /// Approved with `herald mcp approve`; until then nothing starts.
    pub approved: bool,
}

impl ProjectMcp {
    /// Finds and reads the `.mcp.json` that applies to `cwd`.
    pub fn find(cwd: &Path, home: &Path, env: &HashMap<String, String>) -> Option<Self> {
        let path = herald_mcp::find_project_file(cwd)?;
        let path = path.canonicalize().unwrap_or(path);
        let servers = herald_mcp::load_project_servers(&path, |name| env.get(name).cloned())
            .unwrap_or_else(|err| herald_mcp::ProjectServers {
                path: path.clone(),
                digest: String::new(),
                servers: std::collections::BTreeMap::new(),
                problems: vec![err.to_string()],
            });
        let approved = !servers.servers.is_empty()
            && herald_mcp::ProjectApprovals::in_home(home).is_approved(&servers);
        Some(Self { servers, approved })
    }

    /// What the user should hear at session start: servers waiting for
    /// approval, or entries that could not be used.
    pub fn warnings(&self) -> Vec<String> {
        let path = self.servers.path.display();
        let mut warnings = Vec::new();
        if !self.approved && !self.servers.servers.is_empty() {
            let names: Vec<&str> = self.servers.servers.keys().map(String::as_str).collect();
            let dir = self
                .servers
                .path
                .parent()
                .map_or_else(String::new, |d| d.display().to_string());
            warnings.push(format!(
                "{path} defines MCP servers ({}) that were not started: a project's servers run only after you approve them. Review the file, then run `herald mcp approve` in {dir}",
                names.join(", ")
            ));
        }
        for problem in &self.servers.problems {
            warnings.push(format!("{path}: {problem}"));
        }
        warnings
    }
}

/// The model a provider uses when none is configured.
fn default_model(provider: ProviderKind) -> String {
    match provider {
        ProviderKind::OpenAi => "gpt-4.1".to_owned(),
        ProviderKind::Anthropic => "claude-sonnet-4-5".to_owned(),
    }
}

/// Allowed values of `--max-iterations` / `max_iterations`.
const MAX_ITERATIONS: std::ops::RangeInclusive<u32> = 1..=10_000;

impl Settings {
    /// Merges file, environment and flags. Fails when nothing says where or
    /// how to reach a model (for the root, or for children on another
    /// provider).
    pub fn resolve(
        config: &Config,
        config_path: &Path,
        home: PathBuf,
        env: &HashMap<String, String>,
        flags: &Overrides,
    ) -> Result<Self, ConfigError> {
        Self::resolve_inner(config, config_path, home, env, flags, true)
    }

    /// [`Settings::resolve`] without the credentials check, for showing the
    /// configuration (`herald config show`) on a machine with no key set.
    pub fn resolve_without_credentials(
        config: &Config,
        config_path: &Path,
        home: PathBuf,
        env: &HashMap<String, String>,
        flags: &Overrides,
    ) -> Result<Self, ConfigError> {
        Self::resolve_inner(config, config_path, home, env, flags, false)
    }

    fn resolve_inner(
        config: &Config,
        config_path: &Path,
        home: PathBuf,
        env: &HashMap<String, String>,
        flags: &Overrides,
        require_credentials: bool,
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
            .unwrap_or_else(|| default_model(provider));
        let base_url = flags
            .base_url
            .clone()
            .or_else(|| env_value(provider.base_url_var()))
            .or_else(|| config.base_url.clone())
            .unwrap_or_default();
        let key_vars = fallback::key_vars(config.api_key_env.as_ref(), "api_key_env")?;
        let api_keys = key_vars
            .as_deref()
            .map(|names| fallback::pool(names, env))
            .unwrap_or_default();
        // Variables named on purpose must hold a key, even for a local server.
        if let Some(names) = key_vars.as_deref().filter(|_| require_credentials)
            && api_keys.is_empty()
        {
            return Err(ConfigError::Invalid(format!(
                "api_key_env in {} names {} but none of them is set: set one, or remove api_key_env to use {}",
                config_path.display(),
                names.join(", "),
                provider.key_var()
            )));
        }
        let api_key = match &key_vars {
            Some(_) => api_keys.first().map(|k| k.value.clone()),
            None => env_value(provider.key_var())
                .or_else(|| config.api_key.clone())
                .filter(|k| !k.trim().is_empty()),
        };
        let fallbacks =
            fallback::resolve_fallbacks(&config.fallback, env, config_path, require_credentials)?;
        if require_credentials && api_key.is_none() && base_url.trim().is_empty() {
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
        let reasoning = reasoning::resolve(
            config.reasoning_effort.as_deref(),
            flags.reasoning_effort.as_deref(),
            &config.thinking,
            config.max_tokens,
            config_path,
        )?;
        let max_iterations = flags.max_iterations.or(config.max_iterations).unwrap_or(90);
        if !MAX_ITERATIONS.contains(&max_iterations) {
            return Err(ConfigError::OutOfRange(Box::new(OutOfRange {
                path: config_path.to_owned(),
                key: if flags.max_iterations.is_some() {
                    "--max-iterations".to_owned()
                } else {
                    "max_iterations".to_owned()
                },
                value: max_iterations.to_string(),
                allowed: format!("{} to {}", MAX_ITERATIONS.start(), MAX_ITERATIONS.end()),
                meaning: "model requests per turn",
                default: "90",
            })));
        }
        let root = (
            provider,
            model.as_str(),
            base_url.as_str(),
            api_key.as_deref(),
        );
        let child = resolve_child(
            &config.delegation,
            root,
            env,
            config_path,
            require_credentials,
        )?;
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
        let mcp_servers = herald_mcp::parse_servers(&config.mcp_servers)
            .map_err(|err| ConfigError::Invalid(format!("{}: {err}", config_path.display())))?;
        let project_mcp = ProjectMcp::find(&cwd, &home, env);
        let hooks =
            crate::hooks::check_hooks(&config.hooks, crate::hooks::HookOrigin::User, config_path)
                .map_err(ConfigError::Invalid)?;
        let project_hooks = crate::hooks::ProjectHooks::find(&cwd, &home);
        config
            .routing
            .check()
            .map_err(|err| ConfigError::Invalid(format!("{}: {err}", config_path.display())))?;
        let web_search_key = crate::web::web_search_key(&config.web, env)
            .map_err(|err| ConfigError::Invalid(format!("{}: {err}", config_path.display())))?;
        let pricing = pricing::parse(&config.pricing)
            .map_err(|err| ConfigError::Invalid(format!("{}: {err}", config_path.display())))?;
        Ok(Self {
            home,
            config_path: config_path.to_owned(),
            provider,
            model,
            base_url,
            api_key,
            api_keys,
            fallbacks,
            fallback_cooldown: fallback::cooldown(config.fallback_cooldown),
            max_iterations,
            max_tokens: config.max_tokens,
            images: config.images.unwrap_or(true),
            reasoning,
            toolsets,
            cwd,
            output_limit_chars: config.tools.output_limit_chars,
            network: config.network.clone(),
            delegation: config.delegation.clone(),
            child,
            memory: config.memory.clone(),
            compression: config.compression.clone(),
            sessions: config.sessions.clone(),
            checkpoints: config.checkpoints.clone(),
            watch: config.watch.clone(),
            code_execution: config.code_execution.clone(),
            web: config.web.clone(),
            web_search_key,
            browser: config.browser.clone(),
            routing: config.routing.clone(),
            serve: config.serve.clone(),
            permissions: config.permissions.clone(),
            mcp: config.mcp.clone(),
            mcp_servers,
            project_mcp,
            hooks,
            project_hooks,
            pricing,
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
            request_timeout: Duration::from_secs(self.network.request_timeout_seconds.max(1)),
            connect_timeout: Duration::from_secs(self.network.connect_timeout.max(1)),
            max_in_flight: self.network.max_requests_in_flight.max(1),
            images: self.images,
            reasoning: self.reasoning,
        }
    }

    /// The client configuration of children when `[delegation]` overrides
    /// the parent's endpoint; `None` = children share the parent's client.
    /// Network behaviour (retries, timeouts) is the parent's.
    pub fn child_client_config(&self) -> Option<ClientConfig> {
        let child = self.child.as_ref()?;
        Some(ClientConfig {
            provider: child.provider,
            base_url: child.base_url.clone(),
            api_key: child.api_key.clone(),
            model: child.model.clone(),
            // The parent's reasoning controls are for the parent's model;
            // another model may refuse them.
            reasoning: herald_llm::ReasoningConfig::default(),
            ..self.client_config()
        })
    }
}

/// The children's endpoint, when `[delegation]` sets a model, provider,
/// base URL or key. `root` is the parent's (provider, model, base URL, key).
///
/// On the parent's provider the child starts from the parent's endpoint and
/// key. On another provider it resolves like a root on that provider would:
/// key from `[delegation] api_key`, else that provider's key variable; base
/// URL from `[delegation] base_url`, else that provider's base URL variable,
/// else its public endpoint; model from `[delegation] model`, else that
/// provider's default model. The parent's key is never sent to it.
fn resolve_child(
    d: &DelegationConfig,
    root: (ProviderKind, &str, &str, Option<&str>),
    env: &HashMap<String, String>,
    config_path: &Path,
    require_credentials: bool,
) -> Result<Option<ChildProvider>, ConfigError> {
    let (root_provider, root_model, root_base_url, root_key) = root;
    let set = |v: &str| (!v.trim().is_empty()).then(|| v.trim().to_owned());
    let env_value = |name: &str| env.get(name).filter(|v| !v.trim().is_empty()).cloned();
    if [&d.model, &d.provider, &d.base_url, &d.api_key]
        .iter()
        .all(|v| v.trim().is_empty())
    {
        return Ok(None);
    }
    let provider = match set(&d.provider) {
        Some(name) => name
            .parse()
            .map_err(|err| ConfigError::Invalid(format!("[delegation] provider: {err}")))?,
        None => root_provider,
    };
    let same = provider == root_provider;
    let model = set(&d.model).unwrap_or_else(|| {
        if same {
            root_model.to_owned()
        } else {
            default_model(provider)
        }
    });
    let base_url = match set(&d.base_url) {
        Some(url) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::Invalid(format!(
                    "[delegation] base_url '{url}' must start with http:// or https://"
                )));
            }
            url
        }
        None if same => root_base_url.to_owned(),
        None => env_value(provider.base_url_var()).unwrap_or_default(),
    };
    if !base_url.is_empty() && !base_url.starts_with("http://") && !base_url.starts_with("https://")
    {
        return Err(ConfigError::Invalid(format!(
            "{} '{base_url}' (the [delegation] provider's base URL) must start with http:// or https://",
            provider.base_url_var()
        )));
    }
    let (api_key, key_source) = if let Some(key) = set(&d.api_key) {
        (Some(key), Some("[delegation] api_key".to_owned()))
    } else if same {
        (
            root_key.map(str::to_owned),
            root_key.map(|_| "the parent's settings".to_owned()),
        )
    } else {
        let key = env_value(provider.key_var());
        let source = key.as_ref().map(|_| provider.key_var().to_owned());
        (key, source)
    };
    if require_credentials && !same && api_key.is_none() && base_url.is_empty() {
        return Err(ConfigError::MissingChildCredentials {
            provider: provider.as_str(),
            parent: root_provider.key_var(),
            key_var: provider.key_var(),
            base_var: provider.base_url_var(),
            config: config_path.display().to_string(),
        });
    }
    Ok(Some(ChildProvider {
        provider,
        model,
        base_url,
        api_key,
        key_source,
    }))
}

/// The commented file `herald config path` creates when none exists.
pub const DEFAULT_CONFIG: &str = r#"# herald configuration. Precedence: command-line flags > environment > this file.
# Unknown keys are reported (with the closest valid key) and ignored; a number
# outside its range stops herald with exit code 2. Ranges are given below.
# model = "gpt-4.1"            # or "claude-sonnet-4-5", a local model name, ...
# provider = "openai"          # openai (any OpenAI-compatible server) | anthropic
# base_url = ""                # empty = provider default; e.g. http://127.0.0.1:11434/v1 for Ollama
# api_key = ""                 # prefer OPENAI_API_KEY / ANTHROPIC_API_KEY in the environment
# max_iterations = 90          # 1-10000 model requests per turn before a final summary is requested
# max_tokens = 8192            # 1-1000000 output tokens per reply (default 8192; 32768 with reasoning_effort)
# images = true                # the model takes images: tool results (MCP screenshots) send
#                              #   theirs; false for text-only models (only their text is sent)
# toolsets = ["terminal", "file"]
# reasoning_effort = "medium"  # low | medium | high, sent to OpenAI-compatible reasoning
#                              #   models (max_tokens is then sent as max_completion_tokens)

[thinking]
# budget_tokens = 4096         # 1024-1000000; Anthropic extended thinking tokens per reply,
#                              #   below max_tokens (unset: max_tokens = budget + 8192)

[network]
# max_retries = 4              # 1-20 tries per request on 429 / 5xx / connection errors
# retry_base_delay_ms = 1000   # 1-60000; first backoff, doubles each retry, with jitter
# stream_idle_timeout = 120    # 1-3600 seconds without a byte before the stream is retried
# request_timeout_seconds = 600 # 1-86400 seconds one model request may take in all; a reply
#                              #   still streaming then is cut there (kept, with a warning)
# connect_timeout = 30         # 1-300 seconds to connect
# max_requests_in_flight = 1024 # 1-65536 requests (and connections) in flight to one
#                              #   provider endpoint from the whole process; 429s lower it

[tools]
# output_limit_chars = 50000   # 1000-10000000; longer tool results keep head and tail

[delegation]
# max_iterations = 50          # 1-10000 model requests per child
# max_concurrent_children = 3  # 1-10000; largest delegate_task batch; larger batches are an error
# max_spawn_depth = 1          # 1-3; 1 = children cannot delegate
# orchestrator_enabled = true  # role="orchestrator" children may delegate when depth allows
# child_timeout_seconds = 600  # 0-86400 inactivity timeout per child; 0 = none
# model = ""                   # child model (empty = the parent's, or the provider default)
# provider = ""                # child provider; another provider uses its own key and
#                              #   base URL (ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, ...)
# base_url = ""                # child base URL override
# api_key = ""                 # child key override
# max_background_agents = 8    # 1-10000
# budget_tokens = 0            # 0-1000000000000 token cap per delegation tree; 0 = unlimited
# prune_after_hours = 24       # 1-87600; finished agent records older than this are pruned

[memory]
# memory_enabled = true        # false also turns the memory flush off
# user_profile_enabled = true
# memory_char_limit = 2200     # 100-100000
# user_char_limit = 1375       # 100-100000
# Memory flush: one bounded extra request (only the memory tool runs) lets the
# model save durable facts before a compaction summarises the conversation and
# when a long session ends (its reply's closing paragraph becomes the
# session's searchable summary).
# flush_before_compaction = true
# flush_min_turns = 6          # 0-10000 user turns (since the last flush) for the
#                              #   flush at session end; 0 = never at the end
# flush_timeout_seconds = 3    # 1-300; Ctrl+C, Esc or SIGTERM ends it at once

[compression]
# enabled = true
# threshold = 0.50             # 0.05-0.95 of the context window triggers compression
# target_ratio = 0.20          # 0.05-0.9 of that size for the kept recent messages
# protect_first_n = 3          # 0-1000
# protect_last_n = 20          # 1-1000
# context_window = 0           # 0 = built-in table by model name, else 1000-100000000
# model = ""                   # a cheaper model for summaries (same endpoint); empty = the session's

[sessions]
# title_model = ""             # a small model names each new session after its first
#                              #   prompt (same endpoint, one request beside the turn,
#                              #   counted in its usage); empty = the prompt's first line

[checkpoints]
# enabled = true               # snapshot the working tree before turns that change files
# keep_days = 30               # 0-36500; older checkpoints are pruned (daily, in the
#                              #   background at start; `herald checkpoints prune`); 0 = never
# max_size_mb = 2048           # 0-10000000; beyond it the oldest checkpoints go first; 0 = no limit

[web]
# search = ""                  # searxng | brave | tavily | exa; empty = no web_search
# search_url = ""              # the SearXNG instance; the others default to their service
# api_key_env = ""             # empty = BRAVE_API_KEY, TAVILY_API_KEY or EXA_API_KEY
# allow_private = false        # let web and browser tools reach loopback/private/metadata addresses
# allow_hosts = []             # hosts reachable although private, e.g. ["docs.intranet"]
# timeout_seconds = 30         # 1-600, per request
# max_download_mb = 10         # 1-1024, per web_extract URL

[browser]
# enabled = false              # offer the browser toolset (or name it in --toolsets)
# executable = ""              # Chromium/Chrome path or name; empty = search PATH
# cdp_url = ""                 # attach to a running Chrome, e.g. "http://127.0.0.1:9222"
# headless = true              # launch without a window
# timeout_seconds = 30         # 1-600, per navigation

[watch]
# enabled = true               # tell the model when a file it read or edited is changed outside
#                              #   the session (a note at the end of the next tool result)

[code_execution]
# timeout = 300                # 1-86400 seconds
# max_tool_calls = 50          # 1-10000
# landlock = false             # confine scripts with Landlock (Linux)
# python = ""                  # interpreter; empty = python3 from PATH

# herald serve (its flags win over these)
[serve]
# host = "127.0.0.1"           # anything but loopback needs --token / HERALD_SERVE_TOKEN
# port = 8787                  # 0 = any free port
# max_concurrent_turns = 64    # 1-100000; more get HTTP 429
# max_open_sessions = 256      # 1-100000
# max_body_bytes = 4194304     # 1024-1073741824; larger get HTTP 413
# cors_origins = []            # browser origins allowed; empty = CORS off

# What tools may do without asking (see README "Safety"). Project rules in
# .herald/permissions.toml may add ask/deny only; approvals answered "always"
# are saved to permissions.toml next to this file.
[permissions]
# mode = "workspace-write"     # read-only | workspace-write | full-access (--mode wins)
# allow = []                   # e.g. ["terminal(cargo *)", { rule = "terminal(curl *)", network = true }]
# ask = []                     # e.g. ["terminal(git commit*)"]
# deny = []                    # e.g. ["terminal(docker *)", "mcp__fs__delete*"]
# writable_roots = []          # extra directories confined commands may write
# network = false              # confined commands may use the network
# env_keep = []                # variables kept although named like KEY/SECRET/TOKEN/PASSWORD
# env_exclude = []             # variables tool processes never see
# read_only_tools = []         # MCP tools that only read (run without asking)

# [mcp]
# schema_budget_percent = 10    # MCP tool schemas over this share of the context
#                               # window are found with mcp_search instead (0 = always)

# MCP servers (`herald mcp add NAME -- COMMAND ARGS...` writes these):
# [mcp_servers.fs]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "/path/to/dir"]
# env = {}                      # added to the filtered environment
# startup_timeout_sec = 10
# tool_timeout_sec = 60
# include_tools = []            # globs of the server's tool names
# exclude_tools = []
# [mcp_servers.web]
# url = "http://127.0.0.1:3001/mcp"
# bearer_token_env_var = "WEB_MCP_TOKEN"

# Hooks: commands run on session events, with the event as JSON on stdin
# (see README "Hooks"). Events: session_start user_prompt pre_tool post_tool
# subagent_start subagent_stop pre_compact session_end notification
# file_changed. Exit code
# 2 blocks (stderr is the reason); exit 0 may print a JSON decision. A
# project's .herald/hooks.toml runs only after `herald hooks approve`.
# [[hooks]]
# event = "pre_tool"
# matcher = "terminal"          # tool-name glob, `|` between alternatives; all when absent
# command = "~/.herald/hooks/guard.sh"   # run with bash -c in the session's directory
# timeout = 60                  # 1-600 seconds, then the command's process group is killed

# Providers that keep working: when the provider fails after its retries
# (429 / 5xx / connection errors) or answers 401 / 403 / 404 (unknown model),
# requests move to the next [[fallback]] entry (a provider.fallback event and a
# line on stderr say so); after fallback_cooldown seconds the primary is tried again.
# api_key_env = ["OPENAI_API_KEY", "OPENAI_API_KEY_2"]   # a credential pool: on 429 the
#                              #   next key is used at once; backoff only when all are limited
# fallback_cooldown = 300      # 0-86400 seconds on a fallback; 0 = try the primary every request
# [[fallback]]
# provider = "anthropic"
# model = "claude-sonnet-4-5"  # empty = that provider's default
# base_url = ""                # empty = that provider's base URL variable or public endpoint
# api_key_env = "ANTHROPIC_API_KEY"   # or a list (a pool); default that provider's variable

# Prices in USD per million tokens, over the built-in table (a model without a
# price has cost `null` / "cost unknown", never a silent 0). Named exactly
# (an `org/` routing prefix may be left off); cache prices default to `input`.
# [pricing."my-model"]
# input = 0.40
# output = 1.60
# cache_read = 0.10            # prompt tokens served from the provider's cache
# cache_write = 0.50           # prompt tokens written to it (Anthropic)
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

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/h/config.toml"))
    }

    #[test]
    fn load_rejects_numbers_out_of_range_and_keeps_warnings() {
        let err = parse("[compression]\nthreshold = 5.0\n").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("[compression] threshold = 5.0 is out of range")
                && text.contains("0.05 to 0.95")
                && text.contains("/h/config.toml"),
            "{text}"
        );
        let config = parse("modle = \"x\"\n[delegation]\nmax_iteratons = 3\n").unwrap();
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
        let flags = Overrides {
            max_iterations: Some(0),
            ..Overrides::default()
        };
        let err = resolve(&Config::default(), &[("OPENAI_API_KEY", "k")], &flags).unwrap_err();
        assert!(
            err.to_string()
                .contains("--max-iterations = 0 is out of range"),
            "{err}"
        );
    }

    #[test]
    fn a_child_on_another_provider_never_gets_the_parents_key_or_url() {
        let config = parse(
            "api_key = \"sk-parent-file\"\nbase_url = \"http://parent\"\n[delegation]\nprovider = \"anthropic\"\n",
        )
        .unwrap();
        let s = resolve(
            &config,
            &[
                ("OPENAI_API_KEY", "sk-parent"),
                ("ANTHROPIC_API_KEY", "sk-ant-child"),
                ("ANTHROPIC_BASE_URL", "http://child"),
            ],
            &Overrides::default(),
        )
        .unwrap();
        let child = s.child_client_config().unwrap();
        assert_eq!(child.provider, ProviderKind::Anthropic);
        assert_eq!(child.api_key.as_deref(), Some("sk-ant-child"));
        assert_eq!(child.base_url, "http://child");
        assert_eq!(child.model, "claude-sonnet-4-5");
        assert_eq!(
            s.child.as_ref().unwrap().key_source.as_deref(),
            Some("ANTHROPIC_API_KEY")
        );

        // Without the provider's variables: its public endpoint, and no key
        // is an error naming what to set.
        let err = resolve(
            &config,
            &[("OPENAI_API_KEY", "sk-parent")],
            &Overrides::default(),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("ANTHROPIC_API_KEY") && text.contains("[delegation]"),
            "{text}"
        );
        let s = resolve(
            &parse("[delegation]\nprovider = \"anthropic\"\napi_key = \"sk-ant-cfg\"\n").unwrap(),
            &[("OPENAI_API_KEY", "sk-parent")],
            &Overrides::default(),
        )
        .unwrap();
        let child = s.child_client_config().unwrap();
        assert_eq!(
            (child.api_key.as_deref(), child.base_url.as_str()),
            (Some("sk-ant-cfg"), "")
        );

        // Same provider: the parent's endpoint and key, model overridden.
        let s = resolve(
            &parse("[delegation]\nmodel = \"gpt-4.1-nano\"\n").unwrap(),
            &[
                ("OPENAI_API_KEY", "sk-parent"),
                ("OPENAI_BASE_URL", "http://p"),
            ],
            &Overrides::default(),
        )
        .unwrap();
        let child = s.child_client_config().unwrap();
        assert_eq!(
            (
                child.api_key.as_deref(),
                child.base_url.as_str(),
                child.model.as_str()
            ),
            (Some("sk-parent"), "http://p", "gpt-4.1-nano")
        );
        let s = resolve(
            &Config::default(),
            &[("OPENAI_API_KEY", "k")],
            &Overrides::default(),
        )
        .unwrap();
        assert!(s.child.is_none() && s.child_client_config().is_none());
    }
}
