//! Agent definitions end to end: Markdown files in `.claude/agents/`,
//! `.agents/agents/` and `$HERALD_HOME/agents/` named by `delegate_task`
//! with `agent: NAME` — the real binary against the scripted server, each
//! child's request checked for its instructions, tools and model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{RecordedRequest, Reply, RequestView, Script};
use serde_json::{Value, json};

/// A definition as Claude Code's `/agents` command writes it.
const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews code for bugs. Use after every change.\ntools: Read, Grep\nmodel: inherit\ncolor: blue\n---\n\nREVIEWER-INSTRUCTIONS: you are a strict reviewer; report every unwrap.\n";

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn view(request: &RecordedRequest) -> RequestView {
    RequestView::from_body(request.api, &request.body).unwrap()
}

/// The description of `tool` in a recorded request (either wire).
fn tool_description(request: &RecordedRequest, tool: &str) -> String {
    let tools = request.body["tools"].as_array().unwrap();
    tools
        .iter()
        .find_map(|t| {
            let (name, description) = match t.get("function") {
                Some(f) => (&f["name"], &f["description"]),
                None => (&t["name"], &t["description"]),
            };
            (name == tool).then(|| description.as_str().unwrap().to_owned())
        })
        .unwrap_or_else(|| panic!("no {tool} in the request"))
}

/// The tool results in the last request of a conversation.
fn last_results(h: &Harness, needle: &str) -> Vec<String> {
    let requests = h.requests_of(needle);
    view(requests.last().unwrap())
        .messages
        .iter()
        .flat_map(|m| m.tool_results.iter().map(|(_, c)| c.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claude_code_definition_drives_the_childs_prompt_and_tools() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "PARENT review the code",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "child: review src/lib.rs", "agent": "reviewer"}),
                    ),
                    Reply::text("review delegated"),
                ],
            )
            .conversation(
                "child: review src/lib.rs",
                vec![
                    Reply::tool("read_file", json!({"path": "lib.rs"})),
                    Reply::text("one unwrap found"),
                ],
            ),
    )
    .await;
    write(&h.work_path(), ".claude/agents/reviewer.md", REVIEWER);
    write(&h.work_path(), "lib.rs", "fn main() { x.unwrap(); }\n");
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "PARENT review the code")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "review delegated");

    // The parent's delegate_task lists the definition, one line.
    let parent = h.requests_of("PARENT review");
    let description = tool_description(&parent[0], "delegate_task");
    assert!(
        description.contains("\n- reviewer: Reviews code for bugs. Use after every change."),
        "{description}"
    );
    // The same bytes on every request of the session.
    assert_eq!(
        tool_description(parent.last().unwrap(), "delegate_task"),
        description
    );

    let child = h.requests_of("child: review src/lib.rs");
    assert_eq!(child.len(), 2);
    let first = view(&child[0]);
    assert!(
        first.system.contains(
            "# Instructions (agent reviewer)\nREVIEWER-INSTRUCTIONS: you are a strict reviewer; report every unwrap."
        ),
        "{}",
        first.system
    );
    assert!(first.system.contains("# Task\nchild: review src/lib.rs"));
    assert!(!first.system.contains("color"), "{}", first.system);
    assert_eq!(first.tool_names, ["read_file", "search_files"]);
    assert_eq!(first.model, "gpt-4.1-mini", "model: inherit");
    let results = last_results(&h, "child: review src/lib.rs");
    assert!(results[0].contains("x.unwrap()"), "{results:?}");

    let result: Value = serde_json::from_str(&last_results(&h, "PARENT review")[0]).unwrap();
    assert_eq!(result["results"][0]["status"], "completed");
    assert_eq!(result["results"][0]["summary"], "one unwrap found");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_agents_and_tools_are_errors_and_start_nothing() {
    let h = Harness::new(Script::new().conversation(
        "PARENT try bad agents",
        vec![
            Reply::tool(
                "delegate_task",
                json!({"goal": "child: never runs", "agent": "nobody"}),
            ),
            Reply::tool(
                "delegate_task",
                json!({"tasks": [{"goal": "child: never runs either"}, {"goal": "child: nor this", "agent": "broken-tools"}]}),
            ),
            Reply::text("gave up"),
        ],
    ))
    .await;
    write(&h.work_path(), ".claude/agents/reviewer.md", REVIEWER);
    write(
        h.home.path(),
        "agents/broken-tools.md",
        "---\ndescription: Names a tool nobody has\ntools: Read, launch_rocket\n---\nx\n",
    );
    let (output, events) = h.run_json(Wire::OpenAi, &[], "PARENT try bad agents").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    assert_eq!(requests.len(), 3, "no child may have made a request");
    assert!(of_type(&events, "subagent.started").is_empty());
    let results = last_results(&h, "PARENT try bad agents");
    assert!(
        results[0].contains("no agent definition \"nobody\"; available: broken-tools, reviewer")
            && results[0].contains("Nothing was started"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("task 1: agent \"broken-tools\"")
            && results[1].contains("(launch_rocket)")
            && results[1].contains("valid tool names: ")
            && results[1].contains("read_file"),
        "{}",
        results[1]
    );
    let errors: Vec<&Value> = of_type(&events, "tool.completed")
        .into_iter()
        .filter(|e| e["status"] == "error")
        .collect();
    assert_eq!(errors.len(), 2);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn per_task_agents_models_and_iteration_limits() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "PARENT fan out",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"tasks": [
                            {"goal": "child: quick look", "agent": "quick"},
                            {"goal": "child: plain task"},
                            {"goal": "child: aliased", "agent": "aliased"}
                        ]}),
                    ),
                    Reply::text("fanned out"),
                ],
            )
            .conversation(
                "child: quick look",
                vec![
                    Reply::tool("search_files", json!({"pattern": "x"})),
                    Reply::text("summary at the limit"),
                ],
            )
            .conversation("child: plain task", vec![Reply::text("plain done")])
            .conversation("child: aliased", vec![Reply::text("alias done")]),
    )
    .await;
    // .agents wins over .claude for the same name, project over home.
    write(
        &h.work_path(),
        ".agents/agents/quick.md",
        "---\nname: quick\ndescription: One look only\ntools: [Grep, Glob]\nmodel: gpt-4.1-nano\nmax_iterations: 1\n---\nQUICK-INSTRUCTIONS\n",
    );
    write(
        &h.work_path(),
        ".claude/agents/quick.md",
        "---\nname: quick\ndescription: shadowed\n---\nSHADOWED-CLAUDE\n",
    );
    write(
        h.home.path(),
        "agents/quick.md",
        "---\nname: quick\ndescription: shadowed too\n---\nSHADOWED-HOME\n",
    );
    write(
        h.home.path(),
        "agents/aliased.md",
        "---\ndescription: Claude alias on another provider\nmodel: haiku\n---\nALIAS-INSTRUCTIONS\n",
    );
    let (output, _) = h.run_json(Wire::OpenAi, &[], "PARENT fan out").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result: Value = serde_json::from_str(&last_results(&h, "PARENT fan out")[0]).unwrap();
    let results = result["results"].as_array().unwrap();

    // max_iterations: 1 — one request with tools, then the limit's final
    // request without (the default of 50 would have completed normally).
    let quick = h.requests_of("child: quick look");
    assert_eq!(quick.len(), 2);
    assert!(view(&quick[1]).tool_choice_none);
    let quick = view(&quick[0]);
    assert!(!quick.tool_choice_none);
    assert!(
        quick.system.contains("QUICK-INSTRUCTIONS"),
        "{}",
        quick.system
    );
    assert!(!quick.system.contains("SHADOWED"), "{}", quick.system);
    assert_eq!(quick.tool_names, ["search_files"]);
    assert_eq!(quick.model, "gpt-4.1-nano");
    assert_eq!(results[0]["exit_reason"], "max_iterations");
    assert_eq!(results[0]["summary"], "summary at the limit");
    assert_eq!(results[0]["model"], "gpt-4.1-nano");

    let plain = view(&h.requests_of("child: plain task")[0]);
    assert!(!plain.system.contains("# Instructions"), "{}", plain.system);
    assert!(plain.tool_names.len() > 2, "{:?}", plain.tool_names);
    assert_eq!(plain.model, "gpt-4.1-mini");

    // `haiku` means an Anthropic model: on openai the child keeps the usual one.
    let aliased = view(&h.requests_of("child: aliased")[0]);
    assert!(aliased.system.contains("ALIAS-INSTRUCTIONS"));
    assert_eq!(aliased.model, "gpt-4.1-mini");
    assert_eq!(results[2]["summary"], "alias done");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn model_aliases_map_on_anthropic() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "PARENT on anthropic",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "child: cheap work", "agent": "cheap"}),
                    ),
                    Reply::text("ok"),
                ],
            )
            .conversation("child: cheap work", vec![Reply::text("cheap done")]),
    )
    .await;
    write(
        &h.work_path(),
        ".claude/agents/cheap.md",
        "---\nname: cheap\ndescription: Cheap model\ntools: Read, Bash\nmodel: haiku\n---\nCHEAP\n",
    );
    let (output, _) = h
        .run_json(Wire::Anthropic, &[], "PARENT on anthropic")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let child = view(&h.requests_of("child: cheap work")[0]);
    assert_eq!(child.model, "claude-haiku-4-5");
    assert_eq!(child.tool_names, ["read_file", "terminal"]);
    assert!(child.system.contains("CHEAP"));
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_definition_file_is_a_warning_not_a_failure() {
    let h = Harness::new(Script::new().conversation("PARENT hello", vec![Reply::text("hi")])).await;
    write(&h.work_path(), ".claude/agents/reviewer.md", REVIEWER);
    write(
        &h.work_path(),
        ".claude/agents/broken.md",
        "---\nname: [unclosed\n---\nbody\n",
    );
    let (output, events) = h.run_json(Wire::OpenAi, &[], "PARENT hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let warnings: Vec<String> = of_type(&events, "error")
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .contains(".claude/agents/broken.md: skipped: the front matter is not valid YAML"),
        "{warnings:?}"
    );
    let description = tool_description(&h.server.requests()[0], "delegate_task");
    assert!(description.contains("- reviewer: "), "{description}");
    assert!(!description.contains("broken"), "{description}");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn herald_agents_defs_lists_them() {
    let h = Harness::new(Script::new()).await;
    let run = |json: bool| {
        let mut cmd = h.bare_command();
        cmd.args(["agents", "defs"]);
        if json {
            cmd.arg("--json");
        }
        cmd.output()
    };
    let output = run(false).await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("no agent definitions"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );

    write(&h.work_path(), ".claude/agents/reviewer.md", REVIEWER);
    write(
        &h.work_path(),
        ".claude/agents/web.md",
        "---\nname: web\ndescription: Browses\ntools: Read, WebFetch, NotebookEdit\nmodel: sonnet\nmax_iterations: 9\n---\nx\n",
    );
    write(
        h.home.path(),
        "agents/reviewer.md",
        "---\ndescription: home copy\n---\nx\n",
    );
    write(h.home.path(), "agents/bad.md", "no front matter\n");
    let output = run(false).await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    let work = h.work_path();
    let expected = format!(
        "reviewer  [.claude]  {}\n  Reviews code for bugs. Use after every change.\n  tools: read_file, search_files  model: inherit  max_iterations: default\nweb  [.claude]  {}\n  Browses\n  tools: read_file, web_extract  model: sonnet  max_iterations: 9\n  note: tool NotebookEdit left out: herald has no notebook editor (patch edits the JSON)\n  note: model sonnet is claude-sonnet-4-5 when children run on anthropic; on other providers they use the delegating agent's model\n",
        work.join(".claude/agents/reviewer.md").display(),
        work.join(".claude/agents/web.md").display(),
    );
    assert_eq!(text, expected);
    let err = stderr(&output);
    assert!(
        err.contains("skipped: ")
            && err.contains("agents/bad.md: skipped: it must start with a '---' line"),
        "{err}"
    );
    assert!(
        err.contains("shadowed: ")
            && err.contains("agents/reviewer.md: agent \"reviewer\" is shadowed by"),
        "{err}"
    );

    let output = run(true).await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let defs = listed["definitions"].as_array().unwrap();
    assert_eq!(defs.len(), 2);
    assert_eq!(defs[0]["name"], "reviewer");
    assert_eq!(defs[0]["source"], "claude");
    assert_eq!(defs[0]["tools"], json!(["read_file", "search_files"]));
    assert_eq!(defs[0]["model"], Value::Null);
    assert!(
        defs[0]["instructions"]
            .as_str()
            .unwrap()
            .starts_with("REVIEWER-INSTRUCTIONS")
    );
    assert_eq!(defs[1]["model"], "sonnet");
    assert_eq!(defs[1]["max_iterations"], 9);
    assert_eq!(listed["skipped"].as_array().unwrap().len(), 1);
    assert_eq!(listed["shadowed"].as_array().unwrap().len(), 1);
}
