//! Builds a session's permission policy from `[permissions]`, the project's
//! `.herald/permissions.toml` (which may only tighten), and the rules the
//! user approved "always" (`$HERALD_HOME/permissions.toml`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use herald_permissions::{Mode, PolicyConfig};
use herald_sandbox::{EnvFilter, Redactor, SandboxPolicy};
use serde::Deserialize;

use super::AllowRule;
use crate::Settings;

/// The project file holding a repository's own rules.
pub const PROJECT_RULES_FILE: &str = ".herald/permissions.toml";
/// The file under `$HERALD_HOME` holding rules approved "always".
pub const APPROVED_RULES_FILE: &str = "permissions.toml";

/// Everything the permission layer of a session is built from.
#[derive(Debug, Clone)]
pub struct PermissionSetup {
    /// The policy's input (mode, rules, writable roots, machine facts).
    pub policy: PolicyConfig,
    /// Rules the user approved "always" in earlier sessions.
    pub approved: Vec<String>,
    /// Where "always" answers are saved.
    pub approved_file: PathBuf,
    /// What a confined call may write and reach (the working directory is
    /// added per call).
    pub sandbox: SandboxPolicy,
    /// The environment tool processes get.
    pub env: Arc<EnvFilter>,
    /// Secret values removed from tool output.
    pub redactor: Arc<Redactor>,
    /// Problems that do not stop the session (a project file granting
    /// itself permissions), for the user to read.
    pub warnings: Vec<String>,
}

/// Reads the permission configuration of `settings` (with its mode already
/// resolved from `--mode`). Fails on an unknown mode, an unreadable or
/// malformed rules file, naming the file and what to fix.
pub fn load_permission_setup(settings: &Settings) -> Result<PermissionSetup, String> {
    let section = &settings.permissions;
    let mode: Mode = section.mode.parse().map_err(|e| {
        format!(
            "[permissions] mode in {}: {e}",
            settings.config_path.display()
        )
    })?;
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let mut warnings = Vec::new();
    let project_path = settings.cwd.join(PROJECT_RULES_FILE);
    let project = read_rules_file(&project_path)?;
    if !project.allow.is_empty() {
        let listed: Vec<String> = project.allow.iter().map(|r| r.rule.clone()).collect();
        warnings.push(format!(
            "{} lists allow rules ({}); they are ignored: a project may only add ask and deny \
             rules. Put allow rules in {} if you trust them",
            project_path.display(),
            listed.join(", "),
            settings.config_path.display()
        ));
    }
    let approved_file = settings.home.join(APPROVED_RULES_FILE);
    let approved = read_rules_file(&approved_file)?;
    let writable_roots: Vec<PathBuf> = section
        .writable_roots
        .iter()
        .map(|root| expand(root, home.as_deref(), &settings.cwd))
        .collect();
    let env = Arc::new(EnvFilter {
        keep: section.env_keep.clone(),
        exclude: section.env_exclude.clone(),
    });
    let redactor = Arc::new(Redactor::from_env(configured_keys(settings)));
    let sandbox_available = herald_sandbox::sandbox_support().can_confine(section.network);
    let mut roots = vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")];
    if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        roots.push(PathBuf::from(tmp));
    }
    roots.extend(writable_roots.iter().cloned());
    Ok(PermissionSetup {
        policy: PolicyConfig {
            mode,
            allow: rules_of(&section.allow, false),
            allow_network: rules_of(&section.allow, true),
            ask: section.ask.clone(),
            deny: section.deny.clone(),
            project_ask: project.ask,
            project_deny: project.deny,
            writable_roots,
            home,
            sandbox_available,
            read_only_tools: section.read_only_tools.clone(),
        },
        approved: approved.allow.into_iter().map(|r| r.rule).collect(),
        approved_file,
        sandbox: SandboxPolicy {
            writable_roots: roots,
            network: section.network,
        },
        env,
        redactor,
        warnings,
    })
}

/// The sandbox of a confined call made in workspace `cwd`.
pub fn tool_sandbox(base: &SandboxPolicy, cwd: &Path) -> SandboxPolicy {
    let mut policy = base.clone();
    policy.writable_roots.insert(0, cwd.to_path_buf());
    policy
}

/// The rules of `entries` that grant the network (`network`) or not.
fn rules_of(entries: &[AllowRule], network: bool) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e.network == network)
        .map(|e| e.rule.clone())
        .collect()
}

/// The rule lists of a rules file; a missing file has none.
#[derive(Debug, Default)]
struct RulesFile {
    allow: Vec<AllowRule>,
    ask: Vec<String>,
    deny: Vec<String>,
}

fn read_rules_file(path: &Path) -> Result<RulesFile, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RulesFile::default());
        }
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| format!("invalid permission rules file {}: {e}", path.display()))?;
    let mut rules = RulesFile::default();
    for (key, value) in table {
        if !matches!(key.as_str(), "allow" | "ask" | "deny") {
            return Err(format!(
                "{}: unknown key `{key}`; a rules file holds only allow, ask and deny lists",
                path.display()
            ));
        }
        let Some(items) = value.as_array() else {
            return Err(format!(
                "{}: `{key}` must be a list of rules such as [\"terminal(git push*)\"]",
                path.display()
            ));
        };
        for item in items {
            if key == "allow" {
                let entry = AllowRule::deserialize(item.clone())
                    .map_err(|e| format!("{}: `allow` holds {item}: {e}", path.display()))?;
                rules.allow.push(entry);
                continue;
            }
            let Some(rule) = item.as_str() else {
                return Err(format!(
                    "{}: `{key}` holds {item}, not a rule string",
                    path.display()
                ));
            };
            let list = if key == "ask" {
                &mut rules.ask
            } else {
                &mut rules.deny
            };
            list.push(rule.to_owned());
        }
    }
    Ok(rules)
}

/// Adds `rule` to the "always" file (once), keeping the file's other rules.
pub(crate) fn save_approved_rule(path: &Path, rule: &str) -> Result<(), String> {
    let mut current = read_rules_file(path)?;
    if current.allow.iter().any(|r| r.rule == rule) {
        return Ok(());
    }
    current.allow.push(AllowRule::new(rule));
    let mut table = toml::Table::new();
    if !current.allow.is_empty() {
        let entries: Result<Vec<toml::Value>, String> = current
            .allow
            .iter()
            .map(|r| toml::Value::try_from(r).map_err(|e| e.to_string()))
            .collect();
        table.insert("allow".to_owned(), toml::Value::Array(entries?));
    }
    for (key, list) in [("ask", &current.ask), ("deny", &current.deny)] {
        if !list.is_empty() {
            table.insert(
                key.to_owned(),
                toml::Value::Array(list.iter().cloned().map(toml::Value::String).collect()),
            );
        }
    }
    let body = toml::to_string(&table).map_err(|e| e.to_string())?;
    let text =
        format!("# Rules approved \"always\" in herald sessions. Edit or delete freely.\n{body}");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `~/x` and relative paths of the config made absolute.
fn expand(path: &str, home: Option<&Path>, cwd: &Path) -> PathBuf {
    if let (Some(rest), Some(home)) = (path.strip_prefix("~/"), home) {
        return home.join(rest);
    }
    if path == "~"
        && let Some(home) = home
    {
        return home.to_path_buf();
    }
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// The provider keys of the configuration (the environment's secret
/// values are added by [`Redactor::from_env`]).
fn configured_keys(settings: &Settings) -> Vec<String> {
    let mut values: Vec<String> = Vec::new();
    values.extend(settings.api_key.clone());
    if let Some(child) = &settings.child {
        values.extend(child.api_key.clone());
    }
    values
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rules_files_are_read_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        assert!(read_rules_file(&path).unwrap().allow.is_empty());
        std::fs::write(&path, "ask = [\"terminal(git *)\"]\ndeny = []\n").unwrap();
        assert_eq!(read_rules_file(&path).unwrap().ask, ["terminal(git *)"]);
        std::fs::write(&path, "grant = [\"x\"]\n").unwrap();
        let err = read_rules_file(&path).unwrap_err();
        assert!(err.contains("unknown key `grant`"), "{err}");
        std::fs::write(&path, "allow = \"x\"\n").unwrap();
        assert!(
            read_rules_file(&path)
                .unwrap_err()
                .contains("must be a list")
        );
    }

    #[test]
    fn an_always_rule_is_saved_once_and_other_rules_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home").join("permissions.toml");
        save_approved_rule(&path, "terminal(curl *)").unwrap();
        save_approved_rule(&path, "terminal(curl *)").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}deny = [\"terminal(rm *)\"]\n")).unwrap();
        save_approved_rule(&path, "write_file(/srv/**)").unwrap();
        let rules = read_rules_file(&path).unwrap();
        assert_eq!(
            rules.allow,
            [
                AllowRule::new("terminal(curl *)"),
                AllowRule::new("write_file(/srv/**)")
            ]
        );
        assert_eq!(rules.deny, ["terminal(rm *)"]);
    }

    #[test]
    fn allow_tables_grant_the_network_and_survive_a_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("permissions.toml");
        std::fs::write(
            &path,
            "allow = [{ rule = \"terminal(curl *)\", network = true }, \"terminal(make *)\"]\n",
        )
        .unwrap();
        save_approved_rule(&path, "terminal(rm -rf build/)").unwrap();
        let rules = read_rules_file(&path).unwrap();
        assert_eq!(
            rules.allow,
            [
                AllowRule {
                    rule: "terminal(curl *)".into(),
                    network: true
                },
                AllowRule::new("terminal(make *)"),
                AllowRule::new("terminal(rm -rf build/)"),
            ]
        );
        // A bad table names the file and what an entry is; nothing is
        // written.
        std::fs::write(&path, "allow = [{ rule = \"x\", net = true }]\n").unwrap();
        let err = read_rules_file(&path).unwrap_err();
        assert!(
            err.contains("permissions.toml") && err.contains("unknown key `net`"),
            "{err}"
        );
        assert!(save_approved_rule(&path, "terminal(ls)").is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "allow = [{ rule = \"x\", net = true }]\n"
        );
    }

    #[test]
    fn config_allow_entries_split_into_plain_and_network_rules() {
        let entries = [
            AllowRule::new("terminal(cargo *)"),
            AllowRule {
                rule: "terminal(curl *)".into(),
                network: true,
            },
        ];
        assert_eq!(rules_of(&entries, false), ["terminal(cargo *)"]);
        assert_eq!(rules_of(&entries, true), ["terminal(curl *)"]);
    }

    #[test]
    fn an_always_rule_that_cannot_be_saved_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("home");
        std::fs::write(&blocker, "a file where the directory should be").unwrap();
        let err =
            save_approved_rule(&blocker.join("permissions.toml"), "terminal(x *)").unwrap_err();
        assert!(err.contains("home"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&blocker).unwrap(),
            "a file where the directory should be"
        );
    }

    #[test]
    fn paths_expand_home_and_cwd() {
        let home = Path::new("/home/u");
        let cwd = Path::new("/w");
        assert_eq!(expand("~/x", Some(home), cwd), Path::new("/home/u/x"));
        assert_eq!(expand("out", Some(home), cwd), Path::new("/w/out"));
        assert_eq!(expand("/abs", None, cwd), Path::new("/abs"));
    }
}
