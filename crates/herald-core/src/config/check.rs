//! Checks `config.toml` before it is used: every key must be one herald
//! knows (unknown keys are warnings naming the closest valid key), every
//! number must lie in its documented range (an error), and sections herald
//! accepts but does not implement yet are warnings saying they do nothing.

use std::fmt;

use serde::Serialize;

/// What a key holds; numbers carry their allowed range.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Bool,
    Str,
    StrList,
    /// An integer in `min..=max`; `zero`, when set, also allows 0 with that meaning.
    Int {
        min: i64,
        max: i64,
        zero: Option<&'static str>,
    },
    /// A number in `min..=max`.
    Float {
        min: f64,
        max: f64,
    },
    /// A table checked against its own key list.
    Section(&'static [Key]),
    /// A value its own parser checks (`[mcp_servers]`: server names are the
    /// user's; `[[hooks]]`: `hooks::check_hooks`).
    Table,
}

/// One known key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key {
    pub name: &'static str,
    pub kind: Kind,
    /// What the value means, for error messages.
    pub meaning: &'static str,
    /// The value used when the key is absent, as written in TOML.
    pub default: &'static str,
}

const fn key(name: &'static str, kind: Kind, meaning: &'static str, default: &'static str) -> Key {
    Key {
        name,
        kind,
        meaning,
        default,
    }
}

const fn int(min: i64, max: i64) -> Kind {
    Kind::Int {
        min,
        max,
        zero: None,
    }
}

const fn int_or_zero(min: i64, max: i64, zero: &'static str) -> Kind {
    Kind::Int {
        min,
        max,
        zero: Some(zero),
    }
}

/// `[network]`.
pub(crate) const NETWORK: &[Key] = &[
    key(
        "max_retries",
        int(1, 20),
        "tries per request, the first included",
        "4",
    ),
    key(
        "retry_base_delay_ms",
        int(1, 60_000),
        "first backoff delay in milliseconds",
        "1000",
    ),
    key(
        "stream_idle_timeout",
        int(1, 3_600),
        "seconds without a byte before a stream is retried",
        "120",
    ),
    key(
        "request_timeout_seconds",
        int(1, 86_400),
        "seconds one model request may take in all before its reply is cut",
        "600",
    ),
    key(
        "connect_timeout",
        int(1, 300),
        "seconds to establish a connection",
        "30",
    ),
    key(
        "max_requests_in_flight",
        int(1, 65_536),
        "requests in flight to one provider endpoint from the whole process",
        "1024",
    ),
];

/// `[tools]`.
pub(crate) const TOOLS: &[Key] = &[key(
    "output_limit_chars",
    int(1_000, 10_000_000),
    "characters of a tool result kept before head and tail are cut",
    "50000",
)];

/// `[delegation]`.
pub(crate) const DELEGATION: &[Key] = &[
    key(
        "max_iterations",
        int(1, 10_000),
        "model requests per child turn",
        "50",
    ),
    key(
        "max_concurrent_children",
        int(1, 10_000),
        "largest delegate_task batch",
        "3",
    ),
    key(
        "max_spawn_depth",
        int(1, 3),
        "deepest delegation level; 1 = children cannot delegate",
        "1",
    ),
    key(
        "orchestrator_enabled",
        Kind::Bool,
        "whether orchestrator children may delegate",
        "true",
    ),
    key(
        "child_timeout_seconds",
        int(0, 86_400),
        "inactivity timeout per child in seconds; 0 = none",
        "600",
    ),
    key("model", Kind::Str, "child model override", "\"\""),
    key("provider", Kind::Str, "child provider override", "\"\""),
    key("base_url", Kind::Str, "child base URL override", "\"\""),
    key("api_key", Kind::Str, "child API key override", "\"\""),
    key(
        "max_background_agents",
        int(1, 10_000),
        "background agents running at once per session tree",
        "8",
    ),
    key(
        "budget_tokens",
        int(0, 1_000_000_000_000),
        "token cap per delegation tree; 0 = unlimited",
        "0",
    ),
    key(
        "prune_after_hours",
        int(1, 87_600),
        "hours after which finished agent records are pruned",
        "24",
    ),
];

/// `[memory]`.
pub(crate) const MEMORY: &[Key] = &[
    key(
        "memory_enabled",
        Kind::Bool,
        "whether MEMORY.md is used",
        "true",
    ),
    key(
        "user_profile_enabled",
        Kind::Bool,
        "whether USER.md is used",
        "true",
    ),
    key(
        "memory_char_limit",
        int(100, 100_000),
        "characters MEMORY.md may hold",
        "2200",
    ),
    key(
        "user_char_limit",
        int(100, 100_000),
        "characters USER.md may hold",
        "1375",
    ),
    key(
        "flush_before_compaction",
        Kind::Bool,
        "let the model save durable facts before a compaction summarises",
        "true",
    ),
    key(
        "flush_min_turns",
        int(0, 10_000),
        "user turns a session needs for the flush at its end; 0 = never",
        "6",
    ),
    key(
        "flush_timeout_seconds",
        int(1, 300),
        "longest the end-of-session flush may hold up leaving",
        "3",
    ),
];

/// `[checkpoints]`.
pub(crate) const CHECKPOINTS: &[Key] = &[
    key(
        "enabled",
        Kind::Bool,
        "whether turns that change files snapshot the working tree first",
        "true",
    ),
    key(
        "keep_days",
        int_or_zero(1, 36_500, "never prune by age"),
        "days a checkpoint is kept",
        "30",
    ),
    key(
        "max_size_mb",
        int_or_zero(1, 10_000_000, "no size limit"),
        "MiB all checkpoint repositories may take together",
        "2048",
    ),
];

/// `[browser]`.
pub(crate) const BROWSER: &[Key] = &[
    key(
        "enabled",
        Kind::Bool,
        "offer the browser toolset in every session",
        "false",
    ),
    key(
        "executable",
        Kind::Str,
        "the Chromium or Chrome to launch; empty = search PATH",
        "\"\"",
    ),
    key(
        "cdp_url",
        Kind::Str,
        "a running browser to attach to; empty = launch one",
        "\"\"",
    ),
    key(
        "headless",
        Kind::Bool,
        "launch the browser without a window",
        "true",
    ),
    key(
        "timeout_seconds",
        int(1, 600),
        "seconds a navigation may take",
        "30",
    ),
];

/// `[web]`.
pub(crate) const WEB: &[Key] = &[
    key(
        "search",
        Kind::Str,
        "searxng, brave, tavily or exa; empty = no web_search",
        "\"\"",
    ),
    key(
        "search_url",
        Kind::Str,
        "where searches go; SearXNG needs its instance's URL",
        "\"\"",
    ),
    key(
        "api_key_env",
        Kind::Str,
        "variable holding the search API key; empty = the backend's usual one",
        "\"\"",
    ),
    key(
        "allow_private",
        Kind::Bool,
        "whether web and browser tools may reach loopback, private and metadata addresses",
        "false",
    ),
    key(
        "allow_hosts",
        Kind::StrList,
        "hosts reachable although private",
        "[]",
    ),
    key(
        "timeout_seconds",
        int(1, 600),
        "time limit of one request",
        "30",
    ),
    key(
        "max_download_mb",
        int(1, 1024),
        "largest body one web_extract URL may download",
        "10",
    ),
];
/// `[watch]`.
pub(crate) const WATCH: &[Key] = &[key(
    "enabled",
    Kind::Bool,
    "whether the model is told when a file it read or edited changes outside the session",
    "true",
)];

/// `[sessions]`.
pub(crate) const SESSIONS: &[Key] = &[key(
    "title_model",
    Kind::Str,
    "model that names a new session after its first prompt (same endpoint); empty = the prompt's first line",
    "\"\"",
)];

/// `[compression]`.
pub(crate) const COMPRESSION: &[Key] = &[
    key(
        "enabled",
        Kind::Bool,
        "whether long conversations are compressed",
        "true",
    ),
    key(
        "threshold",
        Kind::Float {
            min: 0.05,
            max: 0.95,
        },
        "fraction of the context window that triggers compression",
        "0.5",
    ),
    key(
        "target_ratio",
        Kind::Float {
            min: 0.05,
            max: 0.9,
        },
        "share of the trigger size the kept recent messages may take",
        "0.2",
    ),
    key(
        "protect_first_n",
        int(0, 1_000),
        "first messages never summarised",
        "3",
    ),
    key(
        "protect_last_n",
        int(1, 1_000),
        "recent messages kept when compressing",
        "20",
    ),
    key(
        "context_window",
        int_or_zero(
            1_000,
            100_000_000,
            "look the model up in the built-in table",
        ),
        "context window in tokens",
        "0",
    ),
    key(
        "model",
        Kind::Str,
        "model that writes summaries; empty = the session's",
        "\"\"",
    ),
];

/// `[code_execution]`.
pub(crate) const CODE_EXECUTION: &[Key] = &[
    key(
        "timeout",
        int(1, 86_400),
        "seconds before an execute_code script is stopped",
        "300",
    ),
    key(
        "max_tool_calls",
        int(1, 10_000),
        "tool calls one script may make",
        "50",
    ),
    key(
        "landlock",
        Kind::Bool,
        "confine scripts with Landlock",
        "false",
    ),
    key(
        "python",
        Kind::Str,
        "the interpreter; empty = python3 from PATH",
        "\"\"",
    ),
];

/// `[serve]`.
pub(crate) const SERVE: &[Key] = &[
    key(
        "host",
        Kind::Str,
        "address herald serve listens on",
        "\"127.0.0.1\"",
    ),
    key("port", int(0, 65_535), "port (0: any free port)", "8787"),
    key(
        "max_concurrent_turns",
        int(1, 100_000),
        "turns running at once; more get HTTP 429",
        "64",
    ),
    key(
        "max_open_sessions",
        int(1, 100_000),
        "sessions kept open at once",
        "256",
    ),
    key(
        "max_body_bytes",
        int(1_024, 1_073_741_824),
        "largest request body; larger get HTTP 413",
        "4194304",
    ),
    key(
        "cors_origins",
        Kind::StrList,
        "browser origins allowed by CORS",
        "[]",
    ),
];

/// `[thinking]`: Anthropic extended thinking.
const THINKING: &[Key] = &[key(
    "budget_tokens",
    int(1_024, 1_000_000),
    "tokens the model may think per reply (Anthropic extended thinking)",
    "unset",
)];

/// The top level of the file.
pub(crate) const TOP: &[Key] = &[
    key("model", Kind::Str, "model name", "\"\""),
    key("provider", Kind::Str, "openai or anthropic", "\"openai\""),
    key("base_url", Kind::Str, "provider base URL", "\"\""),
    key("api_key", Kind::Str, "provider API key", "\"\""),
    key("api_key_env", Kind::Table, "", ""),
    key("fallback", Kind::Table, "", ""),
    key(
        "fallback_cooldown",
        int_or_zero(1, 86_400, "try the primary again on every request"),
        "seconds on a fallback provider before the primary is tried again",
        "300",
    ),
    key(
        "max_iterations",
        int(1, 10_000),
        "model requests per turn",
        "90",
    ),
    key(
        "max_tokens",
        int(1, 1_000_000),
        "output token cap per reply",
        "unset",
    ),
    key(
        "images",
        Kind::Bool,
        "whether the model takes images (tool results send theirs); false for text-only models",
        "true",
    ),
    key("toolsets", Kind::StrList, "toolsets to enable", "all"),
    key(
        "reasoning_effort",
        Kind::Str,
        "low, medium or high, for OpenAI-compatible reasoning models",
        "unset",
    ),
    key("thinking", Kind::Section(THINKING), "", ""),
    key("network", Kind::Section(NETWORK), "", ""),
    key("tools", Kind::Section(TOOLS), "", ""),
    key("delegation", Kind::Section(DELEGATION), "", ""),
    key("memory", Kind::Section(MEMORY), "", ""),
    key("compression", Kind::Section(COMPRESSION), "", ""),
    key("sessions", Kind::Section(SESSIONS), "", ""),
    key("checkpoints", Kind::Section(CHECKPOINTS), "", ""),
    key("watch", Kind::Section(WATCH), "", ""),
    key("code_execution", Kind::Section(CODE_EXECUTION), "", ""),
    key("web", Kind::Section(WEB), "", ""),
    key("browser", Kind::Section(BROWSER), "", ""),
    key("routing", Kind::Table, "", ""),
    key("serve", Kind::Section(SERVE), "", ""),
    key("permissions", Kind::Section(PERMISSIONS), "", ""),
    key("mcp_servers", Kind::Table, "", ""),
    key("mcp", Kind::Section(MCP), "", ""),
    key("hooks", Kind::Table, "", ""),
    key("pricing", Kind::Table, "", ""),
];

/// `[permissions]`.
/// `[mcp]`.
pub(crate) const MCP: &[Key] = &[key(
    "schema_budget_percent",
    int(0, 100),
    "share of the context window MCP tool schemas may take before mcp_search replaces them",
    "10",
)];

pub(crate) const PERMISSIONS: &[Key] = &[
    key(
        "mode",
        Kind::Str,
        "read-only, workspace-write or full-access",
        "\"workspace-write\"",
    ),
    key(
        "allow",
        Kind::StrList,
        "rules that run without asking (or { rule = \"…\", network = true })",
        "[]",
    ),
    key("ask", Kind::StrList, "rules that ask first", "[]"),
    key("deny", Kind::StrList, "rules that never run", "[]"),
    key(
        "writable_roots",
        Kind::StrList,
        "extra directories confined commands may write",
        "[]",
    ),
    key(
        "network",
        Kind::Bool,
        "confined commands may use the network",
        "false",
    ),
    key(
        "env_keep",
        Kind::StrList,
        "variables tool processes keep although named like secrets",
        "[]",
    ),
    key(
        "env_exclude",
        Kind::StrList,
        "variables tool processes never see",
        "[]",
    ),
    key(
        "read_only_tools",
        Kind::StrList,
        "MCP tools that only read",
        "[]",
    ),
];

/// Configuration sections herald accepts but does not act on yet, with what
/// that means for the user.
pub(crate) const NOT_IMPLEMENTED: &[(&str, &str)] = &[];

/// A problem with `config.toml` that does not stop herald.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConfigWarning {
    /// A key herald does not know; it is ignored.
    UnknownKey {
        /// The section (`delegation`), or `None` at the top level.
        section: Option<String>,
        key: String,
        /// The valid key of the same section closest by edit distance.
        closest: Option<String>,
        /// Whether `closest` is close enough to be a likely typo.
        likely_typo: bool,
    },
    /// A section herald accepts but does not implement yet.
    NotImplemented {
        section: String,
        /// What the user should know: what does not happen.
        effect: String,
    },
}

impl ConfigWarning {
    /// Whether this is an unknown key (which `herald doctor` fails on).
    pub fn is_unknown_key(&self) -> bool {
        matches!(self, Self::UnknownKey { .. })
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownKey {
                section,
                key,
                closest,
                likely_typo,
            } => {
                match section {
                    Some(section) => write!(f, "unknown key `{key}` in [{section}] (ignored)")?,
                    None => write!(f, "unknown top-level key `{key}` (ignored)")?,
                }
                match closest {
                    Some(closest) if *likely_typo => write!(f, "; did you mean `{closest}`?"),
                    Some(closest) => write!(
                        f,
                        "; the closest valid key is `{closest}` (`herald config path` writes a commented template listing every key)"
                    ),
                    None => Ok(()),
                }
            }
            Self::NotImplemented { section, effect } => write!(
                f,
                "[{section}] is accepted but not implemented yet, so it does nothing: {effect}"
            ),
        }
    }
}

/// A number outside its allowed range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RangeError {
    /// `[compression] threshold`, or `max_iterations` at the top level.
    pub key: String,
    /// The value as written in the file.
    pub value: String,
    /// `0.05 to 0.95`.
    pub allowed: String,
    pub meaning: &'static str,
    pub default: &'static str,
}

/// Checks `table` (the parsed file): returns the warnings, or the first
/// number out of range.
pub(crate) fn check(table: &toml::Table) -> Result<Vec<ConfigWarning>, RangeError> {
    let mut warnings = Vec::new();
    check_table(None, TOP, table, &mut warnings)?;
    Ok(warnings)
}

fn check_table(
    section: Option<&str>,
    keys: &[Key],
    table: &toml::Table,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<(), RangeError> {
    for (name, value) in table {
        if section.is_none()
            && let Some((section, effect)) = NOT_IMPLEMENTED.iter().find(|(s, _)| s == name)
        {
            warnings.push(ConfigWarning::NotImplemented {
                section: (*section).to_owned(),
                effect: (*effect).to_owned(),
            });
            continue;
        }
        let Some(known) = keys.iter().find(|k| k.name == name) else {
            let (closest, likely_typo) = closest(name, keys.iter().map(|k| k.name));
            warnings.push(ConfigWarning::UnknownKey {
                section: section.map(str::to_owned),
                key: name.clone(),
                closest: closest.map(str::to_owned),
                likely_typo,
            });
            continue;
        };
        match known.kind {
            // A wrong type is left to deserialisation, which names it.
            Kind::Section(inner) => {
                if let toml::Value::Table(inner_table) = value {
                    check_table(Some(name), inner, inner_table, warnings)?;
                }
            }
            kind => check_range(section, known, kind, value)?,
        }
    }
    Ok(())
}

fn check_range(
    section: Option<&str>,
    known: &Key,
    kind: Kind,
    value: &toml::Value,
) -> Result<(), RangeError> {
    let (ok, allowed) = match (kind, value) {
        (Kind::Int { min, max, zero }, toml::Value::Integer(v)) => (
            (min..=max).contains(v) || (zero.is_some() && *v == 0),
            match zero {
                Some(meaning) => format!("0 ({meaning}) or {min} to {max}"),
                None => format!("{min} to {max}"),
            },
        ),
        (Kind::Float { min, max }, toml::Value::Float(v)) => {
            ((min..=max).contains(v), format!("{min} to {max}"))
        }
        (Kind::Float { min, max }, toml::Value::Integer(v)) => {
            // Integers are accepted where fractions are (`threshold = 1`).
            #[allow(clippy::cast_precision_loss)]
            let v = *v as f64;
            ((min..=max).contains(&v), format!("{min} to {max}"))
        }
        _ => (true, String::new()),
    };
    if ok {
        return Ok(());
    }
    Err(RangeError {
        key: match section {
            Some(section) => format!("[{section}] {}", known.name),
            None => known.name.to_owned(),
        },
        value: value.to_string(),
        allowed,
        meaning: known.meaning,
        default: known.default,
    })
}

/// The candidate closest to `name` by edit distance (case-insensitive), and
/// whether it is close enough to be a typo of it.
fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> (Option<&'a str>, bool) {
    let lower = name.to_ascii_lowercase();
    let best = candidates
        .map(|c| (edit_distance(&lower, c), c))
        .min_by_key(|(d, _)| *d);
    match best {
        Some((distance, candidate)) => {
            let len = lower.chars().count().max(candidate.chars().count());
            (Some(candidate), distance <= (len / 3).max(2))
        }
        None => (None, false),
    }
}

/// Levenshtein distance between `a` and `b`, in characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::{
        CodeExecutionConfig, CompressionConfig, Config, DelegationConfig, MemoryConfig,
        NetworkConfig, ServeConfig, ToolsConfig,
    };

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    /// Every field of each section struct has a schema entry and vice
    /// versa, and the documented default is the struct's default.
    #[test]
    fn schema_matches_the_config_structs_and_their_defaults() {
        fn same<T: serde::Serialize>(name: &str, keys: &[Key], default: &T) {
            let serialized = toml::Table::try_from(default).unwrap();
            let mut fields: Vec<&str> = serialized.keys().map(String::as_str).collect();
            let mut schema: Vec<&str> = keys.iter().map(|k| k.name).collect();
            fields.sort_unstable();
            schema.sort_unstable();
            assert_eq!(fields, schema, "[{name}]");
            for k in keys {
                let written: toml::Table = toml::from_str(&format!("v = {}", k.default)).unwrap();
                assert_eq!(
                    written.get("v"),
                    serialized.get(k.name),
                    "[{name}] {} default",
                    k.name
                );
            }
        }
        same("network", NETWORK, &NetworkConfig::default());
        same("tools", TOOLS, &ToolsConfig::default());
        same("delegation", DELEGATION, &DelegationConfig::default());
        same("memory", MEMORY, &MemoryConfig::default());
        same("compression", COMPRESSION, &CompressionConfig::default());
        same(
            "sessions",
            SESSIONS,
            &crate::config::SessionsConfig::default(),
        );
        same(
            "checkpoints",
            CHECKPOINTS,
            &crate::config::CheckpointsConfig::default(),
        );
        same("watch", WATCH, &crate::config::WatchConfig::default());
        same(
            "code_execution",
            CODE_EXECUTION,
            &CodeExecutionConfig::default(),
        );
        same("web", WEB, &crate::config::WebConfig::default());
        same("browser", BROWSER, &crate::config::BrowserConfig::default());
        same("serve", SERVE, &ServeConfig::default());
        let full = Config {
            model: Some("m".into()),
            provider: Some("openai".into()),
            base_url: Some(String::new()),
            api_key: Some(String::new()),
            api_key_env: Some(toml::Value::String("K".into())),
            fallback_cooldown: Some(300),
            max_iterations: Some(1),
            max_tokens: Some(1),
            images: Some(true),
            toolsets: Some(Vec::new()),
            reasoning_effort: Some(String::new()),
            ..Config::default()
        };
        let serialized = toml::Table::try_from(&full).unwrap();
        let mut fields: Vec<&str> = serialized.keys().map(String::as_str).collect();
        let mut schema: Vec<&str> = TOP.iter().map(|k| k.name).collect();
        fields.sort_unstable();
        schema.sort_unstable();
        assert_eq!(fields, schema);
    }

    #[test]
    fn the_commented_template_holds_only_known_keys() {
        let uncommented: String = crate::config::DEFAULT_CONFIG
            .lines()
            .map(|l| l.strip_prefix("# ").unwrap_or(l))
            .filter(|l| (l.starts_with('[') && l.ends_with(']')) || l.contains(" = "))
            .map(|l| format!("{l}\n"))
            .collect();
        let warnings = check(&table(&uncommented)).unwrap();
        assert!(warnings.iter().all(|w| !w.is_unknown_key()), "{warnings:?}");
    }

    #[test]
    fn unknown_keys_name_their_section_and_the_closest_key() {
        let warnings = check(&table(
            "modle = \"x\"\n[delegation]\nmax_spawn_dept = 2\nzzzzzz = 1\n",
        ))
        .unwrap();
        let text: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 3, "{text:?}");
        let find = |needle: &str| {
            text.iter()
                .find(|t| t.contains(needle))
                .unwrap_or_else(|| panic!("no warning about {needle}: {text:?}"))
        };
        assert!(find("`modle`").contains("unknown top-level key `modle`"));
        assert!(find("`modle`").contains("did you mean `model`?"));
        assert!(
            find("`max_spawn_dept`").contains("`max_spawn_dept` in [delegation]")
                && find("`max_spawn_dept`").contains("did you mean `max_spawn_depth`?")
        );
        assert!(find("`zzzzzz`").contains("closest valid key is"));
        let w = check(&table("[compresion]\nthreshold = 0.5\n")).unwrap();
        assert!(w[0].to_string().contains("did you mean `compression`?"));
    }

    #[test]
    fn numbers_out_of_range_name_key_value_and_range() {
        for (text, key, value, allowed) in [
            (
                "[compression]\nthreshold = 5.0",
                "[compression] threshold",
                "5.0",
                "0.05 to 0.95",
            ),
            (
                "[delegation]\nmax_spawn_depth = 9",
                "[delegation] max_spawn_depth",
                "9",
                "1 to 3",
            ),
            (
                "[network]\nstream_idle_timeout = 0",
                "[network] stream_idle_timeout",
                "0",
                "1 to 3600",
            ),
            (
                "[memory]\nmemory_char_limit = -5",
                "[memory] memory_char_limit",
                "-5",
                "100 to 100000",
            ),
            ("max_iterations = 0", "max_iterations", "0", "1 to 10000"),
            (
                "[compression]\ncontext_window = 10",
                "[compression] context_window",
                "10",
                "or 1000 to 100000000",
            ),
        ] {
            let err = check(&table(text)).unwrap_err();
            assert_eq!(err.key, key, "{text}");
            assert_eq!(err.value, value, "{text}");
            assert!(err.allowed.contains(allowed), "{text}: {}", err.allowed);
        }
        for ok in [
            "[compression]\ncontext_window = 0\nthreshold = 0.95",
            "[delegation]\nchild_timeout_seconds = 0\nmax_spawn_depth = 3",
        ] {
            assert!(check(&table(ok)).unwrap().is_empty(), "{ok}");
        }
    }

    #[test]
    fn tables_their_own_parsers_check_are_accepted_without_warnings() {
        let warnings = check(&table(
            "[permissions]\nmode = \"read-only\"\n[mcp_servers.fs]\ncommand = \"npx\"\n[[hooks]]\nevent = \"x\"\n[[fallback]]\nprovider = \"x\"\n[pricing.m]\ninput = 1.0\n",
        ))
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
