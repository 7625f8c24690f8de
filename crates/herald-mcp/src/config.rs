//! `[mcp_servers.NAME]` tables of `config.toml`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// One configured MCP server: either a program started over stdio
/// (`command`, `args`, `env`, `cwd`) or a streamable HTTP endpoint (`url`,
/// `headers`, `bearer_token_env_var`). Exactly one of `command` and `url`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Program to start (stdio transport).
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the program, on top of herald's filtered environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory of the program (default: herald's).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    #[serde(default)]
    pub url: Option<String>,
    /// Extra HTTP headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Name of the environment variable holding a bearer token (sent as
    /// `Authorization: Bearer ...`).
    #[serde(default)]
    pub bearer_token_env_var: Option<String>,
    /// False keeps the server configured but never started.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Glob patterns of tool names (the server's own names) to expose; empty
    /// exposes all.
    #[serde(default)]
    pub include_tools: Vec<String>,
    /// Glob patterns of tool names never exposed (applied after `include_tools`).
    #[serde(default)]
    pub exclude_tools: Vec<String>,
    /// Seconds the server has to start, answer `initialize` and list its tools.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_sec: u64,
    /// Seconds one tool call may take before it is cancelled.
    #[serde(default = "default_tool_timeout")]
    pub tool_timeout_sec: u64,
}

fn default_true() -> bool {
    true
}

/// Default of `startup_timeout_sec`.
pub const DEFAULT_STARTUP_TIMEOUT_SEC: u64 = 10;
/// Default of `tool_timeout_sec`.
pub const DEFAULT_TOOL_TIMEOUT_SEC: u64 = 60;

fn default_startup_timeout() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_SEC
}

fn default_tool_timeout() -> u64 {
    DEFAULT_TOOL_TIMEOUT_SEC
}

impl McpServerConfig {
    /// A stdio server running `command` with `args`, other settings default.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::empty()
        }
    }

    /// A streamable HTTP server at `url`, other settings default.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::empty()
        }
    }

    fn empty() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            bearer_token_env_var: None,
            enabled: true,
            include_tools: Vec::new(),
            exclude_tools: Vec::new(),
            startup_timeout_sec: DEFAULT_STARTUP_TIMEOUT_SEC,
            tool_timeout_sec: DEFAULT_TOOL_TIMEOUT_SEC,
        }
    }

    /// Checks what serde cannot: exactly one transport, settings that belong
    /// to the chosen transport, usable globs and timeouts. `name` is only used
    /// in messages.
    pub fn validate(&self, name: &str) -> Result<(), McpConfigError> {
        let err = |key: &str, message: String| McpConfigError::Invalid {
            server: name.to_owned(),
            key: key.to_owned(),
            message,
        };
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "command",
                    "set either `command` (stdio) or `url` (streamable HTTP), not both".into(),
                ));
            }
            (None, None) => {
                return Err(err(
                    "command",
                    "set `command` (a program started over stdio) or `url` (a streamable HTTP endpoint)"
                        .into(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(err("command", "is empty".into()));
                }
                for key in ["headers", "bearer_token_env_var"] {
                    let set = match key {
                        "headers" => !self.headers.is_empty(),
                        _ => self.bearer_token_env_var.is_some(),
                    };
                    if set {
                        return Err(err(key, "only applies to `url` servers".into()));
                    }
                }
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(err(
                        "url",
                        format!("`{url}` must start with http:// or https://"),
                    ));
                }
                for (key, set) in [
                    ("args", !self.args.is_empty()),
                    ("env", !self.env.is_empty()),
                    ("cwd", self.cwd.is_some()),
                ] {
                    if set {
                        return Err(err(key, "only applies to `command` servers".into()));
                    }
                }
                for header in self.headers.keys() {
                    if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                        return Err(err(
                            "headers",
                            format!("`{header}` is not a valid header name"),
                        ));
                    }
                }
                for (header, value) in &self.headers {
                    if reqwest::header::HeaderValue::from_str(value).is_err() {
                        return Err(err(
                            "headers",
                            format!("the value of `{header}` is not a valid header value"),
                        ));
                    }
                }
            }
        }
        for (key, patterns) in [
            ("include_tools", &self.include_tools),
            ("exclude_tools", &self.exclude_tools),
        ] {
            for pattern in patterns {
                if let Err(e) = globset::Glob::new(pattern) {
                    return Err(err(key, format!("`{pattern}` is not a valid glob: {e}")));
                }
            }
        }
        if self.startup_timeout_sec == 0 {
            return Err(err("startup_timeout_sec", "must be at least 1".into()));
        }
        if self.tool_timeout_sec == 0 {
            return Err(err("tool_timeout_sec", "must be at least 1".into()));
        }
        Ok(())
    }
}

/// A bad `[mcp_servers]` table. The message names the server and the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    /// The server name is not `[A-Za-z0-9_-]+`.
    #[error("[mcp_servers.{server}]: invalid server name: use only letters, digits, `_` and `-`")]
    BadName { server: String },
    /// `[mcp_servers.NAME]` is not a table.
    #[error("[mcp_servers.{server}] must be a table")]
    NotATable { server: String },
    /// A key has the wrong type or is unknown.
    #[error("[mcp_servers.{server}]: {message}")]
    Parse { server: String, message: String },
    /// A key has a value that cannot work.
    #[error("[mcp_servers.{server}] {key}: {message}")]
    Invalid {
        server: String,
        key: String,
        message: String,
    },
}

/// Whether `name` is a usable server name (`[A-Za-z0-9_-]+`).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Parses the `[mcp_servers]` table (its entries are `NAME = { ... }`
/// tables) and validates every server. Disabled servers are returned too
/// (with `enabled = false`), so `herald mcp list` can show them.
pub fn parse_servers(
    table: &toml::Table,
) -> Result<BTreeMap<String, McpServerConfig>, McpConfigError> {
    let mut servers = BTreeMap::new();
    for (name, value) in table {
        if !valid_server_name(name) {
            return Err(McpConfigError::BadName {
                server: name.clone(),
            });
        }
        if !value.is_table() {
            return Err(McpConfigError::NotATable {
                server: name.clone(),
            });
        }
        let config: McpServerConfig =
            value
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| McpConfigError::Parse {
                    server: name.clone(),
                    message: e.message().trim().to_owned(),
                })?;
        config.validate(name)?;
        servers.insert(name.clone(), config);
    }
    Ok(servers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<String, McpServerConfig>, McpConfigError> {
        let table: toml::Table = toml::from_str(text).unwrap();
        parse_servers(table["mcp_servers"].as_table().unwrap())
    }

    #[test]
    fn parses_stdio_and_http_servers_with_defaults() {
        let servers = parse(
            r#"
            [mcp_servers.fs]
            command = "npx"
            args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
            env = { DEBUG = "1" }

            [mcp_servers.web]
            url = "http://127.0.0.1:3001/mcp"
            bearer_token_env_var = "WEB_MCP_TOKEN"
            include_tools = ["search"]
            tool_timeout_sec = 5
            enabled = false
            "#,
        )
        .unwrap();
        let fs = &servers["fs"];
        assert_eq!(fs.command.as_deref(), Some("npx"));
        assert_eq!(fs.args.len(), 3);
        assert_eq!(fs.env["DEBUG"], "1");
        assert!(fs.enabled);
        assert_eq!(fs.startup_timeout_sec, 10);
        assert_eq!(fs.tool_timeout_sec, 60);
        let web = &servers["web"];
        assert_eq!(web.url.as_deref(), Some("http://127.0.0.1:3001/mcp"));
        assert_eq!(web.include_tools, vec!["search"]);
        assert_eq!(web.tool_timeout_sec, 5);
        assert!(!web.enabled);
    }

    #[test]
    fn errors_name_the_server_and_the_key() {
        let both = parse("[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h\"\n").unwrap_err();
        assert!(both.to_string().contains("[mcp_servers.x]"), "{both}");
        assert!(both.to_string().contains("not both"), "{both}");

        let neither = parse("[mcp_servers.x]\nargs = [\"a\"]\n").unwrap_err();
        assert!(neither.to_string().contains("set `command`"), "{neither}");

        let unknown = parse("[mcp_servers.x]\ncommand = \"a\"\ncomand = \"b\"\n").unwrap_err();
        assert!(unknown.to_string().contains("[mcp_servers.x]"), "{unknown}");
        assert!(unknown.to_string().contains("comand"), "{unknown}");

        let wrong_type = parse("[mcp_servers.x]\ncommand = \"a\"\nargs = \"b\"\n").unwrap_err();
        assert!(
            wrong_type.to_string().contains("[mcp_servers.x]"),
            "{wrong_type}"
        );

        let bad_name = parse("[mcp_servers.\"a.b\"]\ncommand = \"a\"\n").unwrap_err();
        assert!(
            matches!(bad_name, McpConfigError::BadName { .. }),
            "{bad_name}"
        );
        assert!(bad_name.to_string().contains("a.b"), "{bad_name}");

        let headers_on_stdio =
            parse("[mcp_servers.x]\ncommand = \"a\"\nheaders = { A = \"b\" }\n").unwrap_err();
        assert!(
            headers_on_stdio.to_string().contains("headers"),
            "{headers_on_stdio}"
        );

        let args_on_url =
            parse("[mcp_servers.x]\nurl = \"http://h\"\nargs = [\"a\"]\n").unwrap_err();
        assert!(args_on_url.to_string().contains("] args:"), "{args_on_url}");

        let bad_url = parse("[mcp_servers.x]\nurl = \"ftp://h\"\n").unwrap_err();
        assert!(bad_url.to_string().contains("url"), "{bad_url}");

        let bad_glob =
            parse("[mcp_servers.x]\ncommand = \"a\"\ninclude_tools = [\"[\"]\n").unwrap_err();
        assert!(bad_glob.to_string().contains("include_tools"), "{bad_glob}");

        let zero = parse("[mcp_servers.x]\ncommand = \"a\"\ntool_timeout_sec = 0\n").unwrap_err();
        assert!(zero.to_string().contains("tool_timeout_sec"), "{zero}");

        let not_table = parse("[mcp_servers]\nx = 1\n").unwrap_err();
        assert!(
            matches!(not_table, McpConfigError::NotATable { .. }),
            "{not_table}"
        );
    }

    #[test]
    fn server_names() {
        assert!(valid_server_name("fs"));
        assert!(valid_server_name("my-server_2"));
        assert!(!valid_server_name(""));
        assert!(!valid_server_name("a b"));
        assert!(!valid_server_name("a.b"));
        assert!(!valid_server_name("ü"));
    }
}
