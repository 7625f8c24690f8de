//! `delegate`, `agent_status` and `agent_result`: agent turns running in
//! the background of the server, each known by an agent id for as long as
//! the server process lives (the session it ran in stays stored).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use herald_core::runtime::TurnResult;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::tools::{self, MAX_WAIT_SECONDS, ResultArgs, StatusArgs, TurnArgs};
use super::turn;
use crate::state::AppState;

/// Finished agents kept for `agent_result` beyond this many are forgotten,
/// oldest first.
const KEEP_FINISHED: usize = 256;

/// The delegated agents of one server.
#[derive(Default)]
pub(crate) struct Agents {
    records: Mutex<HashMap<String, Arc<Record>>>,
}

/// One delegated turn.
struct Record {
    id: String,
    session_id: String,
    started: Instant,
    live: Mutex<Live>,
    /// `None` while the turn runs.
    done: watch::Sender<Option<Finished>>,
}

/// What the agent has done so far.
#[derive(Default)]
struct Live {
    tool_calls: u32,
    last_tool: Option<String>,
}

/// How the turn ended.
#[derive(Clone)]
struct Finished {
    /// The turn's end, or why it has none (the session went away).
    result: Result<TurnResult, String>,
    elapsed: Duration,
}

impl Agents {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Record>>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, id: &str) -> Option<Arc<Record>> {
        self.lock().get(id.trim()).cloned()
    }

    fn insert(&self, record: Arc<Record>) {
        let mut records = self.lock();
        records.insert(record.id.clone(), record);
        let mut finished: Vec<(Instant, String)> = records
            .values()
            .filter(|r| r.done.borrow().is_some())
            .map(|r| (r.started, r.id.clone()))
            .collect();
        if finished.len() > KEEP_FINISHED {
            finished.sort();
            let excess = finished.len() - KEEP_FINISHED;
            for (_, id) in finished.into_iter().take(excess) {
                records.remove(&id);
            }
        }
    }

    /// `delegate`: starts the turn and answers with its agent id at once.
    pub(crate) async fn delegate(
        &self,
        state: &AppState,
        tool: &Tool,
        arguments: Option<JsonObject>,
    ) -> CallToolResult {
        let args: TurnArgs = match tools::parse(tool, arguments) {
            Ok(args) => args,
            Err(message) => return turn::error(message),
        };
        let turn::Started {
            session,
            mut events,
            turn,
        } = match turn::start(state, args).await {
            Ok(started) => started,
            Err(message) => return turn::error(message),
        };
        let session_id = session.id().to_owned();
        let (done, _) = watch::channel(None);
        let record = Arc::new(Record {
            id: format!("mcpagent_{:016x}", fastrand::u64(..)),
            session_id: session_id.clone(),
            started: Instant::now(),
            live: Mutex::new(Live::default()),
            done,
        });
        self.insert(Arc::clone(&record));
        let follower = Arc::clone(&record);
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                if turn::is_end(&event, &follower.session_id) {
                    break;
                }
                if let Some(tool) = turn::root_tool(&event, &follower.session_id) {
                    let mut live = follower.live.lock().unwrap_or_else(PoisonError::into_inner);
                    live.tool_calls += 1;
                    live.last_tool = Some(tool.to_owned());
                }
            }
            let result = turn
                .finished(&follower.session_id)
                .await
                .map_err(|err| err.message);
            follower.done.send_replace(Some(Finished {
                result,
                elapsed: follower.started.elapsed(),
            }));
        });
        let structured = json!({
            "agent_id": record.id,
            "session_id": session_id,
            "status": "running",
        });
        let text = format!(
            "started agent {} in session {session_id}; call agent_status to see how it does and agent_result (with wait) for its answer",
            record.id
        );
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(structured);
        result
    }

    /// `agent_status`: running or how it ended, with what it did so far.
    pub(crate) fn status(&self, tool: &Tool, arguments: Option<JsonObject>) -> CallToolResult {
        let args: StatusArgs = match tools::parse(tool, arguments) {
            Ok(args) => args,
            Err(message) => return turn::error(message),
        };
        match self.get(&args.agent_id) {
            Some(record) => {
                let (report, _) = record.report();
                let text = report.to_string();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(report);
                result
            }
            None => unknown(&args.agent_id),
        }
    }

    /// `agent_result`: the answer, after waiting up to `wait` seconds for
    /// the agent to finish (a cancelled request stops waiting).
    pub(crate) async fn result(
        &self,
        tool: &Tool,
        arguments: Option<JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let args: ResultArgs = match tools::parse(tool, arguments) {
            Ok(args) => args,
            Err(message) => return turn::error(message),
        };
        let wait = args.wait.unwrap_or(0.0);
        if !(0.0..=MAX_WAIT_SECONDS).contains(&wait) {
            return turn::error(format!(
                "wait must be between 0 and {MAX_WAIT_SECONDS} seconds; got {wait}"
            ));
        }
        let Some(record) = self.get(&args.agent_id) else {
            return unknown(&args.agent_id);
        };
        if wait > 0.0 {
            let mut done = record.done.subscribe();
            let finished = done.wait_for(Option::is_some);
            tokio::select! {
                _ = tokio::time::timeout(Duration::from_secs_f64(wait), finished) => {}
                () = context.ct.cancelled() => {}
            }
        }
        let (report, finished) = record.report();
        let text = match finished {
            None => format!(
                "agent {} is still running ({} tool calls so far); call agent_result again, with wait to block until it finishes",
                record.id,
                record.live().0
            ),
            Some(Finished { result: Ok(r), .. })
                if r.status == herald_protocol::RunStatus::Completed =>
            {
                r.final_response
            }
            Some(Finished { result: Ok(r), .. }) => format!(
                "agent {} ended {}: {}",
                record.id,
                turn::status_name(r.status),
                r.error.unwrap_or_else(|| r.exit_reason.as_str().to_owned())
            ),
            Some(Finished {
                result: Err(why), ..
            }) => {
                format!("agent {} ended without an answer: {why}", record.id)
            }
        };
        let failed = report["status"] == "failed" || report["status"] == "interrupted";
        let mut result = if failed {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(report);
        result
    }
}

impl Record {
    /// Tool calls so far and the last tool.
    fn live(&self) -> (u32, Option<String>) {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        (live.tool_calls, live.last_tool.clone())
    }

    /// The agent as `agent_status` / `agent_result` report it, and its
    /// end (both of the same moment).
    fn report(&self) -> (Value, Option<Finished>) {
        let finished = self.done.borrow().clone();
        let (tool_calls, last_tool) = self.live();
        let mut out = json!({
            "agent_id": self.id,
            "session_id": self.session_id,
            "tool_calls": tool_calls,
        });
        if let Some(tool) = last_tool {
            out["last_tool"] = json!(tool);
        }
        match &finished {
            None => {
                out["status"] = json!("running");
                out["elapsed_seconds"] = json!(self.started.elapsed().as_secs_f64());
            }
            Some(finished) => {
                out["elapsed_seconds"] = json!(finished.elapsed.as_secs_f64());
                match &finished.result {
                    Ok(result) => {
                        out["status"] = json!(turn::status_name(result.status));
                        out["exit_reason"] = json!(result.exit_reason.as_str());
                        out["answer"] = json!(result.final_response);
                        if let Some(error) = &result.error {
                            out["error"] = json!(error);
                        }
                    }
                    Err(why) => {
                        out["status"] = json!("failed");
                        out["error"] = json!(why);
                    }
                }
            }
        }
        (out, finished)
    }
}

fn unknown(id: &str) -> CallToolResult {
    turn::error(format!(
        "no delegated agent '{id}' in this server; use the agent_id delegate returned (agents are known while the server runs; their sessions stay stored, see session_search)"
    ))
}
