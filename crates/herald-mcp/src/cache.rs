//! The tool lists servers had the last time they started, kept in
//! `$HERALD_HOME/mcp/tools.json`, so a session can list a server's tools
//! at once while the server is still starting (the first model request is
//! not held up by `npx` downloading a package).
//!
//! An entry is used only when its fingerprint matches the server's current
//! configuration and herald version; the live list replaces it as soon as
//! the server is up, for the next session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::config::McpServerConfig;
use crate::server::McpToolInfo;

/// Format version of the file; another version is ignored (and rewritten).
const VERSION: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    servers: BTreeMap<String, CachedServer>,
}

/// The tools one server listed, under the configuration it had then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedServer {
    /// [`fingerprint`] of the configuration the list was taken with.
    pub fingerprint: String,
    pub tools: Vec<McpToolInfo>,
}

/// A stable digest of what decides a server's tool list: its whole
/// configuration and herald's version (naming and schema rules may change
/// between versions). FNV-1a over the JSON form; it only tells entries
/// apart, it protects nothing.
pub fn fingerprint(config: &McpServerConfig) -> String {
    let json = serde_json::to_string(config).unwrap_or_default();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in json.bytes().chain(env!("CARGO_PKG_VERSION").bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The cache file of one herald home. Reads are done once, at start;
/// writes replace the file atomically.
#[derive(Debug)]
pub struct ToolCache {
    path: PathBuf,
    /// Serialises this process's read-modify-write cycles.
    lock: Mutex<()>,
}

impl ToolCache {
    /// The cache at `$HERALD_HOME/mcp/tools.json`.
    pub fn in_home(home: &Path) -> Self {
        Self::at(home.join("mcp").join("tools.json"))
    }

    /// The cache at `path`.
    pub fn at(path: PathBuf) -> Self {
        Self {
            path,
            lock: Mutex::new(()),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> CacheFile {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return CacheFile::default();
        };
        match serde_json::from_str::<CacheFile>(&text) {
            Ok(file) if file.version == VERSION => file,
            _ => CacheFile::default(),
        }
    }

    /// Every entry (an unreadable or missing file has none).
    pub fn load(&self) -> BTreeMap<String, CachedServer> {
        self.read().servers
    }

    /// Records `server`'s tools under `fingerprint`, unless that is what the
    /// file already says. Errors are logged: the cache only saves time.
    pub fn store(&self, server: &str, entry: CachedServer) {
        let _guard = self.lock.lock();
        let mut file = self.read();
        if file.servers.get(server) == Some(&entry) {
            return;
        }
        file.version = VERSION;
        file.servers.insert(server.to_owned(), entry);
        if let Err(err) = self.write(&file) {
            tracing::debug!(path = %self.path.display(), "cannot update the MCP tool cache: {err}");
        }
    }

    fn write(&self, file: &CacheFile) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_vec(file).map_err(std::io::Error::other)?;
        let tmp = dir.join(format!(".tools.json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn tool(name: &str) -> McpToolInfo {
        McpToolInfo {
            server: "s".into(),
            name: name.into(),
            exposed_name: format!("mcp__s__{name}"),
            description: "d".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {}}),
            read_only_hint: true,
        }
    }

    #[test]
    fn entries_survive_a_round_trip_and_fingerprints_follow_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_home(dir.path());
        assert!(cache.load().is_empty());
        let config = McpServerConfig::stdio("npx", ["-y", "pkg"]);
        let entry = CachedServer {
            fingerprint: fingerprint(&config),
            tools: vec![tool("a"), tool("b")],
        };
        cache.store("s", entry.clone());
        assert_eq!(ToolCache::in_home(dir.path()).load()["s"], entry);

        let mut other = config.clone();
        other.args.push("--flag".into());
        assert_ne!(fingerprint(&config), fingerprint(&other));
        assert_eq!(fingerprint(&config), fingerprint(&config.clone()));
    }

    #[test]
    fn a_damaged_file_is_an_empty_cache_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_home(dir.path());
        std::fs::create_dir_all(dir.path().join("mcp")).unwrap();
        std::fs::write(cache.path(), "{not json").unwrap();
        assert!(cache.load().is_empty());
        let entry = CachedServer {
            fingerprint: "f".into(),
            tools: vec![tool("a")],
        };
        cache.store("s", entry.clone());
        assert_eq!(cache.load()["s"], entry);
    }
}
