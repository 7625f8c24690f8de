//! The system prompt's layers as sent by the real binary: SOUL.md
//! identity, AGENTS.md/CLAUDE.md from the repository root down to the working
//! directory with size budgets, memory snapshot, skills index, environment
//! facts; stored once and replayed byte for byte on resume.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::{Harness, last, parse_events, stderr};
use herald_testkit::{Reply, Script};
use serde_json::Value;

/// `herald run --json PROMPT` (plus `extra` first) in `cwd`, OpenAI wire.
async fn run_in(h: &Harness, cwd: &Path, extra: &[&str], prompt: &str) -> Vec<Value> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_herald"));
    for (key, _) in std::env::vars() {
        if key.starts_with("OPENAI_") || key.starts_with("ANTHROPIC_") || key.starts_with("HERALD_")
        {
            cmd.env_remove(key);
        }
    }
    cmd.env("HERALD_HOME", h.home.path())
        .env("OPENAI_BASE_URL", h.server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-test-openai")
        .env("HERALD_MODEL", "gpt-4.1-mini")
        .arg("--cwd")
        .arg(cwd)
        .arg("run")
        .arg("--json")
        .args(extra)
        .arg(prompt)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    parse_events(&output.stdout)
}

/// The system prompt of a recorded OpenAI request.
fn system_of(body: &Value) -> String {
    assert_eq!(body["messages"][0]["role"], "system");
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_layers_budgets_and_byte_identical_resume() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let repo = h.work_path();
    let sub = repo.join("crates").join("app");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(repo.join("AGENTS.md"), "ROOT-RULES: indent with tabs.").unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "ROOT-CLAUDE: never push.").unwrap();
    let huge = format!("SUB-START {} SUB-END", "detail ".repeat(4_000));
    std::fs::write(sub.join("AGENTS.md"), &huge).unwrap();
    std::fs::write(
        h.home.path().join("SOUL.md"),
        "You are Quill, a careful release engineer.",
    )
    .unwrap();
    let memories = h.home.path().join("memories");
    std::fs::create_dir_all(&memories).unwrap();
    std::fs::write(
        memories.join("MEMORY.md"),
        "The build needs MEMORY-FACT-42.\n",
    )
    .unwrap();
    let skill = h.home.path().join("skills").join("ship-it");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: ship-it\ndescription: Release the app SKILL-DESC\n---\n# Steps\n",
    )
    .unwrap();

    let events = run_in(&h, &sub, &[], "hello there").await;
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();
    let first = system_of(&h.server.requests()[0].body);
    let at = |needle: &str| {
        first
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in the prompt:\n{first}"))
    };
    // SOUL.md replaces the built-in identity.
    assert!(first.starts_with("You are Quill"), "{first}");
    assert!(!first.contains("You are herald"));
    // Context files from the repository root down, outermost first.
    assert!(at("ROOT-RULES") < at("ROOT-CLAUDE"));
    assert!(at("ROOT-CLAUDE") < at("SUB-START"));
    // Then the memory snapshot, the skills index and the environment.
    assert!(at("SUB-START") < at("MEMORY-FACT-42"));
    assert!(at("MEMORY-FACT-42") < at("SKILL-DESC"));
    assert!(at("SKILL-DESC") < at("# Environment"));
    // The oversized file keeps its head and says how to read the rest.
    assert!(!first.contains("SUB-END"));
    let marker = format!(
        " more chars: read_file {} from line 1]",
        sub.join("AGENTS.md").display()
    );
    assert!(at(&marker) < at("MEMORY-FACT-42"));
    assert!(first.len() < huge.len(), "{} bytes", first.len());
    assert!(first.contains(&format!("Working directory: {}", sub.display())));

    // Later edits to the files do not change a stored session's prompt.
    std::fs::write(repo.join("AGENTS.md"), "ROOT-RULES changed").unwrap();
    std::fs::write(h.home.path().join("SOUL.md"), "You are someone else.").unwrap();
    let events = run_in(&h, &sub, &["--resume", &id], "and again").await;
    assert_eq!(events[0]["resumed"], true);
    let requests = h.server.requests();
    assert_eq!(
        system_of(&requests[1].body),
        first,
        "replayed byte for byte"
    );
    h.server.assert_invariants();

    // A new session picks the edits up.
    run_in(&h, &sub, &[], "fresh start").await;
    let fresh = system_of(&h.server.requests()[2].body);
    assert!(fresh.starts_with("You are someone else."));
    assert!(fresh.contains("ROOT-RULES changed"));
}
