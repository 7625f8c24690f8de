//! A project's `.mcp.json` (the Claude Code format) and the user's
//! approval of it. A cloned repository must not start programs by itself:
//! its servers start only once the user has approved that file, and a
//! changed file needs a new approval.
//!
//! ```json
//! {"mcpServers": {
//!   "fs":  {"command": "npx", "args": ["-y", "pkg", "${HOME}/dir"], "env": {"K": "${K:-x}"}},
//!   "api": {"type": "http", "url": "https://example.com/mcp", "headers": {"X": "y"}}
//! }}
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::McpServerConfig;

/// The name of the file.
pub const PROJECT_FILE: &str = ".mcp.json";

/// The servers of one `.mcp.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectServers {
    /// The file (absolute).
    pub path: PathBuf,
    /// Digest of its bytes: an approval holds for these bytes only.
    pub digest: String,
    /// Usable servers, by name.
    pub servers: BTreeMap<String, McpServerConfig>,
    /// Servers left out, with why (bad entries, `sse`).
    pub problems: Vec<String>,
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// Why a `.mcp.json` could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid .mcp.json ({message}); expected {{\"mcpServers\": {{\"NAME\": {{\"command\": ..., \"args\": [...]}}}}}}", path.display())]
    Parse { path: PathBuf, message: String },
}

/// The `.mcp.json` that applies to `cwd`: in `cwd` or the nearest parent,
/// looking no higher than the repository root (a directory holding
/// `.git`). `None` when there is none.
pub fn find_project_file(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let candidate = dir.join(PROJECT_FILE);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Reads the `.mcp.json` at `path`; `${VAR}` and `${VAR:-default}` in
/// commands, arguments, env values, URLs and headers are expanded with
/// `lookup`.
pub fn load_project_servers(
    path: &Path,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<ProjectServers, ProjectError> {
    let bytes = std::fs::read(path).map_err(|source| ProjectError::Read {
        path: path.to_owned(),
        source,
    })?;
    let file: File = serde_json::from_slice(&bytes).map_err(|err| ProjectError::Parse {
        path: path.to_owned(),
        message: err.to_string(),
    })?;
    let expand = |text: &str| expand_vars(text, &lookup);
    let mut servers = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, entry) in file.mcp_servers {
        if !crate::config::valid_server_name(&name) {
            problems.push(format!(
                "`{name}`: invalid server name (use letters, digits, `_` and `-`)"
            ));
            continue;
        }
        let kind =
            entry
                .kind
                .as_deref()
                .unwrap_or(if entry.url.is_some() { "http" } else { "stdio" });
        let config = match kind {
            "stdio" => {
                let Some(command) = entry.command.as_deref() else {
                    problems.push(format!("`{name}`: a stdio server needs `command`"));
                    continue;
                };
                let mut config =
                    McpServerConfig::stdio(expand(command), entry.args.iter().map(|a| expand(a)));
                config.env = entry
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), expand(v)))
                    .collect();
                config
            }
            "http" | "streamable-http" | "streamableHttp" => {
                let Some(url) = entry.url.as_deref() else {
                    problems.push(format!("`{name}`: an http server needs `url`"));
                    continue;
                };
                let mut config = McpServerConfig::http(expand(url));
                config.headers = entry
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), expand(v)))
                    .collect();
                config
            }
            "sse" => {
                problems.push(format!(
                    "`{name}`: legacy SSE servers are not supported (the MCP library herald uses has no SSE client); use the server's streamable HTTP endpoint"
                ));
                continue;
            }
            other => {
                problems.push(format!(
                    "`{name}`: unknown type `{other}` (use stdio or http)"
                ));
                continue;
            }
        };
        if let Err(err) = config.validate(&name) {
            problems.push(format!("`{name}`: {err}"));
            continue;
        }
        servers.insert(name, config);
    }
    Ok(ProjectServers {
        path: path.to_owned(),
        digest: digest(&bytes),
        servers,
        problems,
    })
}

/// `${VAR}` and `${VAR:-default}` replaced; an unset variable without a
/// default becomes empty.
fn expand_vars(text: &str, lookup: &impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(value) => out.push_str(&value),
            None => out.push_str(default.unwrap_or("")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// FNV-1a of the file's bytes, as hex.
fn digest(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ApprovalsFile {
    /// Absolute `.mcp.json` path -> the digest approved.
    approved: BTreeMap<String, Approval>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Approval {
    digest: String,
    servers: Vec<String>,
}

/// The user's approvals of project files, in `$HERALD_HOME/mcp/approved.json`.
#[derive(Debug, Clone)]
pub struct ProjectApprovals {
    path: PathBuf,
}

impl ProjectApprovals {
    /// The approvals of the herald home `home`.
    pub fn in_home(home: &Path) -> Self {
        Self {
            path: home.join("mcp").join("approved.json"),
        }
    }

    fn read(&self) -> ApprovalsFile {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Whether exactly this file content was approved.
    pub fn is_approved(&self, project: &ProjectServers) -> bool {
        self.read()
            .approved
            .get(&project.path.display().to_string())
            .is_some_and(|a| a.digest == project.digest)
    }

    /// Records the approval of `project` as it is now.
    pub fn approve(&self, project: &ProjectServers) -> std::io::Result<()> {
        let mut file = self.read();
        file.approved.insert(
            project.path.display().to_string(),
            Approval {
                digest: project.digest.clone(),
                servers: project.servers.keys().cloned().collect(),
            },
        );
        self.write(&file)
    }

    /// Withdraws the approval of the file at `path`; whether there was one.
    pub fn revoke(&self, path: &Path) -> std::io::Result<bool> {
        let mut file = self.read();
        let removed = file.approved.remove(&path.display().to_string()).is_some();
        if removed {
            self.write(&file)?;
        }
        Ok(removed)
    }

    fn write(&self, file: &ApprovalsFile) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
        let tmp = dir.join(format!(".approved.json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        (name == "HOME").then(|| "/home/u".to_owned())
    }

    #[test]
    fn reads_the_claude_code_format_with_variables() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PROJECT_FILE);
        std::fs::write(
            &path,
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "pkg", "${HOME}/d"], "env": {"K": "${NOPE:-dflt}"}},
                "api": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "${NOPE}"}},
                "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                "bad name": {"command": "x"},
                "nocmd": {"args": []}
            }}"#,
        )
        .unwrap();
        let project = load_project_servers(&path, lookup).unwrap();
        let fs = &project.servers["fs"];
        assert_eq!(fs.command.as_deref(), Some("npx"));
        assert_eq!(fs.args, ["-y", "pkg", "/home/u/d"]);
        assert_eq!(fs.env["K"], "dflt");
        let api = &project.servers["api"];
        assert_eq!(api.url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        assert_eq!(api.headers["X"], "");
        assert_eq!(project.servers.len(), 2);
        assert_eq!(project.problems.len(), 3, "{:?}", project.problems);
        assert!(project.problems.iter().any(|p| p.contains("SSE")));
    }

    #[test]
    fn an_approval_holds_for_the_approved_bytes_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let path = dir.path().join(PROJECT_FILE);
        std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        let approvals = ProjectApprovals::in_home(&home);
        let project = load_project_servers(&path, lookup).unwrap();
        assert!(!approvals.is_approved(&project));
        approvals.approve(&project).unwrap();
        assert!(approvals.is_approved(&project));
        std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "y"}}}"#).unwrap();
        let changed = load_project_servers(&path, lookup).unwrap();
        assert!(!approvals.is_approved(&changed));
        assert!(approvals.revoke(&path).unwrap());
        assert!(!approvals.is_approved(&project));
    }

    #[test]
    fn the_file_is_found_up_to_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let sub = repo.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        assert_eq!(find_project_file(&sub), None);
        std::fs::write(repo.join(PROJECT_FILE), "{}").unwrap();
        assert_eq!(find_project_file(&sub), Some(repo.join(PROJECT_FILE)));
        // Above the repository root does not count.
        std::fs::remove_file(repo.join(PROJECT_FILE)).unwrap();
        std::fs::write(dir.path().join(PROJECT_FILE), "{}").unwrap();
        assert_eq!(find_project_file(&sub), None);
    }
}
