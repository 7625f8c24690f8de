//! The tools herald offers MCP clients: their names, descriptions, input
//! and output schemas, and the typed arguments each call is read into.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// `run`: one agent turn, answered when it ends.
pub(crate) const RUN: &str = "run";
/// `delegate`: one agent turn in the background.
pub(crate) const DELEGATE: &str = "delegate";
/// `agent_status`: how a delegated turn is doing.
pub(crate) const AGENT_STATUS: &str = "agent_status";
/// `agent_result`: a delegated turn's answer (optionally waiting for it).
pub(crate) const AGENT_RESULT: &str = "agent_result";
/// `session_search`: full-text search over stored sessions.
pub(crate) const SESSION_SEARCH: &str = "session_search";

/// The longest `wait` of `agent_result`, in seconds.
pub(crate) const MAX_WAIT_SECONDS: f64 = 600.0;

/// Arguments of `run` and `delegate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TurnArgs {
    pub(crate) prompt: String,
    #[serde(default)]
    pub(crate) session_id: Option<String>,
    #[serde(default)]
    pub(crate) toolsets: Option<Vec<String>>,
}

/// Arguments of `agent_status`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusArgs {
    pub(crate) agent_id: String,
}

/// Arguments of `agent_result`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResultArgs {
    pub(crate) agent_id: String,
    /// Seconds to wait for the agent to finish (0: answer at once).
    #[serde(default)]
    pub(crate) wait: Option<f64>,
}

/// Reads a call's arguments into `T`; the error names what `tool` takes.
pub(crate) fn parse<T: DeserializeOwned>(
    tool: &Tool,
    arguments: Option<JsonObject>,
) -> Result<T, String> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|err| {
        let schema = Value::Object((*tool.input_schema).clone());
        format!(
            "invalid arguments for {}: {err}; the input schema is {schema}",
            tool.name
        )
    })
}

/// Every tool herald offers, built once per server.
#[derive(Debug, Clone)]
pub(crate) struct Catalog {
    tools: Vec<Tool>,
}

impl Catalog {
    /// The tools, with `search_schema` as session_search's input schema
    /// (herald's own tool's).
    pub(crate) fn new(search_schema: Value) -> Self {
        Self {
            tools: vec![
                run(),
                delegate(),
                agent_status(),
                agent_result(),
                session_search(search_schema),
            ],
        }
    }

    /// Every tool, in the order `tools/list` answers.
    pub(crate) fn all(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`, if herald has one.
    pub(crate) fn find(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn turn_input(prompt: &str) -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": prompt},
            "session_id": {
                "type": "string",
                "description": "Continue this herald session (the session_id an earlier call returned); omit to start a new session."
            },
            "toolsets": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Toolsets of a new session, e.g. [\"file\", \"terminal\"] (default: the server's). Only with a new session."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    }))
}

fn run() -> Tool {
    Tool::new(
        RUN,
        "Run herald's agent on a task and return its final answer. herald works in the server's working directory with its own tools (files, terminal, search, subagents) under the permission mode the server was started with, and decides questions itself. Returns the answer and the session_id; pass session_id to continue the same conversation. For work that may outlast the client's tool timeout, use delegate.",
        turn_input("The task or question for herald's agent."),
    )
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The agent's final answer."},
            "session_id": {"type": "string", "description": "The herald session; pass it to run or delegate to continue."},
            "status": {"type": "string", "enum": ["completed", "failed", "interrupted"]},
            "exit_reason": {"type": "string", "description": "completed, max_iterations, interrupted, error or budget."},
            "iterations": {"type": "integer"},
            "usage": {
                "type": "object",
                "properties": {
                    "input_tokens": {"type": "integer"},
                    "output_tokens": {"type": "integer"},
                    "cached_tokens": {"type": "integer"}
                }
            }
        },
        "required": ["answer", "session_id", "status", "exit_reason"]
    })))
    .with_annotations(
        ToolAnnotations::with_title("Run herald")
            .read_only(false)
            .destructive(true)
            .open_world(true),
    )
}

fn delegate() -> Tool {
    Tool::new(
        DELEGATE,
        "Start herald's agent on a task in the background and return at once with an agent_id. Poll it with agent_status and fetch the answer with agent_result (which can wait for it). Same arguments as run.",
        turn_input("The task for herald's agent."),
    )
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "agent_id": {"type": "string"},
            "session_id": {"type": "string"},
            "status": {"type": "string"}
        },
        "required": ["agent_id", "session_id", "status"]
    })))
    .with_annotations(
        ToolAnnotations::with_title("Delegate to herald")
            .read_only(false)
            .destructive(true)
            .open_world(true),
    )
}

fn agent_output() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "agent_id": {"type": "string"},
            "session_id": {"type": "string"},
            "status": {"type": "string", "enum": ["running", "completed", "failed", "interrupted"]},
            "exit_reason": {"type": "string"},
            "answer": {"type": "string", "description": "The final answer, once the agent finished."},
            "error": {"type": "string"},
            "tool_calls": {"type": "integer", "description": "Tool calls made so far."},
            "last_tool": {"type": "string"},
            "elapsed_seconds": {"type": "number"}
        },
        "required": ["agent_id", "session_id", "status"]
    }))
}

fn agent_status() -> Tool {
    Tool::new(
        AGENT_STATUS,
        "How a delegated agent is doing: running or how it ended, tool calls so far, the last tool, elapsed time.",
        object(json!({
            "type": "object",
            "properties": {
                "agent_id": {"type": "string", "description": "The agent_id delegate returned."}
            },
            "required": ["agent_id"],
            "additionalProperties": false
        })),
    )
    .with_raw_output_schema(agent_output())
    .with_annotations(
        ToolAnnotations::with_title("Delegated agent status")
            .read_only(true)
            .open_world(false),
    )
}

fn agent_result() -> Tool {
    Tool::new(
        AGENT_RESULT,
        "The final answer of a delegated agent. With wait, waits up to that many seconds for it to finish; a status of running means it has not finished yet (call again).",
        object(json!({
            "type": "object",
            "properties": {
                "agent_id": {"type": "string", "description": "The agent_id delegate returned."},
                "wait": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": MAX_WAIT_SECONDS,
                    "description": "Seconds to wait for the agent to finish (default 0: answer at once)."
                }
            },
            "required": ["agent_id"],
            "additionalProperties": false
        })),
    )
    .with_raw_output_schema(agent_output())
    .with_annotations(
        ToolAnnotations::with_title("Delegated agent result")
            .read_only(true)
            .open_world(false),
    )
}

fn session_search(schema: Value) -> Tool {
    Tool::new(
        SESSION_SEARCH,
        "Full-text search over herald's stored sessions. With query: the best-matching sessions with the matched message and its neighbours. With session_id: that session's start and end; add around_message_id to scroll. With nothing: recent sessions.",
        object(schema),
    )
    .with_annotations(
        ToolAnnotations::with_title("Search herald sessions")
            .read_only(true)
            .open_world(false),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog::new(json!({"type": "object", "properties": {"query": {"type": "string"}}}))
    }

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        let catalog = catalog();
        let names: Vec<&str> = catalog.all().iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [RUN, DELEGATE, AGENT_STATUS, AGENT_RESULT, SESSION_SEARCH]
        );
        for tool in catalog.all() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 20));
        }
        assert_eq!(
            catalog.find(RUN).unwrap().input_schema["required"],
            json!(["prompt"])
        );
        assert!(catalog.find("nope").is_none());
    }

    #[test]
    fn arguments_are_checked() {
        let catalog = catalog();
        let run = catalog.find(RUN).unwrap();
        let args: TurnArgs = parse(run, json!({"prompt": "hi"}).as_object().cloned()).unwrap();
        assert_eq!(args.prompt, "hi");
        assert!(args.session_id.is_none());
        let err = parse::<TurnArgs>(run, json!({"prompt": "hi", "x": 1}).as_object().cloned())
            .unwrap_err();
        assert!(err.contains("unknown field `x`"), "{err}");
        assert!(err.contains("\"prompt\""), "{err}");
        let err = parse::<TurnArgs>(run, None).unwrap_err();
        assert!(err.contains("missing field `prompt`"), "{err}");
    }
}
