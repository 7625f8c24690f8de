//! The task that owns a session's agent: runs the queued operations —
//! turns, compactions, rewinds and the end — one at a time, in the order
//! they were submitted, each stamping its id on the events it causes.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use herald_protocol::{EventKind, Op, RunStatus, SubmissionId};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Shared, TurnResult};
use crate::{Agent, CompressionReport, ExitReason, SessionLease};

/// How long stopping background agents may take when a session ends.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// An operation waiting for the agent's task.
pub(super) struct Queued {
    pub id: SubmissionId,
    /// `UserTurn`, `Compact`, `Rewind` or `Shutdown`: the others act at once.
    pub op: Op,
    /// What stops a turn (made when it was submitted, so an interrupt
    /// reaches a turn still waiting in the queue).
    pub cancel: Option<CancellationToken>,
    pub reply: oneshot::Sender<Reply>,
}

/// What a queued operation came to, for a helper waiting on it.
pub(super) enum Reply {
    Turn(TurnResult),
    Compacted(Result<CompressionReport, String>),
    Rewound(Result<Box<crate::checkpoints::RewindOutcome>, String>),
    /// The session ended; this many background agents were suspended.
    Ended(usize),
}

/// Runs `agent` on the operations queued for it until the session ends.
pub(super) async fn drive(
    mut agent: Agent,
    shared: Arc<Shared>,
    mut queue: mpsc::UnboundedReceiver<Queued>,
    lease: SessionLease,
    mut checkpoints: crate::checkpoints::Checkpointer,
) {
    // Whether the session was given anything to do: one left before its
    // first turn may leave nothing behind (see `discard_unused`).
    let mut used = false;
    loop {
        let Some(Queued {
            id,
            op,
            cancel,
            reply,
        }) = queue.recv().await
        else {
            // Every handle is gone: end as if asked to (nobody waits for a
            // memory flush).
            end_session(&mut agent, &shared, lease, "exit", used, false).await;
            return;
        };
        shared.stamp.set(Some(id));
        match op {
            Op::UserTurn { text, images } => {
                used = true;
                let cancel = cancel.unwrap_or_else(|| shared.cancel.child_token());
                checkpoints.before_turn(agent.events()).await;
                let result = run_turn(
                    &mut agent,
                    &shared,
                    (text, images),
                    &cancel,
                    &mut checkpoints,
                )
                .await;
                if shared.one_shot {
                    checkpoints.after_turn().await;
                    // An interrupted run leaves at once (the turn's token
                    // is cancelled at every one-shot end: it stops the tree).
                    let interrupted = result.exit_reason == ExitReason::Interrupted;
                    finish_deferred(&shared, !interrupted).await;
                    let reason = result.exit_reason.as_str();
                    close_live(&shared);
                    stop_mcp(&shared).await;
                    close_browser(&shared).await;
                    record_end(&shared, reason).await;
                    // Before the lease goes (see `ProcessTable::kill_all`).
                    agent.state().processes.kill_all();
                    lease.release().await;
                    queue.close();
                    let _ = reply.send(Reply::Turn(result));
                    drain_refusing(&mut queue);
                    return;
                }
                let _ = reply.send(Reply::Turn(result));
                // What the turn changed; the next operation waits for it.
                checkpoints.after_turn().await;
            }
            Op::Compact {} => {
                let report = compact(&mut agent, &shared).await;
                if let Err(message) = &report {
                    agent.events().emit(EventKind::Error {
                        message: format!("not compacted: {message}"),
                        fatal: false,
                    });
                }
                let _ = reply.send(Reply::Compacted(report));
            }
            Op::Rewind { turn, scope } => {
                let outcome = rewind(&mut agent, &shared, &mut checkpoints, turn, scope).await;
                match &outcome {
                    Ok(outcome) => agent.events().emit(outcome.event(scope)),
                    Err(message) => agent.events().emit(EventKind::Error {
                        message: format!("not rewound: {message}"),
                        fatal: false,
                    }),
                }
                let _ = reply.send(Reply::Rewound(outcome.map(Box::new)));
            }
            Op::Shutdown { skip_memory_flush } => {
                let suspended =
                    end_session(&mut agent, &shared, lease, "exit", used, !skip_memory_flush).await;
                // Refuses what comes next before the caller hears of the end.
                queue.close();
                let _ = reply.send(Reply::Ended(suspended));
                drain_refusing(&mut queue);
                return;
            }
            // Acted on when submitted; never queued.
            Op::Interrupt {}
            | Op::Steer { .. }
            | Op::CancelAgent { .. }
            | Op::AgentSend { .. }
            | Op::AgentFollowup { .. }
            | Op::ClarifyAnswer { .. }
            | Op::ApprovalDecision { .. }
            | Op::ElicitationAnswer { .. } => {}
        }
        shared.stamp.set(None);
    }
}

/// Compacts the conversation now, interruptible like a turn.
async fn compact(agent: &mut Agent, shared: &Shared) -> Result<CompressionReport, String> {
    let cancel = {
        let mut turn = shared.turn.lock().unwrap_or_else(PoisonError::into_inner);
        if turn.is_some() {
            return Err(format!(
                "a turn is running in session {}; compact after it ends",
                shared.session_id
            ));
        }
        let cancel = shared.cancel.child_token();
        *turn = Some(cancel.clone());
        cancel
    };
    let report = agent.compress_now(&cancel).await;
    *shared.turn.lock().unwrap_or_else(PoisonError::into_inner) = None;
    report.map_err(|err| err.to_string())
}

/// Rewinds the open session to before its user turn `turn` (see
/// [`crate::checkpoints`]); the agent continues from the rewound history.
async fn rewind(
    agent: &mut Agent,
    shared: &Shared,
    checkpoints: &mut crate::checkpoints::Checkpointer,
    turn: u32,
    scope: herald_protocol::RewindScope,
) -> Result<crate::checkpoints::RewindOutcome, String> {
    let plan = crate::checkpoints::plan_rewind(
        &shared.store,
        checkpoints.home(),
        &shared.session_id,
        turn,
        scope,
    )
    .await
    .map_err(|err| err.to_string())?;
    // Restoring files is the session's own change, not an outside one.
    let own_changes = match agent.file_watch() {
        Some(watch) => Some(watch.own_changes().await),
        None => None,
    };
    let outcome = crate::checkpoints::apply_rewind(&shared.store, plan).await;
    if let Some(own_changes) = own_changes {
        own_changes.end().await;
    }
    let outcome = outcome.map_err(|err| err.to_string())?;
    if let Some(history) = &outcome.history {
        agent.replace_history(history.clone());
        checkpoints.rewound_to(turn);
    }
    tracing::info!(session_id = %shared.session_id, turn, ?scope, "session rewound");
    Ok(outcome)
}

/// Whether a background process the root agent started still runs (it may
/// change files while the turn runs, outside any tool call).
fn background_processes_run(agent: &Agent) -> bool {
    agent
        .state()
        .processes
        .list()
        .iter()
        .any(|p| p.exit().is_none())
}

/// Runs one turn of the person's text and images and reports it with
/// `run.completed` (the stream's last event in a one-shot session, after
/// every subagent stopped).
async fn run_turn(
    agent: &mut Agent,
    shared: &Shared,
    (text, images): (String, Vec<herald_protocol::ImageData>),
    cancel: &CancellationToken,
    checkpoints: &mut crate::checkpoints::Checkpointer,
) -> TurnResult {
    let one_shot = shared.one_shot;
    let started = Instant::now();
    // Readings before the turn: the turn's usage is what they grow by.
    let own_before = agent.meter().own();
    let tree_before = agent.meter().tree();
    if let Some(hub) = &shared.own_mcp {
        // A one-shot run defers its servers to here (see `open_session`).
        hub.release();
    }
    if agent.hooks().is_some() || background_processes_run(agent) {
        // A hook command, or a background process, may change files
        // outside any tool call: the snapshot comes first.
        checkpoints.snapshot_now().await;
    }
    let mut title = None;
    let outcome = match prompt_through_hooks(agent, text.clone()).await {
        Ok(prompt) => {
            // A new session's first prompt (hooks let it through) is named
            // beside the turn; the turn does not wait for it.
            title = start_title(agent, shared, text, cancel);
            let outcome = agent.run_turn_with_images(prompt, images, cancel).await;
            mark_owed_flush(agent, shared);
            outcome
        }
        Err(reason) => blocked_turn(agent, reason),
    };
    // The snapshot before the turn (and its warning) ends before run.completed.
    checkpoints.settle().await;
    // The title request made beside the turn (bounded; before the end of a
    // one-shot run stops everything).
    if let Some(title) = title {
        title.finish(agent, shared).await;
    }
    let status = match outcome.exit_reason {
        ExitReason::Completed | ExitReason::MaxIterations => RunStatus::Completed,
        ExitReason::Interrupted => RunStatus::Interrupted,
        ExitReason::Error | ExitReason::Budget | ExitReason::Timeout => RunStatus::Failed,
    };
    if one_shot {
        // The session ends with this turn: the memory flush (a finished
        // turn only; a signal cancels `cancel` and ends it) and the summary.
        let flush = matches!(
            outcome.exit_reason,
            ExitReason::Completed | ExitReason::MaxIterations
        ) && !cancel.is_cancelled();
        super::end_flush::flush_and_summarise(agent, shared, cancel, flush).await;
        // Background agents still running (after an interrupt, a failure or
        // the iteration limit) are stopped and given a moment to record that
        // they were interrupted, before run.completed: it is the last event.
        shared.cancel.cancel();
        shared.delegation.settle(SETTLE_LIMIT).await;
    }
    if let Some(error) = &outcome.error {
        tracing::error!(session_id = %shared.session_id, reason = outcome.exit_reason.as_str(), "turn failed: {error}");
    }
    // Every request of the turn, compaction, memory flush and title included.
    let own_usage = agent.meter().own().since(&own_before).totals();
    let tree_usage = agent.meter().tree().since(&tree_before).totals();
    let result = TurnResult {
        status,
        exit_reason: outcome.exit_reason,
        final_response: outcome.final_response,
        iterations: outcome.iterations,
        usage: own_usage.tokens(),
        cost_usd: own_usage.cost_usd,
        tree_usage,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        error: outcome.error,
    };
    tracing::info!(
        session_id = %shared.session_id,
        reason = result.exit_reason.as_str(),
        iterations = result.iterations,
        duration_ms = result.duration_ms,
        "turn finished"
    );
    if one_shot {
        finish_file_hooks(agent, shared).await;
    }
    if let Some(hooks) = agent.hooks() {
        let status = match result.status {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        };
        hooks
            .turn_done(status, result.exit_reason.as_str(), &result.final_response)
            .await;
        if one_shot {
            // The session ends with this turn; run.completed stays last.
            hooks.session_end(result.exit_reason.as_str()).await;
        }
    }
    let event = EventKind::RunCompleted {
        status: result.status,
        exit_reason: result.exit_reason,
        final_response: result.final_response.clone(),
        iterations: result.iterations,
        usage: own_usage,
        cost_usd: result.cost_usd,
        tree_usage: result.tree_usage,
        duration_ms: result.duration_ms,
        error: result.error.clone(),
    };
    // A front end that reads run.completed may submit the next turn at once.
    *shared.turn.lock().unwrap_or_else(PoisonError::into_inner) = None;
    if one_shot {
        // Closes the output: whatever a background agent that did not stop
        // in time emits later is neither passed on nor stored.
        agent.events().finish(event);
    } else {
        agent.events().emit(event);
    }
    result
}

/// Starts the title request when `[sessions] title_model` is set and this
/// is the first turn of a session without history.
fn start_title(
    agent: &Agent,
    shared: &Shared,
    prompt: String,
    cancel: &CancellationToken,
) -> Option<super::title::PendingTitle> {
    if !agent.messages().is_empty() {
        return None;
    }
    let client = shared
        .title_client
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()?;
    Some(super::title::start(client, prompt, cancel.clone()))
}

/// The prompt as the `user_prompt` hooks leave it (context appended), or
/// why one blocked it.
async fn prompt_through_hooks(agent: &Agent, text: String) -> Result<String, String> {
    match agent.hooks() {
        Some(hooks) => hooks.user_prompt(text).await,
        None => Ok(text),
    }
}

/// The outcome of a turn whose prompt a hook blocked: nothing was sent,
/// the user is told why.
fn blocked_turn(agent: &Agent, reason: String) -> crate::TurnOutcome {
    agent.events().emit(EventKind::Error {
        message: reason.clone(),
        fatal: true,
    });
    crate::TurnOutcome {
        exit_reason: ExitReason::Error,
        final_response: String::new(),
        iterations: 0,
        usage: herald_protocol::Usage::default(),
        cost_usd: Some(0.0),
        error: Some(reason),
        error_kind: None,
    }
}

/// Runs the memory flush (with `flush`, after a turn in this process) and
/// stores the summary, suspends the background agents (a resume restarts
/// them), records the end (or discards a session that was never `used`,
/// see [`discard_unused`]) and releases the lease. Returns how many agents
/// were suspended.
async fn end_session(
    agent: &mut Agent,
    shared: &Shared,
    lease: SessionLease,
    reason: &str,
    used: bool,
    flush: bool,
) -> usize {
    if used {
        // Interruptible like a turn: `Session::interrupt` cancels it.
        let cancel = shared.cancel.child_token();
        *shared.turn.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
        super::end_flush::flush_and_summarise(agent, shared, &cancel, flush).await;
        *shared.turn.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
    finish_deferred(shared, flush).await;
    let suspended = shared.delegation.suspend(SETTLE_LIMIT).await;
    finish_file_hooks(agent, shared).await;
    if let Some(hooks) = agent.hooks() {
        hooks.session_end(reason).await;
    }
    tracing::info!(session_id = %shared.session_id, suspended, "session ended");
    close_live(shared);
    stop_mcp(shared).await;
    close_browser(shared).await;
    // Queued events are written before the end is recorded.
    agent.events().flush();
    if used || !discard_unused(shared).await {
        record_end(shared, reason).await;
    }
    // Before the lease goes: a `kill -9` until it is released leaves the
    // stale lease that makes the next start end what this run started.
    agent.state().processes.kill_all();
    lease.release().await;
    suspended
}

/// Lets the `file_changed` hooks already started finish (at most
/// [`SETTLE_LIMIT`]) before the session ends; no new ones start.
async fn finish_file_hooks(agent: &Agent, shared: &Shared) {
    if let Some(watch) = agent.file_watch() {
        watch.close_listener();
    }
    let task = shared
        .file_hooks
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(task) = task
        && tokio::time::timeout(SETTLE_LIMIT, task).await.is_err()
    {
        tracing::warn!(session_id = %shared.session_id, "file_changed hooks still ran when the session ended");
    }
}

/// Marks the session in the store as owing its end-of-session memory
/// flush once its conversation qualifies (see [`Agent::owes_end_flush`]):
/// before the flush runs, so a flush that does not finish, or a process
/// killed before it, leaves it owed for a later start. The mark carries the
/// tool list the requests carry, so the deferred flush sends the same
/// prefix.
fn mark_owed_flush(agent: &Agent, shared: &Shared) {
    if !agent.owes_end_flush() {
        return;
    }
    let tools = match serde_json::to_string(&agent.registry().specs()) {
        Ok(tools) => tools,
        Err(err) => {
            tracing::warn!(session_id = %shared.session_id, "could not encode the tool list: {err}");
            "[]".to_owned()
        }
    };
    let id = shared.session_id.clone();
    shared.store.send(move |s| {
        if let Err(err) = s.mark_flush_due(&id, &tools) {
            tracing::warn!(session_id = %id, "could not mark the memory flush as owed: {err}");
        }
    });
}

/// Waits for the deferred flushes this session started (at most
/// `[memory] flush_timeout_seconds`; not at all when the end should not
/// wait), then stops what still runs.
async fn finish_deferred(shared: &Shared, wait: bool) {
    let deferred = shared
        .deferred
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(deferred) = deferred {
        let limit = if wait {
            shared.flush_timeout
        } else {
            Duration::ZERO
        };
        deferred.finish(limit).await;
    }
}

/// Deletes the session (with its events) when a person opened it at the
/// terminal and left before a single prompt: a launch that did nothing
/// leaves no empty session in `herald sessions list`. Only a new session
/// without messages goes; a resumed one, a fork (it holds its copy) and a
/// session of the HTTP API (its client was handed the id) are kept.
/// Returns whether it was deleted.
async fn discard_unused(shared: &Shared) -> bool {
    if shared.resumed {
        return false;
    }
    let id = shared.session_id.clone();
    let deleted = shared
        .store
        .call(move |s| -> Result<bool, herald_store::StoreError> {
            match s.get_session(&id)? {
                Some(record)
                    if record.source == herald_store::SessionSource::Cli
                        && record.message_count == 0
                        && record.parent_session_id.is_none() =>
                {
                    s.delete_session(&id)
                }
                _ => Ok(false),
            }
        })
        .await;
    match deleted {
        Ok(Ok(deleted)) => {
            if deleted {
                tracing::info!(session_id = %shared.session_id, "session left before its first prompt: not kept");
            }
            deleted
        }
        Ok(Err(err)) => {
            tracing::warn!(session_id = %shared.session_id, "could not discard the unused session: {err}");
            false
        }
        Err(err) => {
            tracing::error!(session_id = %shared.session_id, "{err}");
            false
        }
    }
}

/// Stops the MCP servers the session started (a shared hub is its
/// owner's to stop).
async fn stop_mcp(shared: &Shared) {
    if let Some(hub) = &shared.own_mcp {
        hub.shutdown().await;
    }
}

/// Closes the session tree's browser, if one was started.
async fn close_browser(shared: &Shared) {
    if let Some(browser) = &shared.browser {
        browser.close().await;
    }
}

/// No new follower can subscribe; current ones end once every event sink
/// of the session is gone.
fn close_live(shared: &Shared) {
    shared.fanout.close();
}

async fn record_end(shared: &Shared, reason: &str) {
    let id = shared.session_id.clone();
    let reason = reason.to_owned();
    // Awaited: the store thread has also written every queued event by then.
    match shared
        .store
        .call(move |s| s.end_session(&id, &reason))
        .await
    {
        Ok(Ok(_)) => {}
        Ok(Err(err)) => {
            tracing::warn!(session_id = %shared.session_id, "could not record the end of the session: {err}")
        }
        Err(err) => tracing::error!(session_id = %shared.session_id, "{err}"),
    }
}

/// Answers what was queued behind the end: every helper waiting on an
/// operation hears that the session is gone.
fn drain_refusing(queue: &mut mpsc::UnboundedReceiver<Queued>) {
    queue.close();
    while let Ok(queued) = queue.try_recv() {
        drop(queued.reply);
    }
}
