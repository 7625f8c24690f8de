//! An MCP server's request for user input (elicitation) over the native
//! API: the real server-everything asks during a tool call, the request is
//! an `elicitation.requested` event, listed under
//! `/api/sessions/{id}/elicitations` and answered with a POST there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::{Serve, SseReader, assert_error};
use herald_testkit::{Reply, Script};
use serde_json::json;

fn everything_js() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run .ci/install-mcp-servers (it installs the real MCP test servers from npm into .ci/mcp)",
        path.display()
    );
    path.canonicalize().unwrap().display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_is_listed_and_answered_over_the_api() {
    // The model calls the elicitation tool, then repeats its result.
    let script = Script::new().responder(|view| match view.tool_results().last() {
        Some((_, result)) => Reply::text(format!("tool said: {result}")),
        None => Reply::tool("mcp__ev__trigger-elicitation-request", json!({})),
    });
    let js = everything_js();
    let serve = Serve::start_with(script, move |config| {
        let server = herald_mcp::McpServerConfig::stdio("node", [js, "stdio".to_owned()]);
        config.settings.mcp_servers.insert("ev".to_owned(), server);
        config.settings.permissions.allow = vec!["mcp__ev__*".into()];
    })
    .await;
    let (_, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let events = serve
        .get(&format!("/api/sessions/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(events);
    let (status, _, _) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns"),
            &json!({"input": "fill in the form"}),
        )
        .await;
    assert_eq!(status, 202);
    let seen = events.until_type("elicitation.requested").await;
    let request = seen.last().unwrap().1.clone();
    let request_id = request["request_id"].as_str().unwrap().to_owned();
    assert_eq!(request["server"], "ev");
    assert_eq!(request["schema"]["required"], json!(["name"]));

    let (status, listed) = serve
        .get_json(&format!("/api/sessions/{id}/elicitations"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed["elicitations"][0]["request_id"], request_id.as_str());
    assert_eq!(listed["elicitations"][0]["agent_id"], "root");
    assert_eq!(listed["elicitations"][0]["server"], "ev");

    let path = format!("/api/sessions/{id}/elicitations/{request_id}");
    // An unknown action and content missing a required field are 400 and
    // leave the request waiting; an unknown id is 404.
    let (status, _, body) = serve.post_json(&path, &json!({"action": "perhaps"})).await;
    assert_error(status, &body, 400);
    let (status, _, body) = serve
        .post_json(
            &path,
            &json!({"action": "accept", "content": {"check": true}}),
        )
        .await;
    assert_error(status, &body, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'name'"),
        "{body}"
    );
    let (status, _, body) = serve
        .post_json(
            &format!("/api/sessions/{id}/elicitations/eli_999"),
            &json!({"action": "decline"}),
        )
        .await;
    assert_error(status, &body, 404);
    let (_, listed) = serve
        .get_json(&format!("/api/sessions/{id}/elicitations"))
        .await;
    assert_eq!(listed["elicitations"].as_array().unwrap().len(), 1);

    let (status, _, body) = serve
        .post_json(
            &path,
            &json!({"action": "accept", "content": {"name": "Grace Hopper", "integer": 9}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let seen = events.until_type("run.completed").await;
    let resolved: Vec<_> = seen
        .iter()
        .filter(|(_, e)| e["type"] == "elicitation.resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "{seen:?}");
    assert_eq!(resolved[0].1["action"], "accept");
    assert_eq!(resolved[0].1["by"], "user");
    let done = &seen.last().unwrap().1;
    let answer = done["final_response"].as_str().unwrap();
    assert!(answer.contains("- Name: Grace Hopper"), "{answer}");
    assert!(answer.contains("- Favorite Integer: 9"), "{answer}");
    let (_, listed) = serve
        .get_json(&format!("/api/sessions/{id}/elicitations"))
        .await;
    assert_eq!(listed["elicitations"], json!([]));
    serve.stop().await;
}
