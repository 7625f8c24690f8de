//! A project's own hooks (`.herald/hooks.toml`, the same `[[hooks]]`
//! tables as `config.toml`) and the user's approval of them. A cloned
//! repository must not run commands by itself: its hooks run only once the
//! user approved the file with `herald hooks approve`, and a changed file
//! needs a new approval (the approval holds a digest of its bytes) — the
//! rule `.mcp.json` follows too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::config::{HookEntry, HookOrigin, HookSpec, check_hooks};

/// Where a project keeps its hooks, relative to its directory.
pub const PROJECT_HOOKS_FILE: &str = ".herald/hooks.toml";

/// A project's hooks file.
#[derive(Debug, Clone)]
pub struct ProjectHooks {
    /// The file (absolute).
    pub path: PathBuf,
    /// SHA-256 of its bytes: an approval holds for these bytes only.
    pub digest: String,
    /// Its hooks (none when `problem` is set).
    pub hooks: Vec<HookSpec>,
    /// Why the file cannot be used (unreadable, bad TOML, a bad entry).
    pub problem: Option<String>,
    /// Approved as it is now; until then none of its hooks runs.
    pub approved: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    hooks: Vec<HookEntry>,
}

impl ProjectHooks {
    /// The hooks file that applies to `cwd`: in `cwd` or the nearest
    /// parent, looking no higher than the repository root (a directory
    /// holding `.git`). `None` when there is none.
    pub fn find(cwd: &Path, home: &Path) -> Option<Self> {
        let path = find_file(cwd)?;
        let path = path.canonicalize().unwrap_or(path);
        Some(Self::load(path, home))
    }

    /// Reads and checks the file at `path`; approval is looked up in
    /// `home`.
    pub fn load(path: PathBuf, home: &Path) -> Self {
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) => {
                return Self {
                    problem: Some(format!("cannot read {}: {err}", path.display())),
                    path,
                    digest: String::new(),
                    hooks: Vec::new(),
                    approved: false,
                };
            }
        };
        let digest = digest(&bytes);
        let parsed = std::str::from_utf8(&bytes)
            .map_err(|err| format!("{} is not UTF-8: {err}", path.display()))
            .and_then(|text| {
                toml::from_str::<File>(text).map_err(|err| {
                    format!(
                        "{} is not a valid hooks file ({}); expected [[hooks]] tables with event, matcher, command, timeout",
                        path.display(),
                        err.message()
                    )
                })
            })
            .and_then(|file| check_hooks(&file.hooks, HookOrigin::Project, &path));
        let (hooks, problem) = match parsed {
            Ok(hooks) => (hooks, None),
            Err(problem) => (Vec::new(), Some(problem)),
        };
        let approved = problem.is_none()
            && !hooks.is_empty()
            && HookApprovals::in_home(home).is_approved(&path, &digest);
        Self {
            path,
            digest,
            hooks,
            problem,
            approved,
        }
    }

    /// The directory a person runs `herald hooks approve` in.
    pub fn project_dir(&self) -> PathBuf {
        self.path
            .parent()
            .and_then(Path::parent)
            .map_or_else(PathBuf::new, Path::to_path_buf)
    }

    /// What the user should hear at session start: hooks waiting for
    /// approval, or a file that cannot be used.
    pub fn warnings(&self) -> Vec<String> {
        let path = self.path.display();
        if let Some(problem) = &self.problem {
            return vec![format!("{problem}; none of its hooks runs")];
        }
        if !self.approved && !self.hooks.is_empty() {
            return vec![format!(
                "{path} defines {} hook(s) that did not run: a project's hooks run only after you approve them. Review the file (`herald hooks list`), then run `herald hooks approve` in {}",
                self.hooks.len(),
                self.project_dir().display()
            )];
        }
        Vec::new()
    }
}

fn find_file(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let candidate = dir.join(PROJECT_HOOKS_FILE);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ApprovalsFile {
    /// Absolute hooks file path -> the digest approved.
    approved: BTreeMap<String, String>,
}

/// The user's approvals of project hooks files, in
/// `$HERALD_HOME/hooks/approved.json`.
#[derive(Debug, Clone)]
pub struct HookApprovals {
    path: PathBuf,
}

impl HookApprovals {
    /// The approvals of the herald home `home`.
    pub fn in_home(home: &Path) -> Self {
        Self {
            path: home.join("hooks").join("approved.json"),
        }
    }

    fn read(&self) -> ApprovalsFile {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Whether the file at `path` was approved with exactly these bytes.
    pub fn is_approved(&self, path: &Path, digest: &str) -> bool {
        self.read()
            .approved
            .get(&path.display().to_string())
            .is_some_and(|approved| approved == digest)
    }

    /// Records the approval of `project` as it is now. A file that cannot
    /// be used is refused with its problem.
    pub fn approve(&self, project: &ProjectHooks) -> Result<(), String> {
        if let Some(problem) = &project.problem {
            return Err(format!("{problem}; fix it, then approve it"));
        }
        let mut file = self.read();
        file.approved
            .insert(project.path.display().to_string(), project.digest.clone());
        self.write(&file)
            .map_err(|err| format!("cannot save {}: {err}", self.path.display()))
    }

    /// Withdraws the approval of the file at `path`; whether there was one.
    pub fn revoke(&self, path: &Path) -> Result<bool, String> {
        let mut file = self.read();
        let removed = file.approved.remove(&path.display().to_string()).is_some();
        if removed {
            self.write(&file)
                .map_err(|err| format!("cannot save {}: {err}", self.path.display()))?;
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const HOOKS: &str =
        "[[hooks]]\nevent = \"pre_tool\"\nmatcher = \"terminal\"\ncommand = \"./guard.sh\"\n";

    fn project(dir: &Path, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir.join(".herald")).unwrap();
        let path = dir.join(PROJECT_HOOKS_FILE);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn an_approval_holds_for_the_approved_bytes_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        project(&repo, HOOKS);
        let found = ProjectHooks::find(&repo, &home).unwrap();
        assert!(!found.approved && found.problem.is_none());
        assert_eq!(found.hooks.len(), 1);
        assert!(found.warnings()[0].contains("herald hooks approve"));
        let approvals = HookApprovals::in_home(&home);
        approvals.approve(&found).unwrap();
        let found = ProjectHooks::find(&repo, &home).unwrap();
        assert!(found.approved && found.warnings().is_empty());
        // A changed file needs a new approval.
        project(&repo, &format!("{HOOKS}timeout = 5\n"));
        let changed = ProjectHooks::find(&repo, &home).unwrap();
        assert!(!changed.approved);
        assert!(approvals.revoke(&changed.path).unwrap());
        assert!(!approvals.revoke(&changed.path).unwrap());
    }

    #[test]
    fn a_bad_file_is_a_problem_that_cannot_be_approved() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        for (text, needle) in [
            (
                "[[hooks]]\nevent = \"nope\"\ncommand = \"x\"\n",
                "entry 1 event",
            ),
            (
                "[[hooks]]\nevnt = \"pre_tool\"\ncommand = \"x\"\n",
                "unknown field `evnt`",
            ),
            ("hooks = [", "not a valid hooks file"),
        ] {
            project(dir.path(), text);
            let found = ProjectHooks::load(dir.path().join(PROJECT_HOOKS_FILE), &home);
            let problem = found.problem.clone().unwrap();
            assert!(problem.contains(needle), "{problem}");
            assert!(found.hooks.is_empty() && !found.approved);
            assert!(HookApprovals::in_home(&home).approve(&found).is_err());
            assert!(found.warnings()[0].contains("none of its hooks runs"));
        }
    }

    #[test]
    fn the_file_is_found_up_to_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = dir.path().join("repo");
        let sub = repo.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        assert!(ProjectHooks::find(&sub, &home).is_none());
        project(&repo, HOOKS);
        assert!(ProjectHooks::find(&sub, &home).is_some());
        std::fs::remove_file(repo.join(PROJECT_HOOKS_FILE)).unwrap();
        project(dir.path(), HOOKS);
        assert!(ProjectHooks::find(&sub, &home).is_none());
    }
}
