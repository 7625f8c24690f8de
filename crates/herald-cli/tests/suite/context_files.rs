//! Project context files at real-world shape: a nested git
//! repository whose files load root first down to the working directory,
//! CLAUDE.md files importing others with `@path` (a chain, a cycle, a file
//! from `~/.claude`, refused and bad imports), a budget too short for all of
//! them, and `herald context`, which shows the same prompt without a
//! provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::{Harness, Wire, last, parse_events, stderr};
use herald_testkit::{Reply, Script};
use serde_json::Value;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The fixture: `work/outer/` (no git; an AGENTS.md that must not load),
/// `work/outer/repo/` (a git root) with context files at the root, in
/// `pkg/` and `pkg/app/`, an import chain CLAUDE.md → docs/a.md → docs/b.md
/// → notes/c.md, a cycle back to the root, an import from `~/.claude`, one
/// outside the repository, one of a directory, a missing one and a binary
/// CLAUDE.md. Returns (repo root, working directory, fake $HOME).
fn fixture(h: &Harness) -> (PathBuf, PathBuf, PathBuf) {
    let work = h.work_path();
    let outer = work.join("outer");
    let repo = outer.join("repo");
    let app = repo.join("pkg").join("app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&app).unwrap();
    write(&outer.join("AGENTS.md"), "ABOVE-THE-REPO must not load");
    write(&work.join("secret.md"), "SECRET-OUTSIDE");
    write(&repo.join("AGENTS.md"), "ROOT-AGENTS: tabs, not spaces.");
    write(
        &repo.join("CLAUDE.md"),
        "@AGENTS.md\nStyle: see @docs/a.md.\nIn code `@docs/never.md` is no import.\n\
         ```\n@docs/never.md\n```\nPersonal: @~/.claude/personal.md",
    );
    write(&repo.join("docs/a.md"), "A-TEXT then @b.md");
    write(&repo.join("docs/b.md"), "B-TEXT then @../notes/c.md");
    write(&repo.join("notes/c.md"), "C-TEXT back to @../CLAUDE.md");
    write(&repo.join("docs/never.md"), "NEVER-IMPORTED");
    write(
        &repo.join("pkg/AGENTS.md"),
        "PKG-RULES @../../../secret.md @sub/ @missing.md",
    );
    std::fs::create_dir_all(repo.join("pkg/sub")).unwrap();
    std::fs::write(
        repo.join("pkg/CLAUDE.md"),
        b"\x89PNG\r\n\x1a\n\x00\x00binary",
    )
    .unwrap();
    write(&app.join("AGENTS.md"), "APP-RULES: run the tests.");
    let home = work.join("fakehome");
    write(
        &home.join(".claude/personal.md"),
        "PERSONAL-PREFS: answer briefly.",
    );
    (repo, app, home)
}

/// `herald SUBCOMMAND --cwd CWD` (OpenAI wire unless `bare`) with `$HOME` at
/// `home`; the subcommand's `--cwd` wins over the harness's.
fn herald(
    h: &Harness,
    subcommand: &str,
    cwd: &Path,
    home: &Path,
    bare: bool,
) -> tokio::process::Command {
    let mut cmd = if bare {
        h.bare_command()
    } else {
        h.command(Wire::OpenAi)
    };
    cmd.env("HOME", home).arg(subcommand).arg("--cwd").arg(cwd);
    cmd
}

/// `herald run --json PROMPT` in `cwd`; the events.
async fn run(h: &Harness, cwd: &Path, home: &Path, extra: &[&str], prompt: &str) -> Vec<Value> {
    let output = herald(h, "run", cwd, home, false)
        .arg("--json")
        .args(extra)
        .arg(prompt)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    parse_events(&output.stdout)
}

/// `herald context ARGS` in `cwd` with no provider settings at all.
async fn context(h: &Harness, cwd: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let output = herald(h, "context", cwd, home, true)
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

fn system_of(body: &Value) -> String {
    assert_eq!(body["messages"][0]["role"], "system");
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nested_repository_loads_root_first_with_its_import_chain() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let (repo, app, home) = fixture(&h);
    let events = run(&h, &app, &home, &[], "hello").await;
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();
    let prompt = system_of(&h.server.requests()[0].body);
    let at = |needle: &str| {
        prompt
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in the prompt:\n{prompt}"))
    };
    // Root first, each import right after its importer, then deeper dirs.
    let order = [
        "ROOT-AGENTS",
        "Style: see @docs/a.md.",
        "A-TEXT",
        "B-TEXT",
        "C-TEXT",
        "PERSONAL-PREFS",
        "PKG-RULES",
        "APP-RULES",
        "# Environment",
    ];
    for pair in order.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{pair:?} out of order");
    }
    let imported = |file: &str, by: &str| {
        format!(
            "## {} (imported by {})\n",
            repo.join(file).display(),
            repo.join(by).display()
        )
    };
    assert!(prompt.contains(&imported("docs/a.md", "CLAUDE.md")));
    assert!(prompt.contains(&imported("docs/b.md", "docs/a.md")));
    assert!(prompt.contains(&imported("notes/c.md", "docs/b.md")));
    // Loaded once: the CLAUDE.md import of AGENTS.md and the cycle back.
    assert_eq!(prompt.matches("ROOT-AGENTS").count(), 1);
    assert_eq!(prompt.matches("Style: see").count(), 1);
    // Not loaded: above the repository, code spans and blocks, outside.
    for absent in ["ABOVE-THE-REPO", "NEVER-IMPORTED", "SECRET-OUTSIDE"] {
        assert!(!prompt.contains(absent), "{absent} leaked into the prompt");
    }
    // Refused and bad imports stay as written with a note; nothing else moves.
    assert!(
        prompt.contains("PKG-RULES @../../../secret.md [import not loaded: outside the repository")
    );
    assert!(prompt.contains("@sub/ [import not loaded: it is a directory]"));
    assert!(prompt.contains("@missing.md [import not loaded: not found]"));
    assert!(prompt.contains(&format!(
        "## {}\n[not loaded: it is a binary file]",
        repo.join("pkg/CLAUDE.md").display()
    )));

    // Edits do not reach the stored session: resume replays the same bytes.
    write(&repo.join("docs/a.md"), "A-CHANGED");
    run(&h, &app, &home, &["--resume", &id], "again").await;
    assert_eq!(system_of(&h.server.requests()[1].body), prompt);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_short_budget_keeps_every_head_and_says_how_to_read_the_rest() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let repo = h.work_path().join("repo");
    let sub = repo.join("a").join("b");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let big = |tag: &str| {
        let body: String = (1..=400)
            .map(|n| format!("{tag} rule {n}: keep it short.\n"))
            .collect();
        format!("{tag}-HEAD\n{body}{tag}-TAIL")
    };
    write(&repo.join("AGENTS.md"), &big("ROOT"));
    write(&repo.join("CLAUDE.md"), "@guide.md");
    write(&repo.join("guide.md"), &big("GUIDE"));
    write(&repo.join("a/AGENTS.md"), &big("MID"));
    write(&sub.join("AGENTS.md"), &big("LEAF"));
    let home = h.work_path().join("nohome");
    run(&h, &sub, &home, &[], "hello").await;
    let prompt = system_of(&h.server.requests()[0].body);
    for tag in ["ROOT", "GUIDE", "MID", "LEAF"] {
        assert!(
            prompt.contains(&format!("{tag}-HEAD")),
            "{tag} lost its head"
        );
        assert!(
            !prompt.contains(&format!("{tag}-TAIL")),
            "{tag} was not cut"
        );
    }
    for file in ["AGENTS.md", "guide.md", "a/AGENTS.md", "a/b/AGENTS.md"] {
        let path = repo.join(file).display().to_string();
        let marker = format!(" more chars: read_file {path} from line ");
        assert!(prompt.contains(&marker), "no read-on marker for {file}");
    }
    // The files share the 16,000-char budget fairly: the root keeps as much
    // as the innermost file.
    let kept = |tag: &str| prompt.matches(&format!("{tag} rule")).count();
    assert!(
        kept("ROOT") >= kept("LEAF"),
        "{} < {}",
        kept("ROOT"),
        kept("LEAF")
    );
    assert!(kept("LEAF") >= 100, "{}", kept("LEAF"));
    let start = prompt.find("# Project context").unwrap();
    let end = prompt.find("# Environment").unwrap();
    assert!(end - start < 16_000 + 1_500, "{}", end - start);
}

#[tokio::test(flavor = "multi_thread")]
async fn herald_context_json_shows_the_layers_without_a_provider() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let (repo, app, home) = fixture(&h);
    let output = context(
        &h,
        &app,
        &home,
        &["--json", "--full", "--model", "gpt-4.1-mini"],
    )
    .await;
    assert!(
        h.server.requests().is_empty(),
        "herald context contacted the provider"
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = report["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "identity",
            "working rules",
            "project context",
            "memory",
            "skills index",
            "environment"
        ]
    );
    let ctx = &report["context"];
    assert_eq!(ctx["repo_root"], repo.display().to_string());
    assert_eq!(ctx["per_file_chars"], 8_000);
    assert_eq!(ctx["total_chars"], 16_000);
    let files: Vec<String> = ctx["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    let expect: Vec<String> = [
        repo.join("AGENTS.md"),
        repo.join("CLAUDE.md"),
        repo.join("docs/a.md"),
        repo.join("docs/b.md"),
        repo.join("notes/c.md"),
        home.join(".claude/personal.md"),
        repo.join("pkg/AGENTS.md"),
        repo.join("pkg/CLAUDE.md"),
        app.join("AGENTS.md"),
    ]
    .iter()
    .map(|p| p.display().to_string())
    .collect();
    assert_eq!(files, expect);
    assert_eq!(ctx["files"][7]["problem"], "it is a binary file");
    assert_eq!(
        ctx["files"][2]["imported_by"],
        repo.join("CLAUDE.md").display().to_string()
    );
    let imports: Vec<(String, String)> = ctx["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["written"].as_str().unwrap().to_owned(),
                i["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("@AGENTS.md", "already_included"),
        ("@docs/a.md", "loaded"),
        ("@b.md", "loaded"),
        ("@../notes/c.md", "loaded"),
        ("@../CLAUDE.md", "cycle"),
        ("@~/.claude/personal.md", "loaded"),
        ("@../../../secret.md", "not_loaded"),
        ("@sub/", "not_loaded"),
        ("@missing.md", "not_loaded"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    assert_eq!(imports, expected);
    assert_eq!(ctx["imports"][6]["line"], 1);
    assert!(
        ctx["imports"][6]["reason"]
            .as_str()
            .unwrap()
            .starts_with("outside the repository")
    );
    let text = report["text"].as_str().unwrap();
    assert_eq!(report["chars"], text.chars().count());
    let layer_chars: u64 = report["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["chars"].as_u64().unwrap())
        .sum();
    assert!(layer_chars < text.chars().count() as u64);

    // The same prompt a session here sends.
    run(&h, &app, &home, &[], "hello").await;
    assert_eq!(system_of(&h.server.requests()[0].body), text);

    // Without --full, no text; the human view names files and imports.
    let output = context(&h, &app, &home, &["--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report.get("text").is_none());
    let output = context(&h, &app, &home, &[]).await;
    let view = String::from_utf8(output.stdout).unwrap();
    assert!(
        view.contains(&format!("repository {}", repo.display())),
        "{view}"
    );
    assert!(
        view.contains("@../../../secret.md  NOT LOADED: outside the repository"),
        "{view}"
    );
    assert!(view.contains("not loaded: it is a binary file"), "{view}");
    let output = context(&h, &app, &home, &["--full", "--model", "gpt-4.1-mini"]).await;
    assert_eq!(String::from_utf8(output.stdout).unwrap(), text);
    assert_eq!(
        h.server.requests().len(),
        1,
        "only the run asked the provider"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn herald_context_outside_a_repository_reads_every_parent() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let top = h.work_path();
    let dir = top.join("plain").join("dir");
    write(&top.join("AGENTS.md"), "TOP-LEVEL");
    write(&dir.join("CLAUDE.md"), "INNER @../notes.md");
    write(&top.join("plain/notes.md"), "NOTES");
    let output = context(&h, &dir, &top, &["--json", "--full"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["context"]["repo_root"], Value::Null);
    let text = report["text"].as_str().unwrap();
    assert!(text.find("TOP-LEVEL").unwrap() < text.find("INNER").unwrap());
    // Without a repository an import stays inside the importing file's tree.
    assert!(text.contains("@../notes.md [import not loaded: outside the repository"));
    assert!(!text.contains("NOTES"));
    assert!(h.server.requests().is_empty());
}
