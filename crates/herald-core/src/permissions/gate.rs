//! The session's [`PermissionGate`]: judges each call with the policy,
//! resolves `ask` by the session's [`ApprovalMode`], and audits the result.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use futures_util::future::BoxFuture;
use herald_permissions::{CallInfo, Decision, Mode, Policy, PolicyConfig, Verdict};
use herald_protocol::{EventKind, ResolvedBy};
use herald_sandbox::{Redactor, SandboxPolicy};
use herald_store::{DecidedBy, Ruling};
use herald_tools::{ElicitAnswer, Elicitation, GateOutcome, PermissionGate, Tool, ToolContext};

use super::ApprovalMode;
use super::approvals::{ApprovalAnswer, Approvals, PendingApproval};
use super::audit::{Audit, Entry, summary};
use super::elicitations::{Elicitations, PendingElicitation};
use super::setup::{PermissionSetup, save_approved_rule, tool_sandbox};
use crate::{EventSink, StoreHandle};

/// The permission state of one session, shared by the gates of its agents.
pub(crate) struct Permissions {
    policy: Policy,
    /// Rules the user approved (this session, or "always" before): a call
    /// the policy would ask about runs unconfined when one matches.
    approved: RwLock<Approved>,
    /// Configured ask rules, which an approval never overrides.
    ask_rules: Vec<String>,
    pub(crate) approvals: Arc<Approvals>,
    /// MCP servers' requests for user input waiting for an answer.
    pub(crate) elicitations: Arc<Elicitations>,
    mode: ApprovalMode,
    approved_file: PathBuf,
    sandbox: SandboxPolicy,
    /// The session's working directory: the workspace confined calls may write.
    workspace: PathBuf,
    config_path: PathBuf,
    audit: Audit,
    redactor: Arc<Redactor>,
    /// The session's hooks: `notification` (`approval_needed`) when a call
    /// waits for the user.
    hooks: std::sync::OnceLock<Arc<crate::hooks::Hooks>>,
}

/// Approved rules, compiled as a policy that allows exactly them.
struct Approved {
    rules: Vec<String>,
    policy: Option<Policy>,
    template: PolicyConfig,
}

impl Approved {
    fn new(template: PolicyConfig, rules: Vec<String>) -> Result<Self, String> {
        let mut approved = Self {
            rules: Vec::new(),
            policy: None,
            template,
        };
        for rule in rules {
            approved.add(&rule)?;
        }
        Ok(approved)
    }

    fn add(&mut self, rule: &str) -> Result<(), String> {
        if self.rules.iter().any(|r| r == rule) {
            return Ok(());
        }
        let mut rules = self.rules.clone();
        rules.push(rule.to_owned());
        let config = PolicyConfig {
            mode: Mode::ReadOnly,
            allow: rules.clone(),
            allow_network: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            project_ask: Vec::new(),
            project_deny: Vec::new(),
            ..self.template.clone()
        };
        self.policy = Some(Policy::new(config).map_err(|e| e.to_string())?);
        self.rules = rules;
        Ok(())
    }

    /// The approved rule that allows `call`, if any. Approved calls run
    /// unconfined anyway, so a call asking to leave the sandbox
    /// (`unsandboxed: true`) is matched as the same call without it.
    fn matching(&self, call: &CallInfo<'_>) -> Option<String> {
        let policy = self.policy.as_ref()?;
        let stripped;
        let call = match call.args.as_object() {
            Some(args) if call.tool == "terminal" && args.contains_key("unsandboxed") => {
                let mut args = args.clone();
                args.remove("unsandboxed");
                stripped = serde_json::Value::Object(args);
                &CallInfo {
                    args: &stripped,
                    ..*call
                }
            }
            _ => call,
        };
        let verdict = policy.check(call);
        let rule = verdict.rule?;
        (verdict.decision == Decision::Allow && self.rules.contains(&rule)).then_some(rule)
    }
}

impl Permissions {
    /// Builds the session's permission state. Fails on a rule that does not
    /// parse, naming it.
    pub(crate) fn new(
        setup: PermissionSetup,
        mode: ApprovalMode,
        workspace: PathBuf,
        config_path: PathBuf,
        store: Option<StoreHandle>,
    ) -> Result<Self, String> {
        let mut ask_rules = setup.policy.ask.clone();
        ask_rules.extend(setup.policy.project_ask.iter().cloned());
        let approved = Approved::new(setup.policy.clone(), setup.approved)
            .map_err(|e| format!("{}: {e}", setup.approved_file.display()))?;
        let policy = Policy::new(setup.policy).map_err(|e| e.to_string())?;
        Ok(Self {
            policy,
            approved: RwLock::new(approved),
            ask_rules,
            approvals: Arc::new(Approvals::default()),
            elicitations: Arc::new(Elicitations::default()),
            mode,
            approved_file: setup.approved_file,
            sandbox: setup.sandbox,
            workspace,
            config_path,
            audit: Audit { store },
            redactor: setup.redactor,
            hooks: std::sync::OnceLock::new(),
        })
    }

    /// Runs the session's `notification` hooks when a call waits for
    /// approval (set once, when the session opens).
    pub(crate) fn set_hooks(&self, hooks: Arc<crate::hooks::Hooks>) {
        let _ = self.hooks.set(hooks);
    }

    /// A gate judging the calls of the agent whose events go to `events`.
    pub(crate) fn gate_for(self: &Arc<Self>, events: EventSink) -> Arc<dyn PermissionGate> {
        Arc::new(AgentGate {
            permissions: Arc::clone(self),
            events,
            isolation: None,
        })
    }

    /// The gate of an agent working in its own git worktree: its confined
    /// commands write there (and to the repository's git directory, where
    /// commits go) instead of the session's workspace, and file tools may
    /// not write into the parent's checkout.
    pub(crate) fn gate_for_worktree(
        self: &Arc<Self>,
        events: EventSink,
        isolation: Isolation,
    ) -> Arc<dyn PermissionGate> {
        Arc::new(AgentGate {
            permissions: Arc::clone(self),
            events,
            isolation: Some(isolation),
        })
    }

    /// The mode the policy applies.
    pub(crate) fn mode(&self) -> Mode {
        self.policy.mode()
    }

    /// The policy's verdict on `call`, with an `ask` turned into `allow`
    /// when a rule the user approved matches (then `true`: the call runs
    /// unconfined, as approved).
    pub(crate) fn judge(&self, call: &CallInfo<'_>) -> (Verdict, bool) {
        let mut verdict = self.policy.check(call);
        if verdict.decision == Decision::Ask
            && let Some(rule) = self.approved_rule(call, &verdict)
        {
            verdict.reason = format!("approved by the user earlier ({})", verdict.reason);
            verdict.decision = Decision::Allow;
            verdict.rule = Some(rule);
            verdict.confine = false;
            return (verdict, true);
        }
        (verdict, false)
    }

    fn approved_rule(&self, call: &CallInfo<'_>, verdict: &Verdict) -> Option<String> {
        if verdict
            .rule
            .as_ref()
            .is_some_and(|rule| self.ask_rules.contains(rule))
        {
            return None;
        }
        self.approved
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .matching(call)
    }

    /// Saves `rule` in the "always" file (`save`), then remembers it for
    /// the session. On failure nothing is kept and the message says why:
    /// the call then runs once, as approved, and the next one asks again.
    fn approve(&self, rule: &str, save: bool) -> Result<(), String> {
        if save && let Err(err) = save_approved_rule(&self.approved_file, rule) {
            tracing::warn!(%err, "cannot save an approved rule");
            return Err(format!(
                "the rule `{rule}` could not be saved to {}: {err}",
                self.approved_file.display()
            ));
        }
        self.approved
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .add(rule)
            .map_err(|err| format!("the approved rule `{rule}` could not be kept: {err}"))
    }
}

/// Where an agent isolated in a worktree works, and what it may not touch.
#[derive(Debug, Clone)]
pub(crate) struct Isolation {
    /// Its worktree: the workspace of its confined commands.
    pub worktree: PathBuf,
    /// The parent's checkout, closed to its file tools.
    pub parent_checkout: PathBuf,
    /// The repository's git directory (commits write there).
    pub git_dir: PathBuf,
}

impl Isolation {
    /// The first path a `write_file`/`patch` call names inside the
    /// parent's checkout (outside the worktree and the git directory).
    fn forbidden_write(&self, args: &serde_json::Value, cwd: &std::path::Path) -> Option<PathBuf> {
        let mut raw: Vec<&str> = Vec::new();
        if let Some(p) = args.get("path").and_then(|p| p.as_str()) {
            raw.push(p);
        }
        if let Some(list) = args.get("paths").and_then(|p| p.as_array()) {
            raw.extend(list.iter().filter_map(|p| p.as_str()));
        }
        raw.into_iter().map(|p| normalize(&cwd.join(p))).find(|p| {
            p.starts_with(&self.parent_checkout)
                && !p.starts_with(&self.worktree)
                && !p.starts_with(&self.git_dir)
        })
    }
}

/// `path` with `.` and `..` resolved lexically, and through symlinks as far
/// as it exists (a link in the worktree pointing into the parent's
/// checkout is judged by its target).
fn normalize(path: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    let mut existing = out.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return out,
        }
    }
    match existing.canonicalize() {
        Ok(mut real) => {
            real.extend(rest.iter().rev());
            real
        }
        Err(_) => out,
    }
}

/// The gate of one agent: the session's permissions plus who is asking.
struct AgentGate {
    permissions: Arc<Permissions>,
    events: EventSink,
    /// Set for an agent working in its own worktree.
    isolation: Option<Isolation>,
}

impl PermissionGate for AgentGate {
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        args: &'a serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, GateOutcome> {
        Box::pin(self.decide(tool, args, ctx))
    }

    fn elicit<'a>(
        &'a self,
        request: Elicitation,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ElicitAnswer> {
        Box::pin(self.ask_input(request, ctx))
    }
}

impl AgentGate {
    async fn decide(
        &self,
        tool: &dyn Tool,
        args: &serde_json::Value,
        ctx: &ToolContext,
    ) -> GateOutcome {
        let p = &self.permissions;
        let name = tool.spec().name.as_str();
        let cwd = ctx.state.cwd();
        let call = CallInfo {
            tool: name,
            args,
            cwd: &cwd,
            read_only: tool.read_only(),
        };
        if let Some(isolation) = &self.isolation
            && matches!(name, "write_file" | "patch")
            && let Some(path) = isolation.forbidden_write(args, &cwd)
        {
            let reason = format!(
                "{} is in the parent's checkout {}; this agent works in its own worktree {} and writes only there",
                path.display(),
                isolation.parent_checkout.display(),
                isolation.worktree.display()
            );
            self.record(
                name,
                args,
                Ruling::Deny,
                Some("worktree"),
                &reason,
                DecidedBy::Policy,
            )
            .await;
            return GateOutcome::Refuse(format!("refused: {reason}"));
        }
        let (verdict, approved) = p.judge(&call);
        let workspace = self
            .isolation
            .as_ref()
            .map_or(p.workspace.as_path(), |i| i.worktree.as_path());
        let (decision, by, outcome) = match (verdict.decision, p.mode) {
            (Decision::Allow, _) => (
                Ruling::Allow,
                if approved {
                    DecidedBy::Approval
                } else {
                    DecidedBy::Policy
                },
                GateOutcome::Run {
                    sandbox: verdict.confine.then(|| {
                        let mut sandbox = tool_sandbox(&p.sandbox, workspace);
                        if let Some(isolation) = &self.isolation {
                            sandbox.writable_roots.push(isolation.git_dir.clone());
                        }
                        // An allow rule granting the network.
                        sandbox.network |= verdict.network;
                        Arc::new(sandbox)
                    }),
                },
            ),
            (Decision::Deny, _) => (
                Ruling::Deny,
                DecidedBy::Policy,
                GateOutcome::Refuse(denied_by_policy(
                    &describe(name, args),
                    &verdict,
                    &p.config_path,
                )),
            ),
            (Decision::Ask, ApprovalMode::Yolo) => (
                Ruling::Allow,
                DecidedBy::Yolo,
                GateOutcome::Run { sandbox: None },
            ),
            (Decision::Ask, ApprovalMode::Headless) => (
                Ruling::Deny,
                DecidedBy::Headless,
                GateOutcome::Refuse(denied_headless(
                    &describe(name, args),
                    &verdict,
                    &p.config_path,
                )),
            ),
            (Decision::Ask, ApprovalMode::Ask) => {
                let what = describe(name, args);
                return self.ask(name, args, ctx, &what, verdict).await;
            }
        };
        self.record(
            name,
            args,
            decision,
            verdict.rule.as_deref(),
            &verdict.reason,
            by,
        )
        .await;
        outcome
    }

    /// Puts an MCP server's request for input to the user: an
    /// `elicitation.requested` event, then the front end's answer (or a
    /// cancel when the turn is interrupted). A session nobody answers
    /// (headless, `--yolo`) declines at once.
    async fn ask_input(&self, request: Elicitation, ctx: &ToolContext) -> ElicitAnswer {
        let p = &self.permissions;
        let id = p.elicitations.next_id();
        let requested = EventKind::ElicitationRequested {
            request_id: id.clone(),
            server: request.server.clone(),
            message: request.message.clone(),
            schema: request.schema.clone(),
        };
        let resolved = |answer: ElicitAnswer, by: ResolvedBy| {
            self.events.emit(EventKind::ElicitationResolved {
                request_id: id.clone(),
                action: answer.action.into(),
                by,
            });
            answer
        };
        if p.mode != ApprovalMode::Ask {
            self.events.emit(requested);
            return resolved(ElicitAnswer::decline(), ResolvedBy::Headless);
        }
        // Open before the event goes out, so an answer to it finds it.
        let answer = p.elicitations.open(PendingElicitation {
            request_id: id.clone(),
            agent_id: self.events.agent_id().to_owned(),
            server: request.server,
            message: request.message,
            schema: request.schema,
        });
        self.events.emit(requested);
        let answer = tokio::select! {
            answer = answer => answer.ok(),
            () = ctx.cancel.cancelled() => None,
        };
        p.elicitations.close(&id);
        match answer {
            Some(answer) => resolved(answer, ResolvedBy::User),
            None => resolved(ElicitAnswer::cancel(), ResolvedBy::Interrupt),
        }
    }

    /// Asks the front end and waits for the answer (or the interrupt).
    async fn ask(
        &self,
        name: &str,
        args: &serde_json::Value,
        ctx: &ToolContext,
        what: &str,
        verdict: Verdict,
    ) -> GateOutcome {
        let p = &self.permissions;
        let arguments = p.redactor.redact(&args.to_string()).into_owned();
        let (request, answer) = p.approvals.open(PendingApproval {
            request_id: String::new(),
            agent_id: self.events.agent_id().to_owned(),
            tool: name.to_owned(),
            arguments: arguments.clone(),
            reason: verdict.reason.clone(),
            rule: verdict.rule.clone(),
            allow_rule: verdict.allow_rule.clone(),
        });
        let id = request.request_id;
        if let Some(hooks) = p.hooks.get() {
            let cwd = ctx.state.cwd();
            let site = crate::hooks::HookSite {
                session_id: self.events.session_id(),
                agent_id: self.events.agent_id(),
                cwd: &cwd,
            };
            hooks.approval_needed(site, name, &arguments, &verdict.reason);
        }
        self.events.emit(EventKind::ApprovalRequested {
            request_id: id.clone(),
            tool: name.to_owned(),
            arguments,
            reason: verdict.reason.clone(),
            rule: verdict.rule.clone(),
            allow_rule: verdict.allow_rule.clone(),
        });
        let answer = tokio::select! {
            answer = answer => answer.ok(),
            () = ctx.cancel.cancelled() => None,
        };
        p.approvals.close(&id);
        let Some(mut answer) = answer else {
            self.events.emit(EventKind::ApprovalResolved {
                request_id: id,
                decision: herald_protocol::ApprovalDecision::Deny,
                by: ResolvedBy::Interrupt,
            });
            self.record(
                name,
                args,
                Ruling::Deny,
                verdict.rule.as_deref(),
                "interrupted while waiting for approval",
                DecidedBy::Interrupt,
            )
            .await;
            return GateOutcome::Refuse(format!(
                "interrupted: the turn was stopped while {what} waited for approval; it did not run"
            ));
        };
        // "session" and "always" keep the offered rule; where none can be
        // kept (nothing to offer, or saving it failed) the call runs once
        // and the user is told.
        let chosen = answer.decision();
        let mut kept_rule = None;
        let mut notice = None;
        if matches!(answer, ApprovalAnswer::Session | ApprovalAnswer::Always) {
            let always = answer == ApprovalAnswer::Always;
            match verdict.allow_rule.as_deref() {
                None => {
                    notice = Some(format!(
                        "no rule can allow {what} ({}), so nothing was {}: it ran once and will \
                         ask again",
                        verdict.rule.as_deref().unwrap_or("asked"),
                        if always {
                            "saved"
                        } else {
                            "kept for the session"
                        }
                    ));
                    answer = ApprovalAnswer::Once;
                }
                Some(rule) => match p.approve(rule, always) {
                    Ok(()) => kept_rule = Some(rule.to_owned()),
                    Err(err) => {
                        notice = Some(format!(
                            "{err}; {what} ran once and the next such call will ask again"
                        ));
                        answer = ApprovalAnswer::Once;
                    }
                },
            }
        }
        self.events.emit(EventKind::ApprovalResolved {
            request_id: id,
            decision: answer.decision(),
            by: ResolvedBy::User,
        });
        if let Some(message) = &notice {
            self.events.emit(EventKind::Error {
                message: message.clone(),
                fatal: false,
            });
        }
        let by = DecidedBy::User(answer.decision());
        match answer {
            ApprovalAnswer::Deny { message } => {
                self.record(
                    name,
                    args,
                    Ruling::Deny,
                    verdict.rule.as_deref(),
                    &verdict.reason,
                    by,
                )
                .await;
                let mut text = format!("denied: the user refused {what} ({}).", verdict.reason);
                if let Some(message) = message.filter(|m| !m.trim().is_empty()) {
                    text.push_str(" The user says: ");
                    text.push_str(message.trim());
                } else {
                    text.push_str(" Do not retry it; ask the user how to proceed if you need it.");
                }
                GateOutcome::Refuse(text)
            }
            ApprovalAnswer::Once => {
                let reason = match &notice {
                    Some(message) => format!(
                        "{} (answered {}: {message})",
                        verdict.reason,
                        chosen.as_str()
                    ),
                    None => verdict.reason.clone(),
                };
                self.record(
                    name,
                    args,
                    Ruling::Allow,
                    verdict.rule.as_deref(),
                    &reason,
                    by,
                )
                .await;
                GateOutcome::Run { sandbox: None }
            }
            ApprovalAnswer::Session | ApprovalAnswer::Always => {
                self.record(
                    name,
                    args,
                    Ruling::Allow,
                    kept_rule.as_deref(),
                    &verdict.reason,
                    by,
                )
                .await;
                GateOutcome::Run { sandbox: None }
            }
        }
    }

    async fn record(
        &self,
        tool: &str,
        args: &serde_json::Value,
        decision: Ruling,
        rule: Option<&str>,
        reason: &str,
        by: DecidedBy,
    ) {
        self.permissions
            .audit
            .record(
                Entry {
                    session_id: self.events.session_id(),
                    agent_id: self.events.agent_id(),
                    tool,
                    args,
                    decision,
                    rule,
                    reason,
                    decided_by: by,
                },
                &self.permissions.redactor,
            )
            .await;
    }
}

/// `terminal `rm -rf build`` — the call in a few words.
fn describe(tool: &str, args: &serde_json::Value) -> String {
    let text = summary(args);
    let short: String = text.chars().take(160).collect();
    if short.len() < text.len() {
        format!("{tool} `{short}…`")
    } else {
        format!("{tool} `{short}`")
    }
}

fn denied_by_policy(what: &str, verdict: &Verdict, config: &std::path::Path) -> String {
    if verdict.rule.as_deref() == Some("floor") {
        return format!(
            "denied: {what}: {}. This is on herald's catastrophic floor: no mode, rule or \
             approval can allow it. Do not retry it in another form; tell the user what you \
             wanted to achieve.",
            verdict.reason
        );
    }
    let rule = verdict
        .rule
        .as_deref()
        .map(|r| format!(" (rule `{r}`)"))
        .unwrap_or_default();
    format!(
        "denied: {what}: {}{rule}. A user can change the deny rules under [permissions] in {} \
         or in .herald/permissions.toml.",
        verdict.reason,
        config.display()
    )
}

fn denied_headless(what: &str, verdict: &Verdict, config: &std::path::Path) -> String {
    let allow = verdict
        .allow_rule
        .as_deref()
        .map(|rule| {
            format!(
                "adding \"{rule}\" to `allow` under [permissions] in {}, ",
                config.display()
            )
        })
        .unwrap_or_default();
    format!(
        "denied: {what} needs approval ({}) and this run cannot ask anyone. It did not run. \
         A user could allow it by {allow}running with --mode full-access or --yolo, or running \
         herald interactively where it asks.",
        verdict.reason
    )
}
