//! Skills at pack scale through the real binary: installed packs
//! in their published layouts (nested, Title Case names, a thousand skills,
//! a user-only skill, a broken one) reach the model by name, every skill is
//! loadable, and `herald skills list|view` say what was renamed or rejected
//! and why — without changing any file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{Harness, Wire, stderr, tool_results};
use herald_knowledge::SkillRoots;
use herald_knowledge::skills::fixture::{popular_packs, service_pack, write_skill};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

fn system_of(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

async fn cli(h: &Harness, args: &[&str]) -> std::process::Output {
    h.bare_command().args(args).output().await.unwrap()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every file under `dir` with its bytes, to prove nothing was changed.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The project's `.claude/skills` with the 43 skills of three popular packs,
/// a Title Case skill five folders deep, a user-only skill and a broken one.
/// Returns the names the model should see.
fn install_packs(h: &Harness) -> (PathBuf, Vec<String>) {
    let root = h.work_path().join(".claude/skills");
    let mut names = popular_packs(&root).unwrap();
    write_skill(
        &root,
        "vendor/tools/seo/ahrefs/ahrefs-automation",
        Some("Ahrefs Automation"),
        "Automate Ahrefs keyword research and backlink audits",
        "",
    )
    .unwrap();
    names.push("ahrefs-automation".into());
    write_skill(
        &root,
        "ops/release-by-hand",
        Some("release-by-hand"),
        "Cut a production release step by step",
        "disable-model-invocation: true\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("broken-skill")).unwrap();
    std::fs::write(
        root.join("broken-skill/SKILL.md"),
        "---\nname: broken-skill\n---\nNo description above.\n",
    )
    .unwrap();
    names.sort();
    (root, names)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_skill_of_installed_packs_reaches_the_model_and_loads() {
    let h = Harness::new(Script::new().conversation(
        "use the packs",
        vec![
            Reply::tool("skill_view", json!({"name": "Ahrefs Automation"})),
            Reply::tool("skill_view", json!({"name": "broken-skill"})),
            Reply::tool("skill_view", json!({"name": "release-by-hand"})),
            Reply::tool("skill_view", json!({"name": "test-driven-developmnt"})),
            Reply::text("done"),
        ],
    ))
    .await;
    let (root, names) = install_packs(&h);
    let before = snapshot(&root);
    let (output, _) = h.run_json(Wire::OpenAi, &[], "Please use the packs").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    assert_eq!(requests.len(), 5);
    let system = system_of(&requests[0].body);
    // Every skill the model may use is named; the user-only one is not.
    for name in &names {
        assert!(
            system.contains(&format!("- {name}: ")),
            "{name} missing from the index:\n{system}"
        );
    }
    assert!(!system.contains("release-by-hand"), "{system}");
    assert!(!system.contains("broken-skill"), "{system}");
    assert!(
        !system.contains("left out to fit the prompt budget"),
        "{system}"
    );
    let index = &system[system.find("# Skills").unwrap()..system.find("# Environment").unwrap()];
    assert!(index.chars().count() <= 4_000, "{}", index.chars().count());
    // Descriptions were shortened at word boundaries, never mid-word.
    let found = SkillRoots::new(h.home.path(), &h.work_path()).discover();
    let mut cut = 0;
    for skill in found.for_model() {
        let line = index
            .lines()
            .find(|l| l.starts_with(&format!("- {}: ", skill.name)))
            .unwrap();
        let shown = &line[skill.name.len() + 4..];
        if let Some(kept) = shown.strip_suffix('…') {
            cut += 1;
            assert!(skill.description.starts_with(kept), "{line}");
            let next = skill.description[kept.len()..].chars().next().unwrap();
            assert!(!next.is_alphanumeric(), "cut mid-word: {line}");
        } else {
            assert_eq!(shown, skill.description);
        }
    }
    assert!(
        cut > 30,
        "the packs' long descriptions were shortened: {cut}"
    );
    // The prompt stays the same for the whole session.
    for request in &requests[1..] {
        assert_eq!(system_of(&request.body), system);
    }

    let results = tool_results(&requests[4].body);
    assert!(
        results[0].starts_with("Skill ahrefs-automation (.claude: ")
            && results[0].contains("category vendor/tools/seo/ahrefs")
            && results[0].contains("name: Ahrefs Automation"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains(
            "skill \"broken-skill\" is not available: the front matter has no description"
        ),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("only the user invokes it") && !results[2].contains("Cut a production"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("Did you mean: test-driven-development, ") && results[3].len() < 400,
        "{}",
        results[3]
    );
    assert_eq!(snapshot(&root), before, "loading skills changed files");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_skill_pack_is_indexed_within_budget_and_searchable() {
    let h = Harness::new(Script::new().conversation(
        "find a skill",
        vec![
            Reply::tool("skills_list", json!({"query": "zendesk 27"})),
            Reply::tool("skill_view", json!({"name": "zendesk-27-automation"})),
            Reply::text("done"),
        ],
    ))
    .await;
    let root = h.work_path().join(".claude/skills");
    let names = service_pack(&root, 1_000).unwrap();
    let (output, _) = h.run_json(Wire::OpenAi, &[], "Please find a skill").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    let system = system_of(&requests[0].body);
    let index = &system[system.find("# Skills").unwrap()..system.find("# Environment").unwrap()];
    assert!(index.chars().count() <= 4_000, "{}", index.chars().count());
    let named = names.iter().filter(|n| index.contains(n.as_str())).count();
    assert!(named > 100, "{named}");
    assert!(
        index.contains(&format!(
            "...and {} more of 1000 skills, not named here. Search them by name and description with skills_list",
            1_000 - named
        )),
        "{index}"
    );
    assert!(!index.contains("zendesk-27-automation"), "{index}");
    let results = tool_results(&requests[2].body);
    assert!(
        results[0]
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("- zendesk-27-automation [.claude, composio-skills]: "),
        "{}",
        results[0]
    );
    assert!(
        results[1].starts_with("Skill zendesk-27-automation (.claude: "),
        "{}",
        results[1]
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn skills_list_and_view_say_what_was_renamed_or_rejected() {
    let h = Harness::new(Script::new()).await;
    let (root, names) = install_packs(&h);
    let before = snapshot(&root);

    let output = cli(&h, &["skills", "list"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    for name in &names {
        assert!(
            text.contains(&format!("\n{name}  [.claude"))
                || text.starts_with(&format!("{name}  [")),
            "{name}: {text}"
        );
    }
    assert!(
        text.contains("ahrefs-automation  [.claude, vendor/tools/seo/ahrefs]  Automate Ahrefs keyword research and backlink audits\n  warning: front-matter name \"Ahrefs Automation\" is not a valid skill name"),
        "{text}"
    );
    assert!(
        text.contains("release-by-hand  [.claude, ops, user-only]  Cut a production release"),
        "{text}"
    );
    assert!(
        text.contains("broken-skill  [.claude]  error: the front matter has no description; add `description:` saying when to use the skill ("),
        "{text}"
    );
    let output = cli(&h, &["skills", "list", "--json"]).await;
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed["skills"].as_array().unwrap().len(), names.len() + 1);
    assert_eq!(listed["rejected"][0]["name"], "broken-skill");

    // The user may view a user-only skill and a renamed one by either name.
    let output = cli(&h, &["skills", "view", "release-by-hand"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Cut a production release"));
    let output = cli(&h, &["skills", "view", "Ahrefs Automation"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("Skill ahrefs-automation"));

    // Bad input: each gets its own error, short, and nothing changes.
    let output = cli(&h, &["skills", "view", "broken-skill"]).await;
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains(
            "skill \"broken-skill\" is not available: the front matter has no description"
        ) && err.contains("broken-skill/SKILL.md"),
        "{err}"
    );
    assert!(err.len() < 600, "{err}");
    let output = cli(&h, &["skills", "view", "pdff"]).await;
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("no skill named \"pdff\". Did you mean: pdf"),
        "{err}"
    );
    assert!(err.len() < 600, "a short suggestion, not every name: {err}");
    let output = cli(
        &h,
        &["skills", "view", "pdf", "--file", "../../../etc/passwd"],
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("'..' is not allowed"),
        "{}",
        stderr(&output)
    );
    assert_eq!(snapshot(&root), before, "skills commands changed files");
}

/// `/skill NAME request` sends a user-only skill's instructions with the
/// request (the model cannot load such a skill itself); an unknown name is
/// a warning on screen and no request.
#[tokio::test(flavor = "multi_thread")]
async fn the_tui_skill_command_sends_a_user_only_skill_with_the_request() {
    use herald_testkit::pty::keys;
    use std::time::Duration;

    let h = Harness::new(Script::new().responder(|_| Reply::text("release cut"))).await;
    let dir = h.work_path().join(".claude/skills/ops/release-by-hand");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: release-by-hand\ndescription: Cut a production release\n\
         disable-model-invocation: true\n---\n# Release\n1. Tag it RELEASE-STEP-MARKER.\n",
    )
    .unwrap();
    let pty = h.tui(&[], 40, 160);
    let wait = Duration::from_secs(20);
    let wait_for = |text: &str| {
        pty.wait_for(|screen| screen.contains(text), wait)
            .unwrap_or_else(|err| panic!("waiting for {text:?}: {err}"))
    };
    wait_for("Ask herald");
    // With a space typed the command popup is closed (Enter on "/skill"
    // alone picks the popup's first match, /skills).
    pty.send_str("/skill ");
    pty.send(keys::ENTER);
    wait_for("/skill needs a skill's name");
    pty.send_str("/skill no-such-skill now");
    pty.send(keys::ENTER);
    wait_for("no skill named \"no-such-skill\"");
    assert!(
        h.server.requests().is_empty(),
        "an unknown skill reached the model"
    );
    pty.send_str("/skill release-by-hand for version 2.1");
    pty.send(keys::ENTER);
    wait_for("release cut");
    let requests = h.server.requests();
    assert_eq!(requests.len(), 1, "one request for the skill's prompt");
    let messages = requests[0].body["messages"].as_array().unwrap();
    let prompt = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap();
    assert!(
        prompt.contains("Use the skill `release-by-hand`"),
        "{prompt}"
    );
    assert!(prompt.contains("RELEASE-STEP-MARKER"), "{prompt}");
    assert!(prompt.contains("Request: for version 2.1"), "{prompt}");
    // The skill stays out of the model's own index all the same.
    let system = system_of(&requests[0].body);
    assert!(!system.contains("release-by-hand"), "{system}");
    pty.send(keys::CTRL_D);
    assert!(pty.wait_exit(wait).is_some(), "herald exits on Ctrl+D");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_skills_overlay_shows_renames_and_user_only_skills() {
    use herald_testkit::pty::keys;
    use std::time::Duration;

    let h = Harness::new(Script::new().responder(|_| Reply::text("unused"))).await;
    let root = h.work_path().join(".claude/skills");
    write_skill(
        &root,
        "seo/ahrefs-automation",
        Some("Ahrefs Automation"),
        "Automate Ahrefs",
        "",
    )
    .unwrap();
    write_skill(
        &root,
        "ops/release-by-hand",
        Some("release-by-hand"),
        "Cut a production release step by step",
        "disable-model-invocation: true\n",
    )
    .unwrap();
    let pty = h.tui(&[], 40, 160);
    let wait = Duration::from_secs(20);
    let wait_for = |text: &str| {
        pty.wait_for(|screen| screen.contains(text), wait)
            .unwrap_or_else(|err| panic!("waiting for {text:?}: {err}"))
    };
    wait_for("Ask herald");
    pty.send_str("/skills");
    pty.send(keys::ENTER);
    wait_for("warning: front-matter name \"Ahrefs Automation\" is not a valid skill name");
    wait_for("release-by-hand  [.claude, user-only]  Cut a production release");
    pty.send(keys::ESC);
    // The list is closed (and Esc was read as a key of its own, not as the
    // start of Alt+Ctrl+D) before Ctrl+D is sent.
    pty.wait_for(|_| !pty.screen().contains("release-by-hand"), wait)
        .unwrap_or_else(|err| panic!("waiting for /skills to close: {err}"));
    pty.send(keys::CTRL_D);
    assert!(pty.wait_exit(wait).is_some(), "herald exits on Ctrl+D");
    assert!(h.server.requests().is_empty(), "/skills reached the model");
}
