//! Running one item: its settings (the base configuration plus the item's
//! model, toolsets, directory and turn limit), one headless session
//! through the session runtime, its spend watched against `budget_usd`,
//! its answer checked against `output_schema` (one repair turn), and its
//! result and trajectory read back. Items of one process share a model
//! client per endpoint, so they share its rate-limit governor too.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use herald_core::runtime::{
    ClarifyPolicy, OpenMode, Session, SessionOptions, TurnResult, open_session,
};
use herald_core::{ApprovalMode, Config, LlmClient, Overrides, Settings, StoreHandle};
use herald_protocol::{EventKind, ExitReason, Op, ToolStatus, UsageTotals};
use herald_store::SessionSource;
use tokio_util::sync::CancellationToken;

use crate::results::{ItemResult, ItemStatus, Tokens, ToolStat, Trajectory};
use crate::task::Task;

/// What every item of a run starts from.
#[derive(Clone)]
pub struct RunnerSetup {
    pub config: Config,
    pub config_path: PathBuf,
    pub home: PathBuf,
    pub env: HashMap<String, String>,
    /// The command line's settings (`--model`, `--toolsets`, `--cwd`, …);
    /// an item's own fields win over them.
    pub base: Overrides,
    /// `--mode` / `--yolo`, when given.
    pub permission_mode: Option<String>,
    pub store: StoreHandle,
}

/// Runs items; one per process, shared by every concurrent item.
pub struct ItemRunner {
    setup: RunnerSetup,
    /// One client per endpoint and model, built on first use.
    clients: Mutex<HashMap<String, Arc<LlmClient>>>,
    /// Where items with a `cwd` get their private copies.
    work_root: PathBuf,
    /// Keep those copies after the item (`--keep-workdirs`).
    keep_workdirs: bool,
}

/// What one turn came to, with what was seen on the way.
struct TurnOutcome {
    result: TurnResult,
    /// Spent past the budget: the turn was interrupted.
    over_budget: Option<f64>,
}

/// What the event stream of an item showed.
#[derive(Default)]
struct Observed {
    tool_sequence: Vec<String>,
    tool_stats: BTreeMap<String, ToolStat>,
    spent: f64,
}

impl ItemRunner {
    pub fn new(setup: RunnerSetup, work_root: PathBuf) -> Self {
        Self {
            setup,
            clients: Mutex::new(HashMap::new()),
            work_root,
            keep_workdirs: false,
        }
    }

    /// Keeps each item's private copy of its `cwd` after it finished
    /// (for looking at what an item did); by default they are removed.
    #[must_use]
    pub fn keep_workdirs(mut self, keep: bool) -> Self {
        self.keep_workdirs = keep;
        self
    }

    /// Whether items' working copies are kept.
    pub fn keeps_workdirs(&self) -> bool {
        self.keep_workdirs
    }

    /// Where items' private working copies go.
    pub fn work_root(&self) -> &std::path::Path {
        &self.work_root
    }

    /// The settings of `task`, or why it cannot run.
    pub fn settings(&self, task: &Task, cwd: Option<PathBuf>) -> Result<Settings, String> {
        let mut overrides = self.setup.base.clone();
        if task.model.is_some() {
            overrides.model.clone_from(&task.model);
        }
        if task.toolsets.is_some() {
            overrides.toolsets.clone_from(&task.toolsets);
        }
        if task.max_turns.is_some() {
            overrides.max_iterations = task.max_turns;
        }
        if cwd.is_some() {
            overrides.cwd = cwd;
        }
        let mut settings = Settings::resolve(
            &self.setup.config,
            &self.setup.config_path,
            self.setup.home.clone(),
            &self.setup.env,
            &overrides,
        )
        .map_err(|err| err.to_string())?;
        if let Some(mode) = &self.setup.permission_mode {
            settings.permissions.mode.clone_from(mode);
        }
        Ok(settings)
    }

    /// The shared client of these settings' endpoint and model.
    pub fn client(&self, settings: &Settings) -> Result<Arc<LlmClient>, String> {
        let key = format!(
            "{:?}\n{}\n{}",
            settings.provider, settings.base_url, settings.model
        );
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(&key) {
            return Ok(Arc::clone(client));
        }
        let client = Arc::new(settings.build_client().map_err(|err| err.to_string())?);
        clients.insert(key, Arc::clone(&client));
        Ok(client)
    }

    /// Runs `task` to its end (or until `cancel`) and returns its result
    /// and, when a session ran, its trajectory.
    pub async fn run(
        &self,
        task: &Task,
        cancel: &CancellationToken,
    ) -> (ItemResult, Option<Trajectory>) {
        self.run_in(task, None, cancel).await
    }

    /// [`ItemRunner::run`] in `workdir`, a directory the caller prepared
    /// (an eval task's, after its setup ran); `None` prepares the task's
    /// own `cwd` copy, or uses the base directory.
    pub async fn run_in(
        &self,
        task: &Task,
        workdir: Option<PathBuf>,
        cancel: &CancellationToken,
    ) -> (ItemResult, Option<Trajectory>) {
        let started = Instant::now();
        let mut result = ItemResult {
            id: task.id.clone(),
            hash: task.hash.clone(),
            status: ItemStatus::Failed,
            final_answer: None,
            output: None,
            repaired: false,
            tokens: Tokens::default(),
            cost_usd: None,
            requests: 0,
            duration_ms: 0,
            tool_sequence: Vec::new(),
            tool_stats: BTreeMap::new(),
            session_id: None,
            model: task.model.clone(),
            toolsets: task.toolsets.clone(),
            cwd: None,
            error: None,
            worker: None,
            checks: Vec::new(),
        };
        let trajectory = match self.run_session(task, workdir, cancel, &mut result).await {
            Ok(trajectory) => trajectory,
            Err(error) => {
                result.status = ItemStatus::Failed;
                result.error = Some(error);
                None
            }
        };
        result.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        (result, trajectory)
    }

    async fn run_session(
        &self,
        task: &Task,
        workdir: Option<PathBuf>,
        cancel: &CancellationToken,
        result: &mut ItemResult,
    ) -> Result<Option<Trajectory>, String> {
        // A copy made here is removed here when the item ends.
        let mut copied = None;
        let cwd = match (&task.cwd, workdir) {
            (_, Some(dir)) => Some(dir),
            (Some(src), None) => {
                let dest = self.work_root.join(&task.hash);
                let prepared = crate::workdir::prepare(src, &dest).await;
                if prepared.is_err() && !self.keep_workdirs {
                    crate::workdir::cleanup(Some(src), &dest).await;
                }
                let dir = prepared
                    .map_err(|err| format!("its directory could not be prepared: {err}"))?;
                copied = Some((src.clone(), dir.clone()));
                Some(dir)
            }
            (None, None) => None,
        };
        let outcome = self.session_in(task, cwd, cancel, result).await;
        if let Some((src, dir)) = copied
            && !self.keep_workdirs
        {
            crate::workdir::cleanup(Some(&src), &dir).await;
        }
        outcome
    }

    async fn session_in(
        &self,
        task: &Task,
        cwd: Option<PathBuf>,
        cancel: &CancellationToken,
        result: &mut ItemResult,
    ) -> Result<Option<Trajectory>, String> {
        let settings = self.settings(task, cwd)?;
        result.model = Some(settings.model.clone());
        result.toolsets.clone_from(&settings.toolsets);
        result.cwd = Some(settings.cwd.display().to_string());
        let client = self.client(&settings)?;
        let mut options = SessionOptions::new(settings, self.setup.store.clone());
        options.open = OpenMode::New;
        options.source = SessionSource::Batch;
        options.clarify = ClarifyPolicy::Unavailable;
        options.approvals = ApprovalMode::Headless;
        // With a schema the session stays open for the repair turn.
        options.one_shot = task.output_schema.is_none();
        options.client = Some(client);
        let session = open_session(options)
            .await
            .map_err(|err| format!("its session could not be opened: {err}"))?;
        let session_id = session.id().to_owned();
        result.session_id = Some(session_id.clone());
        let mut observed = Observed::default();
        let mut usage = UsageTotals::default();
        let first = run_turn(
            &session,
            task.prompt.clone(),
            task.budget_usd,
            cancel,
            &mut observed,
        )
        .await;
        let mut outcome = first.inspect(|turn| {
            add_usage(&mut usage, &turn.result.tree_usage);
        });
        if let (Ok(turn), Some(schema)) = (&outcome, &task.output_schema)
            && turn.over_budget.is_none()
            && turn.result.exit_reason == ExitReason::Completed
            && let Err(problem) = crate::output::validate(schema, &turn.result.final_response)
        {
            result.repaired = true;
            let repair = crate::output::repair_prompt(schema, &problem);
            outcome = run_turn(&session, repair, task.budget_usd, cancel, &mut observed)
                .await
                .inspect(|turn| {
                    add_usage(&mut usage, &turn.result.tree_usage);
                });
        }
        let _ = session.shutdown_now().await;
        result.tokens = Tokens {
            input: usage.input,
            output: usage.output,
            cached: usage.cached,
        };
        result.cost_usd = usage.cost_usd;
        result.requests = usage.requests;
        result.tool_sequence = observed.tool_sequence;
        result.tool_stats = observed.tool_stats;
        match outcome {
            Ok(turn) => classify(task, &turn, result),
            Err(error) => {
                result.status = ItemStatus::Failed;
                result.error = Some(error);
            }
        }
        let messages = self
            .setup
            .store
            .call({
                let id = session_id.clone();
                move |s| {
                    let system = s.get_session(&id)?.map(|r| r.system_prompt);
                    Ok::<_, herald_store::StoreError>((system, s.load_messages(&id)?))
                }
            })
            .await
            .map_err(|err| err.to_string())
            .and_then(|r| r.map_err(|err| err.to_string()));
        let trajectory = match messages {
            Ok((system, messages)) => Some(Trajectory {
                id: task.id.clone(),
                hash: task.hash.clone(),
                session_id: Some(session_id),
                messages: system
                    .filter(|s| !s.is_empty())
                    .map(|text| {
                        let mut message = herald_protocol::Message::user(text);
                        message.role = herald_protocol::Role::System;
                        message
                    })
                    .into_iter()
                    .chain(messages.into_iter().map(|m| m.message))
                    .collect(),
            }),
            Err(err) => {
                tracing::warn!(item = %task.id, "the item's messages could not be read: {err}");
                None
            }
        };
        Ok(trajectory)
    }
}

/// Sets the result's status, answer and output from the last turn.
fn classify(task: &Task, turn: &TurnOutcome, result: &mut ItemResult) {
    let answer = &turn.result.final_response;
    result.final_answer = (!answer.is_empty()).then(|| answer.clone());
    if let Some(spent) = turn.over_budget {
        result.status = ItemStatus::OverBudget;
        result.error = Some(format!(
            "stopped: it spent ${spent:.4}, over its budget of ${:.4}",
            task.budget_usd.unwrap_or_default()
        ));
        return;
    }
    match turn.result.exit_reason {
        ExitReason::Completed => match &task.output_schema {
            None => result.status = ItemStatus::Completed,
            Some(schema) => match crate::output::validate(schema, answer) {
                Ok(value) => {
                    result.output = Some(value);
                    result.status = ItemStatus::Completed;
                }
                Err(problem) => {
                    result.status = ItemStatus::InvalidOutput;
                    result.error = Some(format!(
                        "the answer does not match output_schema after a repair turn: {problem}"
                    ));
                }
            },
        },
        ExitReason::MaxIterations => {
            result.status = ItemStatus::MaxTurns;
            result.error = Some("the turn reached max_turns before a final answer".to_owned());
        }
        ExitReason::Interrupted => {
            result.status = ItemStatus::Interrupted;
            result.error = Some("interrupted".to_owned());
        }
        reason @ (ExitReason::Error | ExitReason::Budget | ExitReason::Timeout) => {
            result.status = ItemStatus::Failed;
            result.error = Some(
                turn.result
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("the turn ended: {reason}")),
            );
        }
    }
}

fn add_usage(total: &mut UsageTotals, turn: &UsageTotals) {
    total.input += turn.input;
    total.output += turn.output;
    total.cached += turn.cached;
    total.cache_creation += turn.cache_creation;
    total.requests += turn.requests;
    total.cost_usd = match (total.cost_usd, turn.cost_usd) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
}

/// Sends `prompt` as a turn and follows it to its end, recording tool
/// calls and interrupting it past `budget` or on `cancel`.
async fn run_turn(
    session: &Session,
    prompt: String,
    budget: Option<f64>,
    cancel: &CancellationToken,
    observed: &mut Observed,
) -> Result<TurnOutcome, String> {
    let mut events = session.events(Some(session.last_seq()));
    let turn = session
        .submit(Op::UserTurn {
            text: prompt,
            images: Vec::new(),
        })
        .map_err(|err| format!("the turn could not start: {err}"))?;
    let mut over_budget = None;
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = session.submit(Op::Interrupt {});
                continue;
            }
        };
        let Some(event) = event else {
            return Err("the session ended before its turn finished".to_owned());
        };
        match &event.kind {
            EventKind::Usage {
                cost_usd: Some(cost),
                ..
            } => {
                observed.spent += cost;
                if let Some(limit) = budget
                    && observed.spent > limit
                    && over_budget.is_none()
                {
                    over_budget = Some(observed.spent);
                    let _ = session.submit(Op::Interrupt {});
                }
            }
            EventKind::ToolStarted { name, .. } if event.agent_id == "root" => {
                observed.tool_sequence.push(name.clone());
            }
            EventKind::ToolCompleted {
                name,
                status,
                duration_ms,
                ..
            } => {
                let stat = observed.tool_stats.entry(name.clone()).or_default();
                stat.calls += 1;
                stat.errors += u64::from(*status == ToolStatus::Error);
                stat.duration_ms += duration_ms;
            }
            kind if event.submission_id.as_ref() == Some(&turn) => {
                if let Some(result) = TurnResult::from_event(kind) {
                    return Ok(TurnOutcome {
                        result,
                        over_budget,
                    });
                }
            }
            _ => {}
        }
    }
}
