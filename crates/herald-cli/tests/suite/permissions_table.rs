//! The decision table of `herald-permissions` (`tests/cases.json`, 1000+
//! benign, risky, floor and floor-bypass cases) run through the real
//! binary: `herald permissions check --mode M TOOL 'ARGS' --json`, with the
//! case's rules written to `config.toml`, in a real project directory and
//! home. Cases that need what the command line cannot set (project rules,
//! a kernel without a sandbox, a tool's own read-only flag) are left to the
//! library's table test; at least 600 must run here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Semaphore;

/// Where the cases place the project and the home directory.
const CASE_PROJECT: &str = "/work/project";
const CASE_HOME: &str = "/home/user";

/// Real directories standing in for them: outside every temp directory,
/// so "outside the workspace" stays outside (temp dirs are writable).
struct Dirs {
    project: PathBuf,
    home: PathBuf,
    root: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let root = herald_testkit::dir_outside_temp(Path::new(env!("CARGO_TARGET_TMPDIR")))
            .join(format!("permissions-table-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let project = root.join("work/project");
        let home = root.join("home/user");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Self {
            project: project.canonicalize().unwrap(),
            home: home.canonicalize().unwrap(),
            root,
        }
    }

    /// The case's text with its fake directories replaced by the real ones,
    /// in one pass (a real path may itself contain `/work`): the project,
    /// the home, and the project's parent `/work` where a case names it.
    fn place(&self, text: &str) -> String {
        let parent = self.project.parent().unwrap_or(&self.project);
        let swaps = [
            (CASE_PROJECT, self.project.display().to_string()),
            (CASE_HOME, self.home.display().to_string()),
            ("/work", parent.display().to_string()),
        ];
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        'scan: while !rest.is_empty() {
            let at_word_start = !out
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
            for (fake, real) in &swaps {
                if at_word_start
                    && let Some(after) = rest.strip_prefix(fake)
                    && !after
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
                {
                    out.push_str(real);
                    rest = after;
                    continue 'scan;
                }
            }
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
        out
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn strings(case: &Value, key: &str, dirs: &Dirs) -> Vec<String> {
    case[key]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|v| dirs.place(v.as_str().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| toml::Value::String(s.clone()).to_string())
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// Runs one case; `Err` describes a mismatch.
async fn run_case(index: usize, case: Value, dirs: Arc<Dirs>) -> Result<(), String> {
    let note = case["note"].as_str().unwrap_or("").to_owned();
    let herald_home = dirs.root.join(format!("herald-home-{index}"));
    std::fs::create_dir_all(&herald_home).unwrap();
    // Rules granting the network are allow tables.
    let mut allow = toml_list(&strings(&case, "allow", &dirs));
    for rule in strings(&case, "allow_network", &dirs) {
        allow.pop();
        if allow.len() > 1 {
            allow.push_str(", ");
        }
        allow.push_str(&format!(
            "{{ rule = {}, network = true }}]",
            toml::Value::String(rule)
        ));
    }
    let config = format!(
        "[permissions]\nallow = {}\nask = {}\ndeny = {}\nwritable_roots = {}\nread_only_tools = {}\n",
        allow,
        toml_list(&strings(&case, "ask", &dirs)),
        toml_list(&strings(&case, "deny", &dirs)),
        toml_list(&strings(&case, "writable_roots", &dirs)),
        toml_list(&strings(&case, "read_only_tools", &dirs)),
    );
    std::fs::write(herald_home.join("config.toml"), config).unwrap();
    let cwd = case["cwd"]
        .as_str()
        .map_or_else(|| dirs.project.display().to_string(), |c| dirs.place(c));
    let args = dirs.place(&case["args"].to_string());
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_herald"));
    for (key, _) in std::env::vars() {
        if key.starts_with("HERALD_") || key.starts_with("OPENAI_") || key.starts_with("ANTHROPIC_")
        {
            cmd.env_remove(key);
        }
    }
    let output = cmd
        .env("HERALD_HOME", &herald_home)
        .env("HOME", &dirs.home)
        .args(["--cwd", &cwd, "--mode", case["mode"].as_str().unwrap()])
        .args(["permissions", "check", "--json"])
        .arg(case["tool"].as_str().unwrap())
        .arg(&args)
        .output()
        .await
        .unwrap();
    if !output.status.success() {
        return Err(format!(
            "#{index} {note}: exit {:?}: {}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let got: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("#{index} {note}: not JSON ({e}): {:?}", output.stdout))?;
    let mut wrong = Vec::new();
    if got["decision"] != case["decision"] {
        wrong.push(format!(
            "decision {} (want {})",
            got["decision"], case["decision"]
        ));
    }
    if let Some(rule) = case["rule"].as_str()
        && got["rule"].as_str() != Some(dirs.place(rule).as_str())
    {
        wrong.push(format!("rule {} (want {rule})", got["rule"]));
    }
    if let Some(confine) = case["confine"].as_bool()
        && got["confine"].as_bool() != Some(confine)
    {
        wrong.push(format!("confine {} (want {confine})", got["confine"]));
    }
    if let Some(network) = case["network"].as_bool()
        && got["network"].as_bool() != Some(network)
    {
        wrong.push(format!("network {} (want {network})", got["network"]));
    }
    // The rule an approval would save: `null` for none.
    match case.get("allow_rule") {
        Some(Value::Null) if !got["allow_rule"].is_null() => {
            wrong.push(format!("allow_rule {} (want none)", got["allow_rule"]));
        }
        Some(Value::String(rule))
            if got["allow_rule"].as_str() != Some(dirs.place(rule).as_str()) =>
        {
            wrong.push(format!("allow_rule {} (want {rule})", got["allow_rule"]));
        }
        _ => {}
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "#{index} {note}: {} for {} {args} — reason: {}",
            wrong.join(", "),
            case["tool"],
            got["reason"]
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_of_the_decision_table_holds_through_permissions_check() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../herald-permissions/tests/cases.json");
    let cases: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let dirs = Arc::new(Dirs::new());
    let runnable: Vec<(usize, Value)> = cases
        .into_iter()
        .enumerate()
        .filter(|(_, c)| {
            c.get("project_ask").is_none()
                && c.get("project_deny").is_none()
                && c.get("sandbox_available").is_none()
                && c.get("read_only").is_none()
        })
        .collect();
    assert!(
        runnable.len() >= 600,
        "only {} runnable cases",
        runnable.len()
    );
    let slots = Arc::new(Semaphore::new(4));
    let mut tasks = Vec::new();
    for (index, case) in runnable {
        let dirs = Arc::clone(&dirs);
        let permit = Arc::clone(&slots).acquire_owned().await.unwrap();
        tasks.push(tokio::spawn(async move {
            let result = run_case(index, case, dirs).await;
            drop(permit);
            result
        }));
    }
    let mut failures = Vec::new();
    let total = tasks.len();
    for task in tasks {
        if let Err(message) = task.await.unwrap() {
            failures.push(message);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
