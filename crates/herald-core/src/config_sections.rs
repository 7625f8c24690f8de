//! The feature sections of `config.toml`: `[delegation]`, `[memory]`,
//! `[compression]`, `[sessions]`, `[checkpoints]`, `[watch]` and `[code_execution]`. Every field has a
//! default, so a partial section (or none) is valid.

use serde::{Deserialize, Serialize};

/// `[delegation]`: limits of `delegate_task` and background agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DelegationConfig {
    /// Model requests per child turn.
    pub max_iterations: u32,
    /// Largest batch; floor 1, no ceiling. Larger batches are an error.
    pub max_concurrent_children: u32,
    /// Deepest level a delegation tree may reach; clamped to 1..=3.
    pub max_spawn_depth: u32,
    /// Whether `role = "orchestrator"` children may keep `delegate_task`.
    pub orchestrator_enabled: bool,
    /// Inactivity timeout of a child in seconds; 0 disables it.
    pub child_timeout_seconds: u64,
    /// Optional child model/provider/endpoint/key override (empty = the parent's).
    pub model: String,
    pub provider: String,
    pub base_url: String,
    pub api_key: String,
    /// Background agents allowed to run at once per session tree.
    pub max_background_agents: u32,
    /// Token cap per delegation tree; 0 = unlimited.
    pub budget_tokens: u64,
    /// Hours after which finished agent records are pruned.
    pub prune_after_hours: u64,
}

impl Default for DelegationConfig {
    fn default() -> Self {
        Self {
            max_iterations: 50,
            max_concurrent_children: 3,
            max_spawn_depth: 1,
            orchestrator_enabled: true,
            child_timeout_seconds: 600,
            model: String::new(),
            provider: String::new(),
            base_url: String::new(),
            api_key: String::new(),
            max_background_agents: 8,
            budget_tokens: 0,
            prune_after_hours: 24,
        }
    }
}

impl DelegationConfig {
    /// `max_spawn_depth` clamped to the supported range 1..=3.
    pub fn spawn_depth(&self) -> u32 {
        self.max_spawn_depth.clamp(1, 3)
    }

    /// `max_concurrent_children` with its floor of 1.
    pub fn concurrent_children(&self) -> usize {
        self.max_concurrent_children.max(1) as usize
    }
}

/// `[memory]`: the bounded memory files and the memory flush
/// (one bounded request that lets the model save durable facts before a
/// compaction and at the end of a long session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryConfig {
    pub memory_enabled: bool,
    pub user_profile_enabled: bool,
    pub memory_char_limit: usize,
    pub user_char_limit: usize,
    /// Flush before a compaction summarises the middle of the conversation.
    pub flush_before_compaction: bool,
    /// User turns (since the last flush or compaction) a session needs for
    /// the flush at its end; 0 = never at the end.
    pub flush_min_turns: u32,
    /// Longest the end-of-session flush may hold up leaving, in seconds.
    pub flush_timeout_seconds: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            memory_enabled: true,
            user_profile_enabled: true,
            memory_char_limit: 2200,
            user_char_limit: 1375,
            flush_before_compaction: true,
            flush_min_turns: 6,
            flush_timeout_seconds: 3,
        }
    }
}

/// `[compression]`: when and how the middle of a long conversation is
/// summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressionConfig {
    pub enabled: bool,
    /// Fraction of the model's context window that triggers compression.
    pub threshold: f64,
    /// Share of the threshold the kept tail should take.
    pub target_ratio: f64,
    pub protect_first_n: usize,
    pub protect_last_n: usize,
    /// Context window in tokens; 0 = look the model up in the built-in table.
    pub context_window: u64,
    /// Model that writes the summaries, on the session's endpoint (a
    /// cheaper one than the session's); empty = the session's model.
    pub model: String,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 0.50,
            target_ratio: 0.20,
            protect_first_n: 3,
            protect_last_n: 20,
            context_window: 0,
            model: String::new(),
        }
    }
}

/// `[checkpoints]`: whether turns get file snapshots, and how long and
/// how large the snapshots may grow before they are pruned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointsConfig {
    /// Snapshot the working tree before turns that change files. Off, turns
    /// are still recorded (a rewind restores the conversation, not files).
    pub enabled: bool,
    /// Checkpoints older than this many days are pruned; 0 = never by age.
    pub keep_days: u32,
    /// Largest size of all shadow repositories together in MiB; the oldest
    /// checkpoints go first beyond it; 0 = no size limit.
    pub max_size_mb: u64,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            keep_days: 30,
            max_size_mb: 2048,
        }
    }
}

/// `[web]`: the web tools. `web_extract` is always there; `web_search`
/// only when a search backend is named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebConfig {
    /// `searxng`, `brave`, `tavily` or `exa`; empty = no `web_search`.
    pub search: String,
    /// Where search requests go; SearXNG needs it (the instance's URL),
    /// the others default to their service.
    pub search_url: String,
    /// The environment variable holding the search API key; empty = the
    /// backend's usual one (`BRAVE_API_KEY`, `TAVILY_API_KEY`, `EXA_API_KEY`).
    pub api_key_env: String,
    /// Let the web and browser tools reach loopback, private, link-local
    /// and metadata addresses (refused by default).
    pub allow_private: bool,
    /// Hosts (names or addresses) reachable although private.
    pub allow_hosts: Vec<String>,
    /// Time limit of one request, in seconds.
    pub timeout_seconds: u64,
    /// Largest body one `web_extract` URL may download, in MiB.
    pub max_download_mb: u64,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            search: String::new(),
            search_url: String::new(),
            api_key_env: String::new(),
            allow_private: false,
            allow_hosts: Vec::new(),
            timeout_seconds: 30,
            max_download_mb: 10,
        }
    }
}

/// `[browser]`: the browser toolset (a local Chromium over the DevTools
/// protocol). Off unless enabled here or named in `--toolsets`; its
/// addresses follow `[web] allow_private` and `allow_hosts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowserConfig {
    /// Offer the `browser` toolset in every session.
    pub enabled: bool,
    /// The Chromium or Chrome to launch: a path or a name in `PATH`;
    /// empty = look for chromium, chromium-browser, google-chrome, chrome.
    pub executable: String,
    /// Attach to this running browser instead of launching one
    /// (`http://127.0.0.1:9222`, a Chrome started with
    /// `--remote-debugging-port=9222`); empty = launch.
    pub cdp_url: String,
    /// Run the launched browser without a window.
    pub headless: bool,
    /// Seconds a navigation may take before the result says the page is
    /// still loading.
    pub timeout_seconds: u64,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            executable: String::new(),
            cdp_url: String::new(),
            headless: true,
            timeout_seconds: 30,
        }
    }
}

/// `[watch]`: whether the model is told when a file it read or edited is
/// changed outside the session (see [`crate::watch`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WatchConfig {
    /// Watch the files the session reads and edits; off, no watcher runs.
    pub enabled: bool,
}

impl Default for WatchConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// `[sessions]`: how top-level sessions are kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionsConfig {
    /// Model that names a new top-level session after its first prompt,
    /// on the session's endpoint (one small request, concurrent with the
    /// turn); empty = the title is the prompt's first line.
    pub title_model: String,
}

/// `[code_execution]`: limits of `execute_code`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeExecutionConfig {
    /// Seconds before the script is stopped.
    pub timeout: u64,
    /// Tool calls a script may make; later calls get an error.
    pub max_tool_calls: u32,
    /// Confine the script with Landlock on Linux (writes limited to the
    /// working directory and temp).
    pub landlock: bool,
    /// The interpreter to run; empty = `python3` from `PATH`.
    pub python: String,
}

impl Default for CodeExecutionConfig {
    fn default() -> Self {
        Self {
            timeout: 300,
            max_tool_calls: 50,
            landlock: false,
            python: String::new(),
        }
    }
}

/// `[serve]`: defaults of `herald serve` (its flags win over them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServeConfig {
    /// Address to listen on; anything but loopback needs an explicit token.
    pub host: String,
    /// Port to listen on (0: any free port).
    pub port: u16,
    /// Turns running at once across every session; more get HTTP 429.
    pub max_concurrent_turns: usize,
    /// Sessions kept open at once (least recently used idle ones close).
    pub max_open_sessions: usize,
    /// Largest request body in bytes; larger ones get HTTP 413.
    pub max_body_bytes: usize,
    /// Browser origins allowed by CORS; empty = CORS off.
    pub cors_origins: Vec<String>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_owned(),
            port: 8787,
            max_concurrent_turns: 64,
            max_open_sessions: 256,
            max_body_bytes: 4 * 1024 * 1024,
            cors_origins: Vec::new(),
        }
    }
}

/// `[permissions]`: the mode, the user's rules, what confined
/// commands may write and reach, and which variables tool processes keep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionsConfig {
    /// `read-only`, `workspace-write` or `full-access` (`--mode` wins).
    pub mode: String,
    /// Rules as `tool(argument-glob)`: deny > ask > allow > mode. An
    /// allow entry may be a table granting the network:
    /// `{ rule = "terminal(curl *)", network = true }`.
    pub allow: Vec<crate::permissions::AllowRule>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
    /// Directories confined commands may write besides the working
    /// directory and temp directories.
    pub writable_roots: Vec<String>,
    /// Whether confined commands may use the network.
    pub network: bool,
    /// Variable names tool processes keep although they look secret.
    pub env_keep: Vec<String>,
    /// Variable names tool processes never see, besides the secret-looking ones.
    pub env_exclude: Vec<String>,
    /// Tools (MCP) that only read, so they run without asking.
    pub read_only_tools: Vec<String>,
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        Self {
            mode: "workspace-write".to_owned(),
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            writable_roots: Vec::new(),
            network: false,
            env_keep: Vec::new(),
            env_exclude: Vec::new(),
            read_only_tools: Vec::new(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn partial_sections_keep_defaults_and_depth_is_clamped() {
        let d: DelegationConfig = toml::from_str("max_spawn_depth = 9").unwrap();
        assert_eq!(d.spawn_depth(), 3);
        assert_eq!(d.max_concurrent_children, 3);
        let d: DelegationConfig =
            toml::from_str("max_spawn_depth = 0\nmax_concurrent_children = 0").unwrap();
        assert_eq!((d.spawn_depth(), d.concurrent_children()), (1, 1));
        let c: CompressionConfig = toml::from_str("threshold = 0.7").unwrap();
        assert_eq!((c.threshold, c.protect_last_n), (0.7, 20));
    }
}

/// `[mcp]`: settings for all MCP servers (the servers themselves are
/// `[mcp_servers.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpConfig {
    /// Share of the context window (percent) the MCP tool schemas may take
    /// before they are no longer listed one by one but found with
    /// `mcp_search`; 0 always uses search.
    pub schema_budget_percent: u8,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            schema_budget_percent: 10,
        }
    }
}
