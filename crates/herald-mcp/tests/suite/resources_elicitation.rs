//! Resources and elicitation against the real
//! `@modelcontextprotocol/server-everything` over stdio: the
//! `mcp_list_resources` / `mcp_read_resource` tools a hub hands a session,
//! and a server's `elicitation/create` during a tool call answered through
//! the call's handler or the context's permission gate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use herald_mcp::{CallRequest, ElicitationHandler, McpHub, McpServer, mcp_tools};
use herald_sandbox::EnvFilter;
use herald_tools::{
    AgentState, ElicitAction, ElicitAnswer, Elicitation, GateOutcome, PermissionGate, Tool,
    ToolContext, ToolResult,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn ctx() -> ToolContext {
    ToolContext::new(
        AgentState::new(std::env::temp_dir()),
        CancellationToken::new(),
    )
}

/// The session tools of a hub with server-everything as `ev`.
async fn session_tools() -> (Arc<McpHub>, Vec<Arc<dyn Tool>>) {
    let servers = BTreeMap::from([("ev".to_owned(), common::everything())]);
    let hub = McpHub::start(&servers, &EnvFilter::default(), None);
    let tools = hub.session_tools(None).await.tools;
    (hub, tools)
}

fn tool<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(tool: &Arc<dyn Tool>, args: Value) -> ToolResult {
    tool.call(args, &ctx()).await
}

#[tokio::test]
async fn resources_and_templates_are_listed_and_read_as_text_and_blob() {
    let (hub, tools) = session_tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "the session's tools stay sorted");
    let list = tool(&tools, "mcp_list_resources");
    let read = tool(&tools, "mcp_read_resource");
    for t in [list, read] {
        assert!(t.read_only(), "{}", t.spec().name);
        assert_eq!(t.toolset(), "mcp");
    }

    let listing = call(list, json!({})).await;
    assert!(!listing.is_error, "{}", listing.content);
    eprintln!("{}", listing.content);
    assert!(
        listing.content.starts_with("MCP server `ev`: "),
        "{}",
        listing.content
    );
    // The static documents, with their MIME type and description.
    assert!(
        listing
            .content
            .contains("- demo://resource/static/document/features.md · features.md · text/markdown — Static document file"),
        "{}",
        listing.content
    );
    // The templates, text and blob.
    assert!(
        listing
            .content
            .contains("templates (fill in each {placeholder}"),
        "{}",
        listing.content
    );
    assert!(
        listing
            .content
            .contains("- demo://resource/dynamic/text/{resourceId}"),
        "{}",
        listing.content
    );
    assert!(
        listing
            .content
            .contains("- demo://resource/dynamic/blob/{resourceId}"),
        "{}",
        listing.content
    );
    let only = call(list, json!({"server": "ev"})).await;
    assert_eq!(only.content, listing.content);

    // A static text document: its text as it is.
    let doc = call(
        read,
        json!({"server": "ev", "uri": "demo://resource/static/document/features.md"}),
    )
    .await;
    assert!(!doc.is_error, "{}", doc.content);
    let on_disk = std::fs::read_to_string(common::repo_root().join(
        ".ci/mcp/node_modules/@modelcontextprotocol/server-everything/dist/docs/features.md",
    ))
    .unwrap();
    assert_eq!(doc.content, on_disk);

    // A template filled in: text, and a blob described by a line.
    let text = call(
        read,
        json!({"server": "ev", "uri": "demo://resource/dynamic/text/3"}),
    )
    .await;
    assert!(!text.is_error, "{}", text.content);
    assert!(
        text.content
            .starts_with("Resource 3: This is a plaintext resource"),
        "{}",
        text.content
    );
    let blob = call(
        read,
        json!({"server": "ev", "uri": "demo://resource/dynamic/blob/3"}),
    )
    .await;
    assert!(!blob.is_error, "{}", blob.content);
    assert!(
        blob.content
            .starts_with("[resource: demo://resource/dynamic/blob/3, "),
        "{}",
        blob.content
    );
    assert!(
        blob.content.ends_with(" bytes, binary content not shown]"),
        "{}",
        blob.content
    );
    assert!(blob.images.is_empty());
    hub.shutdown().await;
}

#[tokio::test]
async fn unknown_servers_and_uris_are_error_results_that_say_what_to_do() {
    let (hub, tools) = session_tools().await;
    let list = tool(&tools, "mcp_list_resources");
    let read = tool(&tools, "mcp_read_resource");

    let unknown_server = call(read, json!({"server": "nope", "uri": "demo://x"})).await;
    assert!(unknown_server.is_error);
    assert_eq!(
        unknown_server.content,
        "no MCP server `nope` in this session; the servers are: ev"
    );
    let unknown_list = call(list, json!({"server": "nope"})).await;
    assert!(unknown_list.is_error);
    assert!(
        unknown_list.content.contains("the servers are: ev"),
        "{}",
        unknown_list.content
    );

    let unknown_uri = call(
        read,
        json!({"server": "ev", "uri": "demo://resource/static/document/no-such.md"}),
    )
    .await;
    assert!(unknown_uri.is_error, "{}", unknown_uri.content);
    assert!(
        unknown_uri.content.contains("MCP server `ev`"),
        "{}",
        unknown_uri.content
    );
    assert!(
        unknown_uri
            .content
            .contains("Check the URI with mcp_list_resources (server `ev`)"),
        "{}",
        unknown_uri.content
    );

    let missing = call(read, json!({"server": "ev"})).await;
    assert!(missing.is_error);
    assert!(
        missing.content.contains("needs `server` and `uri`"),
        "{}",
        missing.content
    );
    // The server still answers after the errors.
    let again = call(
        read,
        json!({"server": "ev", "uri": "demo://resource/dynamic/text/1"}),
    )
    .await;
    assert!(!again.is_error, "{}", again.content);
    hub.shutdown().await;
}

#[tokio::test]
async fn an_agent_given_one_servers_toolset_reaches_only_that_servers_resources() {
    let servers = BTreeMap::from([
        ("ev".to_owned(), common::everything()),
        ("other".to_owned(), common::everything()),
    ]);
    let hub = McpHub::start(&servers, &EnvFilter::default(), None);
    let tools = hub.session_tools(None).await.tools;
    // A subagent given toolsets `mcp-ev` and `mcp` (as delegation does).
    let mut registry = herald_tools::ToolRegistry::new(50_000);
    for tool in &tools {
        if tool.toolset() == "mcp-ev" || tool.toolset() == "mcp" {
            registry.register(Arc::clone(tool));
        }
    }
    let child = ctx().with_call("c1", Arc::new(registry));
    let read = tool(&tools, "mcp_read_resource");
    let hidden = read
        .call(
            json!({"server": "other", "uri": "demo://resource/dynamic/text/1"}),
            &child,
        )
        .await;
    assert!(hidden.is_error);
    assert_eq!(
        hidden.content,
        "no MCP server `other` in this session; the servers are: ev"
    );
    let own = read
        .call(
            json!({"server": "ev", "uri": "demo://resource/dynamic/text/1"}),
            &child,
        )
        .await;
    assert!(!own.is_error, "{}", own.content);
    let listing = tool(&tools, "mcp_list_resources")
        .call(json!({}), &child)
        .await;
    assert!(
        listing.content.starts_with("MCP server `ev`: "),
        "{}",
        listing.content
    );
    assert!(!listing.content.contains("`other`"), "{}", listing.content);
    // The root agent (no narrowed registry) reaches both.
    let root = call(tool(&tools, "mcp_list_resources"), json!({})).await;
    assert!(
        root.content.contains("MCP server `other`: "),
        "{}",
        root.content
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_failed_to_start_keeps_the_tools_and_is_reported_unavailable() {
    let mut broken = common::everything();
    broken.command = Some("/nonexistent/herald-test-node".to_owned());
    let servers = BTreeMap::from([("gone".to_owned(), broken)]);
    let hub = McpHub::start(&servers, &EnvFilter::default(), None);
    let tools = hub.session_tools(None).await.tools;
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(names, ["mcp_list_resources", "mcp_read_resource"]);
    let read = call(
        tool(&tools, "mcp_read_resource"),
        json!({"server": "gone", "uri": "demo://x"}),
    )
    .await;
    assert!(read.is_error);
    assert!(
        read.content
            .starts_with("MCP server `gone` is unavailable: "),
        "{}",
        read.content
    );
    assert!(
        read.content.ends_with("Continue without its resources."),
        "{}",
        read.content
    );
    let list = call(
        tool(&tools, "mcp_list_resources"),
        json!({"server": "gone"}),
    )
    .await;
    assert!(list.is_error, "{}", list.content);
    assert!(list.content.contains("unavailable"), "{}", list.content);
}

#[tokio::test]
async fn without_servers_there_are_no_resource_tools() {
    let hub = McpHub::start(&BTreeMap::new(), &EnvFilter::default(), None);
    assert!(hub.session_tools(None).await.tools.is_empty());
}

const ELICIT_TOOL: &str = "trigger-elicitation-request";

async fn connect() -> Arc<McpServer> {
    McpServer::connect("everything", &common::everything(), &EnvFilter::default())
        .await
        .unwrap()
}

/// A handler that records each request and answers with `answer`.
fn answering(answer: ElicitAnswer, seen: Arc<Mutex<Vec<Elicitation>>>) -> ElicitationHandler {
    Arc::new(move |request| {
        seen.lock().unwrap().push(request);
        let answer = answer.clone();
        Box::pin(async move { answer })
    })
}

#[tokio::test]
async fn the_elicitation_tool_is_offered_once_the_capability_is_declared() {
    let server = connect().await;
    let tool = server
        .tools()
        .iter()
        .find(|t| t.name == ELICIT_TOOL)
        .unwrap_or_else(|| {
            panic!(
                "server-everything offers {ELICIT_TOOL} only to clients that declare \
                 elicitation: {:?}",
                server.tools().iter().map(|t| &t.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(
        tool.exposed_name,
        "mcp__everything__trigger-elicitation-request"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_accepted_elicitation_returns_the_content_to_the_server() {
    let server = connect().await;
    let seen = Arc::default();
    let answer = ElicitAnswer {
        action: ElicitAction::Accept,
        content: Some(json!({"name": "Ada Lovelace", "check": true, "integer": 7})),
    };
    let result = server
        .call(
            CallRequest::new(ELICIT_TOOL, json!({}))
                .with_call_id("c1")
                .with_elicitation(answering(answer, Arc::clone(&seen))),
        )
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result
            .content
            .contains("User provided the requested information"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("- Name: Ada Lovelace"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("- Agreed to terms: true"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("- Favorite Integer: 7"),
        "{}",
        result.content
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].server, "everything");
    assert_eq!(
        seen[0].message,
        "Please provide inputs for the following fields:"
    );
    assert_eq!(seen[0].schema["type"], "object");
    assert_eq!(seen[0].schema["properties"]["name"]["type"], "string");
    assert_eq!(seen[0].schema["required"], json!(["name"]));
    server.shutdown().await;
}

#[tokio::test]
async fn declined_and_cancelled_elicitations_reach_the_server_as_such() {
    let server = connect().await;
    let cancel = CancellationToken::new();
    let seen = Arc::default();
    let declined = server
        .call(
            CallRequest::new(ELICIT_TOOL, json!({}))
                .with_call_id("c1")
                .with_cancel(cancel.clone())
                .with_elicitation(answering(ElicitAnswer::decline(), Arc::clone(&seen))),
        )
        .await;
    assert!(!declined.is_error, "{}", declined.content);
    assert!(
        declined
            .content
            .contains("User declined to provide the requested information"),
        "{}",
        declined.content
    );
    let cancelled = server
        .call(
            CallRequest::new(ELICIT_TOOL, json!({}))
                .with_call_id("c2")
                .with_cancel(cancel.clone())
                .with_elicitation(answering(ElicitAnswer::cancel(), Arc::clone(&seen))),
        )
        .await;
    assert!(
        cancelled
            .content
            .contains("User cancelled the elicitation dialog"),
        "{}",
        cancelled.content
    );
    assert_eq!(seen.lock().unwrap().len(), 2);
    // A call without a handler (nobody to ask) is declined.
    let headless = server
        .call(CallRequest::new(ELICIT_TOOL, json!({})).with_cancel(cancel.clone()))
        .await;
    assert!(
        headless.content.contains("User declined"),
        "{}",
        headless.content
    );
    server.shutdown().await;
}

/// A gate that runs every call and answers elicitations as told.
struct AnsweringGate {
    answer: ElicitAnswer,
    seen: Mutex<Vec<Elicitation>>,
}

impl PermissionGate for AnsweringGate {
    fn check<'a>(
        &'a self,
        _tool: &'a dyn Tool,
        _args: &'a Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, GateOutcome> {
        Box::pin(async { GateOutcome::Run { sandbox: None } })
    }

    fn elicit<'a>(
        &'a self,
        request: Elicitation,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ElicitAnswer> {
        self.seen.lock().unwrap().push(request);
        Box::pin(async { self.answer.clone() })
    }
}

#[tokio::test]
async fn the_tool_adapter_asks_the_context_gate_and_declines_without_one() {
    let server = connect().await;
    let tools = mcp_tools(&server);
    let elicit = tools
        .iter()
        .find(|t| t.spec().name == "mcp__everything__trigger-elicitation-request")
        .unwrap();

    let gate = Arc::new(AnsweringGate {
        answer: ElicitAnswer {
            action: ElicitAction::Accept,
            content: Some(json!({"name": "Grace Hopper"})),
        },
        seen: Mutex::default(),
    });
    let mut with_gate = ctx();
    with_gate.gate = Some(gate.clone());
    let accepted = elicit.call(json!({}), &with_gate).await;
    assert!(
        accepted.content.contains("- Name: Grace Hopper"),
        "{}",
        accepted.content
    );
    assert_eq!(gate.seen.lock().unwrap()[0].server, "everything");

    // No gate: nobody can answer, so the server hears "decline".
    let headless = elicit.call(json!({}), &ctx()).await;
    assert!(!headless.is_error, "{}", headless.content);
    assert!(
        headless
            .content
            .contains("User declined to provide the requested information"),
        "{}",
        headless.content
    );
    server.shutdown().await;
}

#[tokio::test]
async fn time_spent_waiting_for_the_user_does_not_count_against_tool_timeout_sec() {
    let mut config = common::everything();
    config.tool_timeout_sec = 1;
    let server = McpServer::connect("everything", &config, &EnvFilter::default())
        .await
        .unwrap();
    let slow: ElicitationHandler = Arc::new(|_request| {
        Box::pin(async {
            tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
            ElicitAnswer {
                action: ElicitAction::Accept,
                content: Some(json!({"name": "Slow Typist"})),
            }
        })
    });
    let result = server
        .call(
            CallRequest::new(ELICIT_TOOL, json!({}))
                .with_call_id("c1")
                .with_elicitation(slow),
        )
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result.content.contains("- Name: Slow Typist"),
        "{}",
        result.content
    );
    server.shutdown().await;
}

/// server-everything in streamable HTTP mode on a loopback port, killed on
/// drop.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_http_server() -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("node")
        .arg(common::server_js("server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = HttpServer { child, port };
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(15),
            "server-everything did not listen on 127.0.0.1:{port}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server
}

/// A handler that waits a little (so both calls are in flight) and
/// accepts with `name`.
fn named(name: &'static str) -> ElicitationHandler {
    Arc::new(move |_request| {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            ElicitAnswer {
                action: ElicitAction::Accept,
                content: Some(json!({ "name": name })),
            }
        })
    })
}

#[tokio::test]
async fn over_http_each_elicitation_reaches_the_call_it_belongs_to() {
    let http = start_http_server().await;
    let config = herald_mcp::McpServerConfig::http(format!("http://127.0.0.1:{}/mcp", http.port));
    let server = McpServer::connect("everything", &config, &EnvFilter::default())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    // Both calls are in flight when the server's requests arrive: the
    // most-recent-call fallback (all stdio can do) would send both to one
    // handler.
    let first = server.call(
        CallRequest::new(ELICIT_TOOL, json!({}))
            .with_call_id("c1")
            .with_cancel(cancel.clone())
            .with_elicitation(named("First Caller")),
    );
    let second = async {
        server
            .call(
                CallRequest::new(ELICIT_TOOL, json!({}))
                    .with_call_id("c2")
                    .with_cancel(cancel.clone())
                    .with_elicitation(named("Second Caller")),
            )
            .await
    };
    let (first, second) = tokio::join!(first, second);
    assert!(
        first.content.contains("- Name: First Caller"),
        "{}",
        first.content
    );
    assert!(
        second.content.contains("- Name: Second Caller"),
        "{}",
        second.content
    );
    server.shutdown().await;
}

/// server-everything's prompts are listed with their arguments and fill
/// in to the text of a user turn; bad commands get their error.
#[tokio::test]
async fn prompts_are_listed_and_filled_in() {
    let (hub, _) = session_tools().await;
    let prompts = hub.prompts().await;
    let commands: Vec<String> = prompts.iter().map(|p| p.command()).collect();
    assert!(
        commands.contains(&"ev:args-prompt".to_owned()),
        "{commands:?}"
    );
    assert!(
        commands.contains(&"ev:simple-prompt".to_owned()),
        "{commands:?}"
    );
    let weather = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    assert_eq!(weather.usage(), "CITY [STATE]");
    assert!(!weather.description.is_empty());

    let cancel = CancellationToken::new();
    let text = hub
        .prompt_text("ev:args-prompt", "Austin Texas", &cancel)
        .await
        .unwrap();
    assert_eq!(text, "What's weather in Austin, Texas?");
    let text = hub
        .prompt_text("ev:resource-prompt", "Text 1", &cancel)
        .await
        .unwrap();
    assert!(text.contains("demo://resource/dynamic/text/1"), "{text}");

    for (command, line, wanted) in [
        ("ev:args-prompt", "", "needs `city`"),
        ("ev:nope", "", "offers no prompt `nope`"),
        ("zz:args-prompt", "", "no MCP server `zz`"),
    ] {
        let err = hub.prompt_text(command, line, &cancel).await.unwrap_err();
        assert!(err.to_string().contains(wanted), "{command}: {err}");
    }
    hub.shutdown().await;
}
