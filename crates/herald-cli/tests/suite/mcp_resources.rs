//! MCP resources and elicitation through the real binary, against the real
//! `@modelcontextprotocol/server-everything` (`.ci/install-mcp-servers`
//! puts it in `.ci/mcp`) and the scripted model: the model lists and reads
//! a resource (also in read-only mode: the two tools are reads), and a
//! headless `herald run` declines a server's request for user input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::{Harness, Wire, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

fn everything_dist() -> PathBuf {
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/mcp/node_modules/@modelcontextprotocol/server-everything/dist");
    assert!(
        dist.join("index.js").is_file(),
        "{} is missing: run .ci/install-mcp-servers (it installs the real MCP test servers from npm into .ci/mcp)",
        dist.display()
    );
    dist.canonicalize().unwrap()
}

/// `[mcp_servers.ev]`: server-everything over stdio.
fn everything_config() -> String {
    let js = everything_dist().join("index.js").display().to_string();
    format!(
        "[mcp_servers.ev]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
        serde_json::to_string(&js).unwrap()
    )
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_lists_and_reads_resources_in_read_only_mode() {
    let prompt = "what does the features doc say";
    let uri = "demo://resource/static/document/features.md";
    let h = Harness::new(Script::new().conversation(
        prompt,
        vec![
            Reply::tool("mcp_list_resources", json!({})),
            Reply::tool("mcp_read_resource", json!({"server": "ev", "uri": uri})),
            Reply::tool(
                "mcp_read_resource",
                json!({"server": "ev", "uri": "demo://nowhere"}),
            ),
            Reply::text("read it"),
        ],
    ))
    .await;
    h.config(&everything_config());
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--mode", "read-only"], prompt)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["status"], "completed", "{events:?}");

    let requests = h.requests_of(prompt);
    let names = tool_names(&requests[0].body);
    for wanted in ["mcp_list_resources", "mcp_read_resource"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted}: {names:?}");
    }
    let results = tool_results(&requests.last().unwrap().body);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].contains(&format!("- {uri} · features.md · text/markdown")),
        "{}",
        results[0]
    );
    let features = std::fs::read_to_string(everything_dist().join("docs/features.md")).unwrap();
    assert_eq!(results[1], features, "the resource's text, as it is");
    // An unknown URI is an error result that says what to do.
    assert!(
        results[2].contains("Check the URI with mcp_list_resources (server `ev`)"),
        "{}",
        results[2]
    );
    let completed = of_type(&events, "tool.completed");
    let statuses: Vec<&str> = completed
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    // Read-only mode let both tools run (the results above): they are reads.
    assert_eq!(statuses, ["ok", "ok", "error"], "{completed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_headless_run_declines_a_servers_request_for_input() {
    let prompt = "fill in the form";
    let h = Harness::new(Script::new().conversation(
        prompt,
        vec![
            Reply::tool("mcp__ev__trigger-elicitation-request", json!({})),
            Reply::text("the server asked"),
        ],
    ))
    .await;
    let mut config = everything_config();
    config.push_str("\n[permissions]\nallow = [\"mcp__ev__*\"]\n");
    h.config(&config);
    let (output, events) = h.run_json(Wire::OpenAi, &[], prompt).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["status"], "completed", "{events:?}");

    let requested = of_type(&events, "elicitation.requested");
    assert_eq!(requested.len(), 1, "{events:?}");
    assert_eq!(requested[0]["server"], "ev");
    assert_eq!(requested[0]["agent_id"], "root");
    assert_eq!(
        requested[0]["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(
        requested[0]["schema"]["properties"]["name"]["type"],
        "string"
    );
    let resolved = of_type(&events, "elicitation.resolved");
    assert_eq!(resolved.len(), 1, "{events:?}");
    assert_eq!(resolved[0]["request_id"], requested[0]["request_id"]);
    assert_eq!(resolved[0]["action"], "decline");
    assert_eq!(resolved[0]["by"], "headless");

    let requests = h.requests_of(prompt);
    let results = tool_results(&requests.last().unwrap().body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("User declined to provide the requested information"),
        "{}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_interactive_loop_fills_in_a_servers_form_field_by_field() {
    use std::process::Stdio;
    use tokio::io::AsyncWriteExt;

    let prompt = "fill in the form";
    let h = Harness::new(Script::new().conversation(
        prompt,
        vec![
            Reply::tool("mcp__ev__trigger-elicitation-request", json!({})),
            Reply::text("thanks"),
        ],
    ))
    .await;
    let mut config = everything_config();
    config.push_str("\n[permissions]\nallow = [\"mcp__ev__*\"]\n");
    h.config(&config);
    let mut cmd = h.command(Wire::OpenAi);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The request, "fill in", then the 13 fields in the order the server
    // declares them (JSON objects keep their order in herald: serde_json's
    // `preserve_order` is on): name, check, firstLine, email, homepage,
    // birthdate, integer, number, untitledSingleSelectEnum,
    // untitledMultipleSelectEnum, titledSingleSelectEnum,
    // titledMultipleSelectEnum, legacyTitledEnum. Empty lines keep
    // defaults or skip.
    let input = "please fill in the form\ny\nAda Lovelace\ny\n\n\n\n\n7\n\nJoey\n\n2\n1,3\n2\n";
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the interactive session did not finish")
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown = stderr(&output);
    assert!(
        shown.contains("? MCP server `ev` asks: Please provide inputs for the following fields:"),
        "{shown}"
    );
    assert!(
        shown.contains("  String (required): Your full, legal name\n"),
        "{shown}"
    );
    assert!(shown.contains("    3. Wonder Woman\n"), "{shown}");

    let requests = h.requests_of(prompt);
    let results = tool_results(&requests.last().unwrap().body);
    assert_eq!(results.len(), 1, "{results:?}");
    let result = &results[0];
    for line in [
        "User provided the requested information",
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Favorite Integer: 7",
        // Kept defaults.
        "- Favorite Number: 3.14",
        "\"firstLine\": \"It was a dark and stormy night.\"",
        // Choices by number and by value.
        "\"legacyTitledEnum\": \"pet-2\"",
        "\"titledSingleSelectEnum\": \"hero-2\"",
        "\"untitledSingleSelectEnum\": \"Joey\"",
    ] {
        assert!(result.contains(line), "{line}: {result}");
    }
    assert!(
        result.contains(
            "\"titledMultipleSelectEnum\": [\n      \"fish-1\",\n      \"fish-3\"\n    ]"
        ),
        "{result}"
    );
    // Skipped optional fields are left out.
    assert!(!result.contains("\"email\""), "{result}");
}

/// In the TUI a server's prompts are slash commands `/<server>:<prompt>`:
/// offered by the completion popup and `/help`, filled in with the words
/// typed after them and sent as the prompt; a missing argument or an
/// unknown prompt is a warning and sends nothing.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_prompts_are_slash_commands_in_the_tui() {
    let h = Harness::new(Script::new().responder(|view| {
        let last = view
            .messages
            .last()
            .map(|m| m.text.clone())
            .unwrap_or_default();
        Reply::text(format!("answered: {last}"))
    }))
    .await;
    h.config(&everything_config());
    let pty = h.tui(&[], 30, 120);
    let wait = std::time::Duration::from_secs(30);
    pty.wait_for(|s| s.contains("Ask herald"), wait).unwrap();

    // The popup offers the prompts once the server has listed them.
    pty.send_str("/ev:");
    pty.wait_for(|s| s.contains("/ev:args-prompt CITY [STATE]"), wait)
        .unwrap();
    // Enter completes a command that needs an argument; a second Enter
    // sends it without one: a warning, nothing sent.
    pty.send_str("args-prompt\r");
    pty.wait_for(
        |s| s.contains("› /ev:args-prompt ") && !s.contains("CITY"),
        wait,
    )
    .unwrap();
    pty.send_str("\r");
    pty.wait_for(|s| s.contains("needs `city`"), wait).unwrap();
    pty.send_str("/ev:no-such-prompt\r");
    pty.wait_for(|s| s.contains("offers no prompt `no-such-prompt`"), wait)
        .unwrap();
    assert!(h.requests_of("weather").is_empty());

    pty.send_str("/ev:args-prompt Austin Texas\r");
    pty.wait_for(
        |s| s.contains("answered: What's weather in Austin, Texas?"),
        wait,
    )
    .unwrap();
    let sent = h.requests_of("What's weather in Austin, Texas?");
    assert_eq!(sent.len(), 1, "one turn with the filled-in prompt");

    pty.send_str("/help\r");
    pty.wait_for(|s| s.contains("/ev:args-prompt CITY [STATE]"), wait)
        .unwrap();
    pty.send(herald_testkit::pty::keys::ESC);
    // Apart from the Esc, or the two read as Alt+Ctrl+D.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    pty.send(herald_testkit::pty::keys::CTRL_D);
    pty.wait_exit(wait).expect("herald exits on Ctrl+D");
    h.server.assert_invariants();
}
