//! Hooks: shell commands the user (or an approved project) attaches to the
//! events of a session — `session_start`, `user_prompt`, `pre_tool`,
//! `post_tool`, `subagent_start`, `subagent_stop`, `pre_compact`,
//! `session_end`, `notification` and `file_changed`. Each command gets the event as JSON on
//! stdin and may block, change a call's arguments or result, or add context
//! at the end of the conversation (see [`decision`] for the rules). The
//! hooks of one event run in parallel; every run is a `hook.ran` event, and
//! a failing or slow one is a warning the user sees, never a silent no-op.
//!
//! A session without hooks builds no [`Hooks`] at all, so nothing here is
//! on its path.

mod config;
mod decision;
mod intercept;
mod project;
mod runner;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures_util::future::join_all;
use herald_protocol::EventKind;
use herald_sandbox::EnvFilter;
use serde_json::{Map, Value};

pub use config::{
    DEFAULT_TIMEOUT_SECS, HookEntry, HookEvent, HookOrigin, HookSpec, TIMEOUT_RANGE, check_hooks,
};
pub use decision::Outcome;
pub use project::{HookApprovals, PROJECT_HOOKS_FILE, ProjectHooks};

use decision::Combined;

use crate::{EventSink, Settings};

/// Whom a hook event is about: the agent (and its session) and the
/// directory it works in.
#[derive(Debug, Clone, Copy)]
pub struct HookSite<'a> {
    pub session_id: &'a str,
    pub agent_id: &'a str,
    pub cwd: &'a Path,
}

/// What a subagent hook is told about the child.
#[derive(Debug, Clone, Copy)]
pub struct SubagentFacts<'a> {
    /// The child's id and own session.
    pub agent_id: &'a str,
    pub session_id: &'a str,
    /// The delegating agent and its session.
    pub parent_id: &'a str,
    pub parent_session_id: &'a str,
    pub goal: &'a str,
    pub role: &'a str,
    pub depth: u32,
    pub background: bool,
}

/// The hooks of one session tree, ready to run.
pub struct Hooks {
    /// Per event (indexed by [`HookEvent::index`]), in config order: the
    /// user's first, then an approved project's.
    by_event: [Vec<HookSpec>; 10],
    env: Arc<EnvFilter>,
    /// The root agent's sink: `hook.ran` and warnings go to the stream the
    /// user watches, stamped with the agent they are about.
    events: EventSink,
    /// The session's working directory: where commands run.
    cwd: PathBuf,
    root_session_id: String,
    /// Context from `session_start` hooks, appended to the next prompt.
    pending: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("hooks", &self.by_event.iter().map(Vec::len).sum::<usize>())
            .finish_non_exhaustive()
    }
}

impl Hooks {
    /// The hooks of `settings` (the user's and, once approved, the
    /// project's), run with `env` and reported to `events`; `None` when
    /// there are none.
    pub fn for_session(
        settings: &Settings,
        env: Arc<EnvFilter>,
        events: EventSink,
    ) -> Option<Arc<Self>> {
        let project = settings
            .project_hooks
            .as_ref()
            .filter(|p| p.approved)
            .map(|p| p.hooks.as_slice())
            .unwrap_or_default();
        let all = settings.hooks.iter().chain(project);
        let mut by_event: [Vec<HookSpec>; 10] = Default::default();
        for spec in all {
            by_event[spec.event as usize].push(spec.clone());
        }
        if by_event.iter().all(Vec::is_empty) {
            return None;
        }
        Some(Arc::new(Self {
            by_event,
            env,
            root_session_id: events.session_id().to_owned(),
            events,
            cwd: settings.cwd.clone(),
            pending: Mutex::new(Vec::new()),
        }))
    }

    /// Whether any hook listens to `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        !self.by_event[event as usize].is_empty()
    }

    /// The `pre_tool`/`post_tool` hooks as a call interceptor, when there
    /// are any (added first, so later interceptors see what they decided).
    pub fn call_interceptor(
        self: &Arc<Self>,
    ) -> Option<Arc<dyn crate::intercept::CallInterceptor>> {
        (self.has(HookEvent::PreTool) || self.has(HookEvent::PostTool))
            .then(|| intercept::HookInterceptor::shared(Arc::clone(self)))
    }

    fn root_site(&self) -> HookSite<'_> {
        HookSite {
            session_id: &self.root_session_id,
            agent_id: "root",
            cwd: &self.cwd,
        }
    }

    /// `session_start`: a session was opened. Context the hooks add is
    /// appended to the next prompt.
    pub async fn session_start(&self, resumed: bool, model: &str) {
        if !self.has(HookEvent::SessionStart) {
            return;
        }
        let fields = Map::from_iter([
            (
                "source".to_owned(),
                Value::from(if resumed { "resume" } else { "new" }),
            ),
            ("model".to_owned(), Value::from(model)),
        ]);
        let combined = self
            .fire(HookEvent::SessionStart, self.root_site(), None, fields)
            .await;
        if !combined.contexts.is_empty() {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(combined.contexts);
        }
    }

    /// `user_prompt`: the prompt as it goes to the model (with the context
    /// hooks added at its end), or why a hook blocked it.
    pub async fn user_prompt(&self, prompt: String) -> Result<String, String> {
        let mut contexts =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        if self.has(HookEvent::UserPrompt) {
            let fields = Map::from_iter([("prompt".to_owned(), Value::from(prompt.as_str()))]);
            let combined = self
                .fire(HookEvent::UserPrompt, self.root_site(), None, fields)
                .await;
            if let Some(reason) = combined.block {
                // The session's context waits for the next prompt.
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .splice(0..0, contexts);
                return Err(format!("a user_prompt hook blocked the prompt: {reason}"));
            }
            contexts.extend(combined.contexts);
        }
        if contexts.is_empty() {
            return Ok(prompt);
        }
        Ok(format!(
            "{prompt}\n\n{}",
            decision::context_lines(&contexts)
        ))
    }

    /// `pre_compact`: the conversation of `site`'s agent is about to be
    /// compacted (`trigger`: `auto`, `manual` or `context_too_long`).
    pub async fn pre_compact(&self, site: HookSite<'_>, trigger: &str) {
        if self.has(HookEvent::PreCompact) {
            let fields = Map::from_iter([("trigger".to_owned(), Value::from(trigger))]);
            self.fire(HookEvent::PreCompact, site, None, fields).await;
        }
    }

    fn subagent_fields(child: &SubagentFacts<'_>) -> Map<String, Value> {
        Map::from_iter([
            ("parent_id".to_owned(), Value::from(child.parent_id)),
            (
                "parent_session_id".to_owned(),
                Value::from(child.parent_session_id),
            ),
            ("goal".to_owned(), Value::from(child.goal)),
            ("role".to_owned(), Value::from(child.role)),
            ("depth".to_owned(), Value::from(child.depth)),
            ("background".to_owned(), Value::from(child.background)),
        ])
    }

    /// `subagent_start`: a child is about to run. `Ok` with context to add
    /// to its task, or why a hook blocked it.
    pub async fn subagent_start(&self, child: SubagentFacts<'_>) -> Result<Option<String>, String> {
        if !self.has(HookEvent::SubagentStart) {
            return Ok(None);
        }
        let site = HookSite {
            session_id: child.session_id,
            agent_id: child.agent_id,
            cwd: &self.cwd,
        };
        let combined = self
            .fire(
                HookEvent::SubagentStart,
                site,
                None,
                Self::subagent_fields(&child),
            )
            .await;
        match combined.block {
            Some(reason) => Err(format!(
                "a subagent_start hook blocked this subagent: {reason}"
            )),
            None => Ok(combined.context_text()),
        }
    }

    /// `subagent_stop`: a child finished with `status` and `summary`.
    pub async fn subagent_stop(
        &self,
        child: SubagentFacts<'_>,
        status: herald_protocol::AgentStatus,
        exit_reason: herald_protocol::ExitReason,
        summary: &str,
    ) {
        if !self.has(HookEvent::SubagentStop) {
            return;
        }
        let site = HookSite {
            session_id: child.session_id,
            agent_id: child.agent_id,
            cwd: &self.cwd,
        };
        let mut fields = Self::subagent_fields(&child);
        fields.insert("status".to_owned(), Value::from(status.as_str()));
        fields.insert("exit_reason".to_owned(), Value::from(exit_reason.as_str()));
        fields.insert("summary".to_owned(), Value::from(summary));
        self.fire(HookEvent::SubagentStop, site, None, fields).await;
    }

    /// `notification` of kind `approval_needed`: `site`'s agent waits for
    /// the user to approve a call. Runs in the background (the request
    /// itself is not delayed).
    pub fn approval_needed(
        self: &Arc<Self>,
        site: HookSite<'_>,
        tool: &str,
        arguments: &str,
        reason: &str,
    ) {
        if !self.has(HookEvent::Notification) {
            return;
        }
        let fields = Map::from_iter([
            ("kind".to_owned(), Value::from("approval_needed")),
            (
                "message".to_owned(),
                Value::from(format!("{tool} needs your approval: {reason}")),
            ),
            ("tool_name".to_owned(), Value::from(tool)),
            ("tool_input".to_owned(), parse_arguments(arguments)),
        ]);
        let hooks = Arc::clone(self);
        let (session_id, agent_id, cwd) = (
            site.session_id.to_owned(),
            site.agent_id.to_owned(),
            site.cwd.to_owned(),
        );
        tokio::spawn(async move {
            let site = HookSite {
                session_id: &session_id,
                agent_id: &agent_id,
                cwd: &cwd,
            };
            hooks
                .fire(
                    HookEvent::Notification,
                    site,
                    Some("approval_needed"),
                    fields,
                )
                .await;
        });
    }

    /// `notification` of kind `turn_done`: the root's turn ended.
    pub async fn turn_done(&self, status: &str, exit_reason: &str, final_response: &str) {
        if !self.has(HookEvent::Notification) {
            return;
        }
        let fields = Map::from_iter([
            ("kind".to_owned(), Value::from("turn_done")),
            (
                "message".to_owned(),
                Value::from(format!("the turn ended: {exit_reason}")),
            ),
            ("status".to_owned(), Value::from(status)),
            ("exit_reason".to_owned(), Value::from(exit_reason)),
            ("final_response".to_owned(), Value::from(final_response)),
        ]);
        self.fire(
            HookEvent::Notification,
            self.root_site(),
            Some("turn_done"),
            fields,
        )
        .await;
    }

    /// `notification` of kind `job_completed`, outside any session: a
    /// scheduled job's run ended (`fields` describe it). Runs the
    /// configured hooks of `settings` in its working directory; nothing
    /// when there are none.
    pub async fn job_completed(settings: &Settings, session_id: &str, fields: Map<String, Value>) {
        let env = match crate::permissions::load_permission_setup(settings) {
            Ok(setup) => setup.env,
            Err(err) => {
                tracing::warn!("job_completed hooks not run: {err}");
                return;
            }
        };
        let events = EventSink::new(session_id, "root", |_| {});
        let Some(hooks) = Self::for_session(settings, env, events) else {
            return;
        };
        if hooks.has(HookEvent::Notification) {
            hooks
                .fire(
                    HookEvent::Notification,
                    hooks.root_site(),
                    Some("job_completed"),
                    fields,
                )
                .await;
        }
    }

    /// `file_changed`: a file the session read or edited was changed
    /// outside it (`matcher` matches the path under the working directory).
    pub async fn file_changed(&self, change: &crate::watch::FileChange) {
        if !self.has(HookEvent::FileChanged) {
            return;
        }
        let mut fields = Map::from_iter([
            ("path".to_owned(), Value::from(change.path.as_str())),
            (
                "absolute_path".to_owned(),
                Value::from(change.absolute.display().to_string()),
            ),
            ("change".to_owned(), Value::from(change.kind.as_str())),
        ]);
        if let crate::watch::ChangeKind::Edited { added, removed } = change.kind {
            fields.insert("added".to_owned(), Value::from(added));
            fields.insert("removed".to_owned(), Value::from(removed));
        }
        self.fire(
            HookEvent::FileChanged,
            self.root_site(),
            Some(&change.path),
            fields,
        )
        .await;
    }

    /// `session_end`: the session ends (`reason`: `exit`, or how a one-shot
    /// run's turn ended).
    pub async fn session_end(&self, reason: &str) {
        if self.has(HookEvent::SessionEnd) {
            let fields = Map::from_iter([("reason".to_owned(), Value::from(reason))]);
            self.fire(HookEvent::SessionEnd, self.root_site(), None, fields)
                .await;
        }
    }

    /// Runs the hooks of `event` that match `subject` (all when `None`) in
    /// parallel with the event's JSON on stdin, reports each run and
    /// combines their decisions in config order.
    async fn fire(
        &self,
        event: HookEvent,
        site: HookSite<'_>,
        subject: Option<&str>,
        fields: Map<String, Value>,
    ) -> Combined {
        let selected: Vec<&HookSpec> = self.by_event[event as usize]
            .iter()
            .filter(|spec| subject.is_none_or(|s| spec.matches(s)))
            .collect();
        if selected.is_empty() {
            return Combined::default();
        }
        let mut payload = Map::from_iter([
            ("event".to_owned(), Value::from(event.as_str())),
            ("session_id".to_owned(), Value::from(site.session_id)),
            ("agent_id".to_owned(), Value::from(site.agent_id)),
            (
                "cwd".to_owned(),
                Value::from(site.cwd.display().to_string()),
            ),
        ]);
        payload.extend(fields);
        let input = Value::Object(payload).to_string();
        let runs = selected.iter().map(|spec| {
            let input = input.as_bytes();
            async move {
                let started = Instant::now();
                let finished =
                    runner::run_command(&spec.command, &self.cwd, input, &self.env, spec.timeout)
                        .await;
                (finished, started.elapsed())
            }
        });
        let finished = join_all(runs).await;
        let sink = self.events.for_agent(site.session_id, site.agent_id);
        let mut combined = Combined::default();
        for (spec, (finished, elapsed)) in selected.iter().zip(finished) {
            let verdict = decision::judge(&finished, spec.timeout.as_secs());
            sink.emit(EventKind::HookRan {
                event,
                command: spec.command.clone(),
                outcome: verdict.outcome,
                duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                message: verdict.message.clone(),
            });
            match verdict.outcome {
                Outcome::Ok | Outcome::Blocked => combined.add(verdict.decision),
                Outcome::Error | Outcome::Timeout => {
                    let why = verdict.message.unwrap_or_default();
                    tracing::warn!(event = event.as_str(), command = %spec.command, "hook failed: {why}");
                    sink.emit(EventKind::Error {
                        message: format!(
                            "{} hook `{}` {why}; it was ignored",
                            event.as_str(),
                            spec.command
                        ),
                        fatal: false,
                    });
                }
            }
        }
        combined
    }
}

/// A call's arguments as the JSON value hooks get (the text itself when it
/// is not JSON).
fn parse_arguments(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::from(arguments))
}
