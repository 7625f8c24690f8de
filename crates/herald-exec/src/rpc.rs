//! The socket server: newline-delimited JSON requests
//! `{"id","tool","args","token"}` answered with `{"id","result"}` or
//! `{"id","error"}`. Every connection is served concurrently (the stubs keep
//! one connection per Python thread); requests on one connection are served
//! in order. Calls go through the agent's registry with the agent's state, so
//! validation, output limits and the terminal's directory are those of
//! normal calls.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use herald_protocol::ToolCall;
use herald_tools::{AgentState, CallObserver, NestedCall, ToolContext, ToolRegistry, ToolResult};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use crate::stubs::STRIPPED_ARGS;
use crate::token::Token;

/// Largest request line accepted (a `write_file` of a big file fits).
const MAX_REQUEST_BYTES: u64 = 16 * 1024 * 1024;

/// One request line as sent by the stubs.
#[derive(Debug, Deserialize)]
struct Request {
    #[serde(default)]
    id: Value,
    tool: Option<String>,
    #[serde(default)]
    args: Value,
    token: Option<String>,
}

/// Everything needed to answer requests of one run.
pub(crate) struct Dispatcher {
    registry: Arc<ToolRegistry>,
    state: Arc<AgentState>,
    cancel: CancellationToken,
    observer: Option<Arc<dyn CallObserver>>,
    /// The permission gate of the `execute_code` call: the script's calls
    /// meet the same checks as the model's.
    gate: Option<Arc<dyn herald_tools::PermissionGate>>,
    /// The sandbox of the `execute_code` call: without a gate (which
    /// decides per call) the script's calls run under it too, so a confined
    /// script cannot escape through `terminal`.
    sandbox: Option<Arc<herald_sandbox::SandboxPolicy>>,
    /// The interceptors of the `execute_code` call's agent: the script's
    /// calls pass the same hooks and learnings as the model's.
    interception: Option<Arc<herald_tools::Interception>>,
    parent_call_id: String,
    token: Token,
    allowed: Vec<String>,
    max_calls: u32,
    made: AtomicU32,
}

impl Dispatcher {
    /// Serves calls for the `execute_code` call running in `ctx`.
    pub(crate) fn new(
        ctx: &ToolContext,
        registry: Arc<ToolRegistry>,
        token: Token,
        allowed: Vec<String>,
        max_calls: u32,
    ) -> Self {
        Self {
            registry,
            state: Arc::clone(&ctx.state),
            cancel: ctx.cancel.clone(),
            observer: ctx.observer.clone(),
            gate: ctx.gate.clone(),
            sandbox: ctx.sandbox.clone(),
            interception: ctx.interception.clone(),
            parent_call_id: ctx.call_id.clone(),
            token,
            allowed,
            max_calls,
            made: AtomicU32::new(0),
        }
    }

    /// Calls dispatched to tools so far (refused ones not counted).
    pub(crate) fn calls_made(&self) -> u32 {
        self.made.load(Ordering::SeqCst)
    }

    /// Answers one request line; `false` closes the connection.
    async fn answer(&self, line: &[u8]) -> (Vec<u8>, bool) {
        let request: Request = match serde_json::from_slice(line) {
            Ok(request) => request,
            Err(err) => {
                let message = format!(
                    "malformed request ({err}); send one JSON object per line: {{\"id\", \"tool\", \"args\", \"token\"}}"
                );
                return (reply(&Value::Null, Err(&message)), false);
            }
        };
        if !request
            .token
            .as_deref()
            .is_some_and(|t| self.token.matches(t))
        {
            let message = "rejected: the request's token is missing or wrong; only the herald_tools module of this run may call tools";
            return (reply(&request.id, Err(message)), false);
        }
        let Some(tool) = request.tool.filter(|t| !t.is_empty()) else {
            let message = "the request names no tool; set \"tool\"";
            return (reply(&request.id, Err(message)), true);
        };
        let started = Instant::now();
        let (arguments, result) = self.dispatch(&tool, request.args).await;
        if let Some(observer) = &self.observer {
            observer.nested_call(&NestedCall {
                parent_call_id: &self.parent_call_id,
                name: &tool,
                arguments: &arguments,
                is_error: result.is_error,
                output_bytes: result.content.len() as u64,
                duration: started.elapsed(),
            });
        }
        let answer = if result.is_error {
            Err(result.content.as_str())
        } else {
            Ok(result.content.as_str())
        };
        (reply(&request.id, answer), true)
    }

    /// Checks and runs one call; returns the arguments as run and the result.
    async fn dispatch(&self, tool: &str, args: Value) -> (String, ToolResult) {
        if !self.allowed.iter().any(|a| a == tool) {
            let message = format!(
                "tool '{tool}' is not available in execute_code. Allowed here: {}. Call other tools as normal tool calls.",
                self.allowed.join(", ")
            );
            return (args.to_string(), ToolResult::error(message));
        }
        let mut args = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                let message = format!("args for {tool} must be a JSON object, not {other}");
                return (other.to_string(), ToolResult::error(message));
            }
        };
        for (name, arg) in STRIPPED_ARGS {
            if *name == tool {
                args.remove(*arg);
            }
        }
        let arguments = Value::Object(args).to_string();
        let counted = self
            .made
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_calls).then_some(n + 1)
            });
        let Ok(before) = counted else {
            let message = format!(
                "the limit of {} tool calls per execute_code run is reached; this call did not run. Do the remaining work in a new execute_code call or with normal tool calls",
                self.max_calls
            );
            return (arguments, ToolResult::error(message));
        };
        let call = ToolCall {
            id: format!("{}.{}", self.parent_call_id, before + 1),
            name: tool.to_owned(),
            arguments,
        };
        let mut ctx = ToolContext::new(Arc::clone(&self.state), self.cancel.clone())
            .with_call(&call.id, Arc::clone(&self.registry))
            .with_gate(self.gate.clone())
            .with_interception(self.interception.clone());
        ctx.sandbox = self.sandbox.clone();
        let result = self.registry.execute(&call, &ctx).await;
        (call.arguments, result)
    }
}

/// A response line.
fn reply(id: &Value, answer: Result<&str, &str>) -> Vec<u8> {
    let body = match answer {
        Ok(result) => json!({"id": id, "result": result}),
        Err(error) => json!({"id": id, "error": error}),
    };
    let mut line = body.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Accepts connections and serves them until dropped.
pub(crate) async fn serve(listener: &UnixListener, dispatcher: &Dispatcher) -> Infallible {
    let mut connections = FuturesUnordered::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => connections.push(connection(stream, dispatcher)),
                // Out of file descriptors and the like: let running calls
                // finish before trying again.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
            Some(()) = connections.next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves the requests of one connection in order.
async fn connection(stream: UnixStream, dispatcher: &Dispatcher) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::with_capacity(64 * 1024, read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_REQUEST_BYTES + 1)
            .read_until(b'\n', &mut line)
            .await;
        let (answer, keep_open) = match read {
            Ok(0) | Err(_) => return,
            Ok(n) if n as u64 > MAX_REQUEST_BYTES => {
                let message = format!(
                    "request larger than {} MiB; pass large data through files instead",
                    MAX_REQUEST_BYTES >> 20
                );
                (reply(&Value::Null, Err(&message)), false)
            }
            Ok(_) => dispatcher.answer(&line).await,
        };
        if write.write_all(&answer).await.is_err() || !keep_open {
            return;
        }
    }
}
