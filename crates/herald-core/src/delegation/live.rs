//! The in-process view of every subagent of a session tree: identity, cancel
//! token, live progress (API calls, tokens, current tool, last activity) and,
//! once finished, its result. The lifecycle tools read this; the store holds
//! the durable copy.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use herald_protocol::TokenTotals;
use tokio_util::sync::CancellationToken;

use super::result::ChildResult;

/// Live counters a running child updates from its events.
#[derive(Debug)]
pub struct Progress {
    started: Instant,
    api_calls: AtomicU32,
    tokens: Mutex<TokenTotals>,
    cost_micro_usd: AtomicU64,
    current_tool: Mutex<Option<String>>,
    /// Milliseconds after `started` of the latest API or tool activity.
    last_activity_ms: AtomicU64,
    /// Tool calls running now (a long call is work, not idleness).
    tools_running: AtomicU32,
}

impl Progress {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            api_calls: AtomicU32::new(0),
            tokens: Mutex::new(TokenTotals::default()),
            cost_micro_usd: AtomicU64::new(0),
            current_tool: Mutex::new(None),
            last_activity_ms: AtomicU64::new(0),
            tools_running: AtomicU32::new(0),
        }
    }

    /// Resets the inactivity clock.
    pub fn touch(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_activity_ms.store(now, Ordering::Relaxed);
    }

    /// Milliseconds since the latest activity.
    pub fn idle_ms(&self) -> u64 {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        now.saturating_sub(self.last_activity_ms.load(Ordering::Relaxed))
    }

    /// A tool call started.
    pub fn tool_started(&self, tool: &str) {
        self.tools_running.fetch_add(1, Ordering::Relaxed);
        self.set_tool(Some(tool));
    }

    /// A tool call ended.
    pub fn tool_finished(&self) {
        let _ = self
            .tools_running
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if self.tools_running.load(Ordering::Relaxed) == 0 {
            self.set_tool(None);
        } else {
            self.touch();
        }
    }

    /// Whether a tool call is running now.
    pub fn in_tool(&self) -> bool {
        self.tools_running.load(Ordering::Relaxed) > 0
    }

    /// Counts one answered model request.
    pub fn api_call(&self, input: u64, output: u64, cached: u64, cost_usd: Option<f64>) {
        self.api_calls.fetch_add(1, Ordering::Relaxed);
        let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        tokens.input += input;
        tokens.output += output;
        tokens.cached += cached;
        if let Some(cost) = cost_usd {
            self.cost_micro_usd
                .fetch_add((cost * 1e6).round() as u64, Ordering::Relaxed);
        }
        self.touch();
    }

    /// Notes the tool now running (`None` when it finished).
    pub fn set_tool(&self, tool: Option<&str>) {
        *self
            .current_tool
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = tool.map(str::to_owned);
        self.touch();
    }

    /// Model requests answered so far.
    pub fn api_calls(&self) -> u32 {
        self.api_calls.load(Ordering::Relaxed)
    }

    /// Tokens so far.
    pub fn tokens(&self) -> TokenTotals {
        *self.tokens.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tool running now, if any.
    pub fn current_tool(&self) -> Option<String> {
        self.current_tool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Seconds since the child started.
    pub fn elapsed_seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// One subagent known to this process.
#[derive(Debug)]
pub struct LiveAgent {
    pub id: String,
    pub parent_id: String,
    /// The parent's session: where events about this agent are stamped.
    pub parent_session_id: String,
    pub session_id: String,
    pub depth: u32,
    pub role: &'static str,
    pub goal: String,
    pub background: bool,
    pub model: String,
    /// Cancels the agent and, through child tokens, its descendants.
    pub cancel: CancellationToken,
    pub progress: Progress,
    /// Its own and its subtree's usage (below its parent's meter).
    pub meter: Arc<crate::UsageMeter>,
    /// Messages sent to it (`agent_send`) for its next tool boundary, with
    /// their receipts.
    pub mailbox: Arc<crate::SteerQueue>,
    result: Mutex<Option<ChildResult>>,
    /// Who cancelled it (0 = nobody / an interrupt, 1 = `agent_cancel`,
    /// 2 = `herald agents cancel` from another process), for the result.
    cancelled_by_tool: AtomicU32,
}

impl LiveAgent {
    /// A new, running agent.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: String,
        parent_id: String,
        parent_session_id: String,
        session_id: String,
        depth: u32,
        role: &'static str,
        goal: String,
        background: bool,
        model: String,
        cancel: CancellationToken,
        meter: Arc<crate::UsageMeter>,
    ) -> Self {
        Self {
            id,
            parent_id,
            parent_session_id,
            session_id,
            depth,
            role,
            goal,
            background,
            model,
            cancel,
            progress: Progress::new(),
            meter,
            mailbox: Arc::default(),
            result: Mutex::new(None),
            cancelled_by_tool: AtomicU32::new(0),
        }
    }

    /// The result, once finished.
    pub fn result(&self) -> Option<ChildResult> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether it finished.
    pub fn is_finished(&self) -> bool {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Stores the result.
    pub fn finish(&self, result: ChildResult) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
    }

    /// Cancels on behalf of `agent_cancel`.
    pub fn cancel_by_tool(&self) {
        self.cancelled_by_tool.store(1, Ordering::Relaxed);
        self.cancel.cancel();
    }

    /// Cancels on behalf of `herald agents cancel` run elsewhere.
    pub fn cancel_externally(&self) {
        self.cancelled_by_tool.store(2, Ordering::Relaxed);
        self.cancel.cancel();
    }

    /// Cancels on behalf of the session's front end (a user's request).
    pub fn cancel_by_user(&self) {
        self.cancelled_by_tool.store(3, Ordering::Relaxed);
        self.cancel.cancel();
    }

    /// What stopped it, when it was cancelled on purpose.
    pub fn cancelled_by(&self) -> Option<&'static str> {
        match self.cancelled_by_tool.load(Ordering::Relaxed) {
            1 => Some("cancelled with agent_cancel"),
            2 => Some("cancelled with `herald agents cancel`"),
            3 => Some("cancelled by the user"),
            _ => None,
        }
    }
}
