//! End-of-session memory flushes that did not happen, run at a later start.
//!
//! A session is marked in the store as owing its end flush as soon as its
//! conversation qualifies (see [`crate::Agent::owes_end_flush`]), and the
//! mark is cleared only by a flush that is `done`. So a flush that timed
//! out, was skipped (Esc) or interrupted (Ctrl+C, a signal), or never ran
//! because the process was killed, is still owed when herald next starts
//! in the same home. The first session a process opens then starts, in
//! the background, the owed flushes of other sessions (newest first, a few
//! per start): each under that session's lease, so a session another live
//! process holds is never touched (nor the one being opened: this process
//! holds its lease, and its own end flush covers it); with the session's
//! stored system prompt, tool list and conversation, so the request is the
//! one its end flush would have sent; only `memory` runs. The outcome is a
//! `memory.flush` event with reason `deferred` in that session's stored
//! events and in the store's flush record; a flush that is not `done` stays
//! owed for a later start (at most [`herald_store::MAX_DEFERRED_ATTEMPTS`]
//! failed tries). The first prompt never waits for any of this; leaving
//! waits for it at most `[memory] flush_timeout_seconds`, then stops it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use herald_llm::LlmClient;
use herald_protocol::ToolSpec;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{
    Agent, AgentSetup, EventSink, FlushReason, FlushSettings, LeaseWait, Recorder, SessionLease,
    Settings, StoreHandle,
};

/// At most this many owed flushes run at one start (the most recently
/// marked first); the rest wait for later starts.
const PER_START: usize = 3;

/// The longest one deferred flush may take. Nobody waits for it, so it may
/// take longer than the end flush's `flush_timeout_seconds`.
const DEFERRED_LIMIT: Duration = Duration::from_secs(120);

/// How long a stopped flush gets to record that it was interrupted.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// One catch-up per process: `herald serve` opens many sessions.
static STARTED: AtomicBool = AtomicBool::new(false);

/// The deferred flushes running in the background.
pub(super) struct DeferredFlushes {
    task: JoinHandle<()>,
    cancel: CancellationToken,
}

impl DeferredFlushes {
    /// Waits up to `limit` for the flushes still running, then stops them:
    /// a stopped flush is recorded `interrupted` and stays owed.
    pub(super) async fn finish(self, limit: Duration) {
        let mut task = self.task;
        if tokio::time::timeout(limit, &mut task).await.is_ok() {
            return;
        }
        self.cancel.cancel();
        if tokio::time::timeout(STOP_GRACE, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// Starts the flushes other sessions of this home still owe, unless this
/// process started them already or the memory flush is off.
pub(super) fn start(
    settings: &Settings,
    store: &StoreHandle,
    client: &Arc<LlmClient>,
) -> Option<DeferredFlushes> {
    let memory = &settings.memory;
    if !memory.memory_enabled || memory.flush_min_turns == 0 {
        return None;
    }
    if STARTED.swap(true, Ordering::SeqCst) {
        return None;
    }
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run(
        settings.clone(),
        store.clone(),
        Arc::clone(client),
        cancel.clone(),
    ));
    Some(DeferredFlushes { task, cancel })
}

async fn run(
    settings: Settings,
    store: StoreHandle,
    client: Arc<LlmClient>,
    cancel: CancellationToken,
) {
    let due = match store.call(|s| s.due_flushes(PER_START)).await {
        Ok(Ok(due)) => due,
        Ok(Err(err)) => {
            tracing::warn!("could not list the memory flushes still owed: {err}");
            return;
        }
        Err(err) => {
            tracing::error!("{err}");
            return;
        }
    };
    for owed in due {
        if cancel.is_cancelled() {
            break;
        }
        let id = owed.session_id.clone();
        let lease = match SessionLease::acquire(&store, &id, LeaseWait::No, |_| {}).await {
            Ok(lease) => lease,
            Err(err) => {
                tracing::info!(session_id = %id, "deferred memory flush left for later: {err}");
                continue;
            }
        };
        if let Err(why) = flush(&settings, &store, &client, owed, &cancel).await {
            tracing::info!(session_id = %id, "deferred memory flush not run: {why}");
        }
        lease.release().await;
    }
}

/// Runs the owed flush of one session whose lease this process holds.
async fn flush(
    settings: &Settings,
    store: &StoreHandle,
    client: &Arc<LlmClient>,
    owed: herald_store::FlushState,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let id = owed.session_id;
    let record = {
        let id = id.clone();
        store
            .call(move |s| s.get_session(&id))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?
            .ok_or("the session is gone")?
    };
    if record.provider != settings.provider.as_str() {
        return Err(format!(
            "it ran on provider '{}' and this process uses '{}'; it waits for a start on its provider",
            record.provider,
            settings.provider.as_str()
        ));
    }
    if record.system_prompt.is_empty() {
        return Err("it has no stored system prompt".to_owned());
    }
    // The session's own model (the endpoint and settings are this process's).
    let client = if record.model.is_empty() || record.model == client.model() {
        Arc::clone(client)
    } else {
        Arc::new(
            LlmClient::new(herald_llm::ClientConfig {
                model: record.model.clone(),
                ..settings.client_config()
            })
            .map_err(|e| e.to_string())?,
        )
    };
    let memory = crate::memory_limits(&settings.memory);
    let tool = herald_knowledge::memory_tool(&settings.home, memory)
        .ok_or("both memory files are disabled")?;
    let mut registry = herald_tools::ToolRegistry::new(settings.output_limit_chars);
    registry.register(tool);
    let history = crate::restore_conversation(store, &id).await?;
    let last_seq = {
        let id = id.clone();
        store
            .call(move |s| s.last_tree_event_seq(&id))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?
    };
    let events = EventSink::new(&id, "root", |_| {}).recorded(
        store,
        &id,
        u64::try_from(last_seq).unwrap_or(0),
    );
    let cwd = PathBuf::from(&record.cwd);
    let mut agent = Agent::new(AgentSetup {
        client,
        registry: Arc::new(registry),
        system_prompt: record.system_prompt,
        history,
        cwd: if cwd.is_dir() {
            cwd
        } else {
            settings.cwd.clone()
        },
        max_iterations: 1,
        stream_deltas: false,
        events: events.clone(),
        recorder: Some(Recorder {
            store: store.clone(),
            session_id: id.clone(),
        }),
        budget: None,
        inbox: None,
        await_background: false,
    });
    // The tool list the session's requests carried: the same prefix.
    if let Ok(specs) = serde_json::from_str::<Vec<ToolSpec>>(&owed.tools)
        && !specs.is_empty()
    {
        agent.offer_tools(&specs);
    }
    agent.set_memory_flush(Some(FlushSettings {
        before_compaction: false,
        min_turns: settings.memory.flush_min_turns,
        user_profile: settings.memory.user_profile_enabled,
    }));
    let report = agent
        .flush_memory(
            FlushReason::Deferred,
            cancel,
            Some(Instant::now() + DEFERRED_LIMIT),
        )
        .await;
    tracing::info!(
        session_id = %id,
        status = %report.status,
        requests = report.requests,
        saved = report.saved,
        "deferred memory flush"
    );
    if let Some(summary) = agent.session_summary(Some(&report)) {
        let id = id.clone();
        match store.call(move |s| s.set_summary(&id, &summary)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!("could not store the session summary: {err}"),
            Err(err) => tracing::error!("{err}"),
        }
    }
    events.flush();
    Ok(())
}
