//! The command line. Each subcommand takes only the options it reads, so
//! its `--help` lists nothing it ignores: the session options (model,
//! toolsets, permission mode, which session to continue, …) belong to
//! `herald` itself and `herald run`, a subset to the commands that read
//! one (`doctor`, `serve`, `mcp serve`, `config show`, …), and only
//! `--config` is global. The front ends then see one [`CommonArgs`]: the
//! top level's values with the subcommand's own winning (so both `herald
//! --model M run P` and `herald run --model M P` work).

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand};

/// herald: a fast agent runtime for LLM tool-calling agents.
#[derive(Debug, Parser)]
#[command(name = "herald", version, about, long_about = None)]
pub(crate) struct Cli {
    /// Config file to use instead of $HERALD_HOME/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionArgs,
    /// Start an interactive session with this first prompt.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The options the front ends read: the top level's, with the
    /// subcommand's own winning. Fails as clap does (exit 2) when the two
    /// levels together give options that exclude each other, or a prompt
    /// comes with a subcommand.
    pub(crate) fn common(&self) -> Result<CommonArgs, clap::Error> {
        let mut common = CommonArgs {
            config: self.config.clone(),
            ..CommonArgs::default()
        };
        self.session.apply(&mut common);
        if let Some(command) = &self.command {
            if self.prompt.is_some() {
                return Err(usage_error(
                    ErrorKind::ArgumentConflict,
                    "a first prompt starts an interactive session and cannot come with a subcommand; use `herald run PROMPT` for a one-shot run",
                ));
            }
            command.apply(&mut common);
        }
        common.check()?;
        Ok(common)
    }
}

fn usage_error(kind: ErrorKind, message: impl std::fmt::Display) -> clap::Error {
    Cli::command().error(kind, message)
}

/// What the front ends read from the command line, merged from the top
/// level and the subcommand (see [`Cli::common`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct CommonArgs {
    pub model: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub max_iterations: Option<u32>,
    pub toolsets: Option<Vec<String>>,
    pub cwd: Option<PathBuf>,
    pub reasoning_effort: Option<String>,
    pub mode: Option<String>,
    pub yolo: bool,
    pub config: Option<PathBuf>,
    pub resume: Option<String>,
    pub continue_latest: bool,
    pub fork: Option<String>,
    pub wait: bool,
}

impl CommonArgs {
    /// The exclusions clap checks within one level, checked again across
    /// the two.
    fn check(&self) -> Result<(), clap::Error> {
        if self.yolo && self.mode.is_some() {
            return Err(usage_error(
                ErrorKind::ArgumentConflict,
                "the argument '--yolo' cannot be used with '--mode <MODE>'",
            ));
        }
        let opens = [
            self.resume.is_some(),
            self.continue_latest,
            self.fork.is_some(),
        ];
        if opens.iter().filter(|given| **given).count() > 1 {
            return Err(usage_error(
                ErrorKind::ArgumentConflict,
                "--resume, --continue and --fork cannot be used with one another; choose one",
            ));
        }
        Ok(())
    }
}

/// Replaces `slot` with `value` when the command line gave one.
fn set<T: Clone>(slot: &mut Option<T>, value: &Option<T>) {
    if value.is_some() {
        slot.clone_from(value);
    }
}

/// Which model answers, and where it is served.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ModelArgs {
    /// Model name (e.g. gpt-4.1, claude-sonnet-4-5, qwen2.5-coder:7b).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Wire API: openai (any OpenAI-compatible server) or anthropic.
    #[arg(long, value_name = "API")]
    pub provider: Option<String>,
    /// Base URL of the provider API (e.g. http://localhost:11434/v1).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

impl ModelArgs {
    fn apply(&self, common: &mut CommonArgs) {
        set(&mut common.model, &self.model);
        set(&mut common.provider, &self.provider);
        set(&mut common.base_url, &self.base_url);
    }
}

/// How much the agent does in a turn, and with which tools.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct AgentArgs {
    /// Model requests per turn before a final summary is requested.
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Comma-separated toolsets to enable (e.g. terminal,file).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub toolsets: Option<Vec<String>>,
    /// reasoning_effort for OpenAI-compatible reasoning models: low, medium
    /// or high (overrides the config's).
    #[arg(long, value_name = "LEVEL")]
    pub reasoning_effort: Option<String>,
}

impl AgentArgs {
    fn apply(&self, common: &mut CommonArgs) {
        set(&mut common.max_iterations, &self.max_iterations);
        set(&mut common.toolsets, &self.toolsets);
        set(&mut common.reasoning_effort, &self.reasoning_effort);
    }
}

/// The directory the agent (or the project's files) lives in.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct CwdArgs {
    /// Working directory (the project: its .mcp.json, .herald/ rules and
    /// skills) [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

impl CwdArgs {
    fn apply(&self, common: &mut CommonArgs) {
        set(&mut common.cwd, &self.cwd);
    }
}

/// What the agent may do without asking.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct PolicyArgs {
    /// Permission mode: read-only, workspace-write (default) or full-access
    /// (wins over [permissions] mode).
    #[arg(long, value_parser = ["read-only", "workspace-write", "full-access"])]
    pub mode: Option<String>,
    /// Full access without approval prompts (the catastrophic floor and
    /// deny rules still hold).
    #[arg(long, conflicts_with = "mode")]
    pub yolo: bool,
}

impl PolicyArgs {
    fn apply(&self, common: &mut CommonArgs) {
        set(&mut common.mode, &self.mode);
        common.yolo |= self.yolo;
    }
}

/// Which stored session to continue.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct OpenArgs {
    /// Continue a stored session by id (or a unique start of it).
    #[arg(long, value_name = "ID", conflicts_with = "continue_latest")]
    pub resume: Option<String>,
    /// Continue the latest session started in this directory.
    #[arg(long = "continue")]
    pub continue_latest: bool,
    /// Start a new session with a copy of a stored session's conversation
    /// (by id or a unique start of it); `ID@TURN` copies it as it was
    /// before user turn TURN.
    #[arg(long, value_name = "ID[@TURN]", conflicts_with_all = ["resume", "continue_latest"])]
    pub fork: Option<String>,
    /// With --resume/--continue: wait for another herald process that runs
    /// the session to finish, instead of refusing.
    #[arg(long)]
    pub wait: bool,
}

impl OpenArgs {
    fn apply(&self, common: &mut CommonArgs) {
        set(&mut common.resume, &self.resume);
        common.continue_latest |= self.continue_latest;
        set(&mut common.fork, &self.fork);
        common.wait |= self.wait;
    }
}

/// What a server of sessions (`herald serve`, `herald mcp serve`) runs them
/// with.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ServiceArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub cwd: CwdArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

impl ServiceArgs {
    pub(crate) fn apply(&self, common: &mut CommonArgs) {
        self.model.apply(common);
        self.agent.apply(common);
        self.cwd.apply(common);
        self.policy.apply(common);
    }
}

/// Every option of a command that runs a session (`herald`, `herald run`).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct SessionArgs {
    #[command(flatten)]
    pub service: ServiceArgs,
    #[command(flatten)]
    pub open: OpenArgs,
}

impl SessionArgs {
    fn apply(&self, common: &mut CommonArgs) {
        self.service.apply(common);
        self.open.apply(common);
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run one prompt to completion and print the final answer.
    Run(RunArgs),
    /// Batch runs: many prompts from a JSONL or CSV file, one headless
    /// session each; export their trajectories for training.
    Batch {
        #[command(subcommand)]
        action: crate::batch_cmd::BatchAction,
    },
    /// Run items of a PostgreSQL queue (`herald batch run --queue`) on
    /// this machine, with its own store, until stopped.
    Worker(Box<crate::queue_cmd::WorkerArgs>),
    /// Evaluate the agent on a suite of tasks with checks and a judge;
    /// compare two runs.
    Eval {
        #[command(subcommand)]
        action: crate::eval_cmd::EvalAction,
    },
    /// Scheduled jobs: add, list, show, edit, pause, resume, run now,
    /// remove, and the ledger of their runs. `herald daemon` runs them.
    Cron {
        #[command(subcommand)]
        action: crate::cron_cmd::CronAction,
    },
    /// Run scheduled jobs when they are due (one active scheduler per
    /// HERALD_HOME; a second one stands by).
    Daemon(crate::cron_cmd::DaemonArgs),
    /// Wake a session every so often with HEARTBEAT.md while it is idle:
    /// on, off, status.
    Heartbeat {
        #[command(subcommand)]
        action: crate::heartbeat_cmd::HeartbeatAction,
    },
    /// Check the configuration, provider, store and execute_code support.
    Doctor(DoctorArgs),
    /// List, show, search, export, import, delete and prune stored sessions.
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// List, show and cancel subagents (background agents survive restarts).
    Agents {
        #[command(subcommand)]
        action: AgentsAction,
    },
    /// Check what the permission policy decides for a call, and read the
    /// log of decisions.
    Permissions {
        #[command(subcommand)]
        action: PermissionsAction,
    },
    /// Show or locate the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Add, remove and show the MCP servers of the configuration.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Show or edit the agent's memory (MEMORY.md and USER.md).
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// List, view, create and delete skills.
    Skills {
        #[command(subcommand)]
        action: SkillsAction,
    },
    /// List, show and delete learnings (fixes the agent saved after failures).
    Learnings {
        #[command(subcommand)]
        action: LearningsAction,
    },
    /// List the hooks that run, and approve a project's .herald/hooks.toml.
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
    /// A session's checkpoints: one per user turn, with the files it changed.
    Checkpoints {
        #[command(subcommand)]
        action: CheckpointsAction,
    },
    /// Restore a session's files and conversation to before one of its
    /// user turns (shell effects outside the working tree are not covered).
    Rewind(RewindArgs),
    /// Serve sessions over HTTP: OpenAI-compatible endpoints and the /api.
    Serve(crate::serve_cmd::ServeArgs),
    /// Be an Agent Client Protocol agent on stdin/stdout, for editors (Zed,
    /// JetBrains IDEs, Neovim, VS Code through a bridge).
    ///
    /// The editor starts `herald acp` and speaks ACP (JSON-RPC, one message
    /// per line) to it; stdout carries only ACP messages, logs go to
    /// $HERALD_HOME/logs. Sessions are opened in the directory the editor
    /// names, with its MCP servers added; each approval herald needs is
    /// asked through the editor (allow once, for the session, always, or
    /// deny), and the editor's mode picker switches between read-only,
    /// workspace-write and full-access. Subagents show as sessions of
    /// their own when the editor supports them, else as nested tool calls.
    /// Setup for Zed and JetBrains: docs/acp.md.
    #[command(
        after_help = "Zed (settings.json):\n  \"agent_servers\": { \"herald\": { \"type\": \"custom\", \"command\": \"herald\", \"args\": [\"acp\"] } }\n\nJetBrains (~/.jetbrains/acp.json):\n  { \"agent_servers\": { \"herald\": { \"command\": \"herald\", \"args\": [\"acp\"] } } }"
    )]
    Acp(ServiceArgs),
    /// Spend, tokens and cache-hit share from the store, by day, model,
    /// session or project.
    Usage(crate::usage_cmd::UsageArgs),
    /// The system prompt a new session here would start with: its layers,
    /// sizes and budgets, context files and @imports (no provider needed).
    Context(crate::context_cmd::ContextArgs),
}

impl Command {
    /// Puts the options this subcommand was given over the top level's.
    fn apply(&self, common: &mut CommonArgs) {
        match self {
            Command::Run(args) => args.session.apply(common),
            Command::Batch {
                action: crate::batch_cmd::BatchAction::Run(args),
            } => args.service.apply(common),
            Command::Batch { .. } => {}
            Command::Eval {
                action: crate::eval_cmd::EvalAction::Run(args),
            } => args.service.apply(common),
            Command::Eval { .. } => {}
            Command::Worker(args) => args.service.apply(common),
            Command::Doctor(args) => {
                args.model.apply(common);
                args.cwd.apply(common);
            }
            Command::Serve(args) => args.service.apply(common),
            Command::Acp(service) => service.apply(common),
            Command::Context(args) => {
                args.model.apply(common);
                args.cwd.apply(common);
            }
            Command::Mcp { action } => match action {
                McpAction::Serve(service) => service.apply(common),
                McpAction::List { cwd, .. }
                | McpAction::Test { cwd, .. }
                | McpAction::Approve { cwd, .. } => cwd.apply(common),
                McpAction::Add { .. } | McpAction::Remove { .. } | McpAction::Get { .. } => {}
            },
            Command::Permissions {
                action: PermissionsAction::Check { cwd, policy, .. },
            } => {
                cwd.apply(common);
                policy.apply(common);
            }
            Command::Skills {
                action: SkillsAction::List { cwd, .. } | SkillsAction::View { cwd, .. },
            } => cwd.apply(common),
            Command::Hooks {
                action: HooksAction::List { cwd, .. } | HooksAction::Approve { cwd, .. },
            } => cwd.apply(common),
            Command::Agents {
                action: AgentsAction::Defs { cwd, .. },
            } => cwd.apply(common),
            Command::Config {
                action:
                    ConfigAction::Show {
                        model, agent, cwd, ..
                    },
            } => {
                model.apply(common);
                agent.apply(common);
                cwd.apply(common);
            }
            Command::Sessions { .. }
            | Command::Agents { .. }
            | Command::Memory { .. }
            | Command::Permissions { .. }
            | Command::Skills { .. }
            | Command::Learnings { .. }
            | Command::Checkpoints { .. }
            | Command::Cron { .. }
            | Command::Daemon(_)
            | Command::Heartbeat { .. }
            | Command::Rewind(_)
            | Command::Usage(_)
            | Command::Config { .. } => {}
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum HooksAction {
    /// The hooks of config.toml and of this project's .herald/hooks.toml,
    /// and whether the project's run (they need an approval).
    List {
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cwd: CwdArgs,
    },
    /// Approve this project's .herald/hooks.toml as it is now: its hooks
    /// run from the next session on; a change needs a new approval. Shows
    /// what will run.
    Approve {
        /// Withdraw the approval instead.
        #[arg(long)]
        revoke: bool,
        #[command(flatten)]
        cwd: CwdArgs,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum CheckpointsAction {
    /// The checkpoints of a session, by turn: time, files changed, +/-
    /// lines and the turn's prompt.
    List {
        /// The session's id, or a unique start of it (`ses_` may be left out).
        session: String,
        /// Include turns a rewind left out.
        #[arg(long)]
        all: bool,
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete checkpoints older than `[checkpoints] keep_days` and, while
    /// the snapshots take more than `max_size_mb`, the oldest of the rest;
    /// their turns can no longer be rewound (conversations are kept).
    Prune {
        /// Days to keep instead of `[checkpoints] keep_days` (0 = no limit by age).
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(0..=36_500))]
        keep_days: Option<u32>,
        /// MiB to keep instead of `[checkpoints] max_size_mb` (0 = no size limit).
        #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
        max_size_mb: Option<u64>,
        /// Print what was pruned as JSON.
        #[arg(long)]
        json: bool,
        /// Prune only when the daily prune is due (the background prune
        /// herald starts with a session).
        #[arg(long, hide = true)]
        if_due: bool,
    },
}

/// `herald rewind SESSION --turn N`.
#[derive(Debug, Args)]
pub(crate) struct RewindArgs {
    /// The session's id, or a unique start of it (`ses_` may be left out).
    pub session: String,
    /// The user turn to go back to before (1-based, as `herald checkpoints
    /// list` shows it).
    #[arg(long, value_name = "N")]
    pub turn: u32,
    /// Restore only the files; the conversation stays as it is.
    #[arg(long, conflicts_with = "conversation_only")]
    pub files_only: bool,
    /// Rewind only the conversation; the files stay as they are.
    #[arg(long)]
    pub conversation_only: bool,
    /// Go ahead without asking (needed when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Only show what would change.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryAction {
    /// Both memory files with their usage.
    Show {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Open a memory file in $VISUAL or $EDITOR (prints its path when neither is set).
    Edit {
        /// memory (your agent's notes, MEMORY.md) or user (your profile, USER.md).
        #[arg(long, default_value = "memory", value_parser = ["memory", "user"])]
        target: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum LearningsAction {
    /// Every learning (all projects), most recently used or saved first.
    List {
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
        /// How many learnings to list (1-200).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One learning with all its fields.
    Show {
        /// The learning's id (`12` or `#12`, as `herald learnings list` shows it).
        id: String,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete one learning.
    Delete {
        /// The learning's id (`12` or `#12`).
        id: String,
        /// Print the deleted learning as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum SkillsAction {
    /// Every skill found ($HERALD_HOME/skills, .agents/skills, .claude/skills).
    List {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cwd: CwdArgs,
    },
    /// A skill's SKILL.md and its linked files.
    View {
        /// The skill's name (as `herald skills list` shows it).
        name: String,
        /// Show this linked file instead (e.g. references/api.md).
        #[arg(long)]
        file: Option<String>,
        #[command(flatten)]
        cwd: CwdArgs,
    },
    /// Create a skill in $HERALD_HOME/skills.
    Create {
        /// The new skill's name: lowercase letters, digits and `-`.
        name: String,
        /// When the skill should be used (shown in every session's skills index).
        #[arg(long)]
        description: String,
        /// Optional category.
        #[arg(long)]
        category: Option<String>,
        /// Markdown body from this file (`-` reads stdin); a template otherwise.
        #[arg(long)]
        body: Option<PathBuf>,
    },
    /// Delete a skill from $HERALD_HOME/skills.
    Delete {
        /// The skill's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The prompt; `-` reads it from standard input.
    pub prompt: String,
    /// Print the event stream as JSON lines instead of the final answer.
    #[arg(long)]
    pub json: bool,
    /// With --json, also emit assistant.delta events as text streams.
    #[arg(long)]
    pub stream: bool,
    #[command(flatten)]
    pub session: SessionArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AgentsAction {
    /// Agents, newest first.
    List {
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
        /// Only agents of this session's tree (id or a unique start of it).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Only agents with this status (queued, running, suspended, completed, failed, error, timeout, interrupted, cancelled).
        #[arg(long, value_parser = agent_status)]
        status: Option<herald_protocol::AgentStatus>,
        /// How many agents to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One agent with its result.
    Show {
        /// The agent's id, or a unique start of it.
        id: String,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Mark an unfinished agent as cancelled so `--resume` does not restart it.
    Cancel {
        /// The agent's id, or a unique start of it.
        id: String,
        /// Print the agent as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Merge the branch of an agent that ran in its own worktree
    /// (`isolation: "worktree"`) into its repository's checkout: a
    /// fast-forward when possible, else a merge commit; on conflicts
    /// nothing changes and they are listed. Then the worktree and branch go.
    Merge {
        /// The agent's id, or a unique start of it.
        id: String,
        /// Keep the worktree and its branch after merging.
        #[arg(long)]
        keep: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The worktrees of isolated agents that still exist, with their
    /// branch, commits and whether uncommitted changes are left.
    Worktrees {
        /// Remove those whose agent no longer runs (branches with unmerged
        /// commits are kept; worktrees with uncommitted changes too, unless --force).
        #[arg(long)]
        prune: bool,
        /// With --prune: also remove worktrees with uncommitted changes.
        #[arg(long, requires = "prune")]
        force: bool,
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Agent definitions delegate_task can name (.agents/agents,
    /// .claude/agents, $HERALD_HOME/agents): name, file, tools, model.
    Defs {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cwd: CwdArgs,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpAction {
    /// Add a server to [mcp_servers] in config.toml: a stdio server after
    /// `--` (`herald mcp add fs -- npx -y @modelcontextprotocol/server-filesystem .`)
    /// or a streamable HTTP server with --url. Its tools come in the next session.
    Add {
        /// Server name: letters, digits, `-` and `_` (tools become mcp__NAME__TOOL).
        name: String,
        /// Streamable HTTP endpoint instead of a command.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// HTTP header `K=V` (repeatable; with --url).
        #[arg(long = "header", requires = "url")]
        headers: Vec<String>,
        /// Variable whose value is sent as the bearer token (with --url).
        #[arg(long, requires = "url")]
        bearer_token_env_var: Option<String>,
        /// Environment variable `K=V` for a stdio server (repeatable).
        #[arg(long = "env")]
        envs: Vec<String>,
        /// Replace a server of the same name.
        #[arg(long)]
        force: bool,
        /// The command and its arguments (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Remove a server from [mcp_servers].
    Remove {
        /// The server's name.
        name: String,
    },
    /// Show one server's configuration.
    Get {
        /// The server's name.
        name: String,
        /// Print one JSON object instead of TOML.
        #[arg(long)]
        json: bool,
    },
    /// Start every configured server (and an approved project .mcp.json)
    /// and list each one's status, tool count and the tokens its tool
    /// schemas add to every request.
    List {
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cwd: CwdArgs,
    },
    /// Start one server, list its tools and stop it; calls no tool. Exit 1
    /// when it does not start.
    Test {
        /// The server's name (from config.toml or the project's .mcp.json).
        name: String,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cwd: CwdArgs,
    },
    /// Serve herald's agent to MCP clients on stdin/stdout: tools run,
    /// delegate, agent_status, agent_result and session_search. Runs with
    /// --mode (or --yolo); calls that need an approval are denied.
    Serve(ServiceArgs),
    /// Approve the servers of this project's .mcp.json (as the file is
    /// now): they start in the next session. Shows what will run.
    Approve {
        /// Withdraw the approval instead.
        #[arg(long)]
        revoke: bool,
        #[command(flatten)]
        cwd: CwdArgs,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum PermissionsAction {
    /// Print the decision for one call without running anything, as
    /// {"decision","reason","rule"} (with --json) or a line of text. The
    /// config's and the project's rules apply.
    Check {
        /// Tool name (terminal, write_file, read_file, mcp__fs__read, ...).
        tool: String,
        /// The call's arguments as a JSON object, e.g. '{"command":"ls"}'.
        args: String,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cwd: CwdArgs,
        #[command(flatten)]
        policy: PolicyArgs,
    },
    /// Stored decisions, oldest first: of one session (and its subagents)
    /// or the latest of all.
    Log {
        /// Only this session's tree (id or a unique start of it).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
        /// How many decisions to show.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub cwd: CwdArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigAction {
    /// Print the config file path, creating a commented template if missing.
    Path,
    /// Print every section's effective values (keys redacted); needs no API key.
    Show {
        /// Print one JSON object instead of TOML.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        agent: AgentArgs,
        #[command(flatten)]
        cwd: CwdArgs,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsAction {
    /// Recent sessions, newest first.
    List {
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
        /// How many sessions to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Include subagent sessions.
        #[arg(long)]
        all: bool,
    },
    /// One session with its messages, or with --events its stored event stream.
    Show {
        /// The session's id, or a unique start of it (`ses_` may be left out).
        id: String,
        /// JSON; with --events one event per line.
        #[arg(long)]
        json: bool,
        /// Show the session's events (tool calls, usage, subagents,
        /// execute_code's inner calls, run.completed) instead of its messages.
        #[arg(long)]
        events: bool,
        /// With --events: only events whose id is greater than this.
        #[arg(long, value_name = "ID", requires = "events", default_value_t = 0)]
        after: i64,
    },
    /// Full-text search over every stored message and each session's title
    /// and summary.
    Search {
        /// Words to find (FTS5 syntax: "a phrase", OR, prefix*).
        query: String,
        /// Print a JSON array instead of text.
        #[arg(long)]
        json: bool,
        /// Sessions to return (1-10).
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Only sessions active since then: a date (2026-11-20, UTC), a date
        /// and time (2026-11-20T14:30) or an age (7d, 24h, 30m).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Only sessions started before then (a date counts whole).
        #[arg(long, value_name = "WHEN")]
        until: Option<String>,
    },
    /// A session as JSONL (header with metadata and system prompt, then one
    /// message per line) that `sessions import` reads back unchanged.
    Export {
        /// The session's id, or a unique start of it (`ses_` may be left out).
        id: String,
        /// `jsonl` (default, re-importable) or `json` (one pretty document
        /// with usage, for people).
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
        /// Same as `--format json`.
        #[arg(long)]
        json: bool,
    },
    /// Import a transcript as a new session: Claude Code or Codex session
    /// JSONL, Hermes JSONL, OpenAI `{"messages": [...]}` lines, chat-message
    /// JSONL or a herald export (the format is detected).
    Import {
        /// The transcript file.
        path: PathBuf,
        /// Print the import report as JSON.
        #[arg(long)]
        json: bool,
        /// Import nothing when any record is malformed (by default such
        /// records are left out and reported, and the rest is imported).
        #[arg(long)]
        strict: bool,
    },
    /// Delete a session (and its subagent sessions); shows it and asks first.
    Delete {
        /// The session's id, or a unique start of it (`ses_` may be left out).
        id: String,
        /// Delete without asking (needed when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Only show what would be deleted.
        #[arg(long)]
        dry_run: bool,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete sessions with no activity for the given age (e.g. 30d, 12h);
    /// lists them and asks first.
    Prune {
        /// Age of the last activity in the session's tree: a number with d,
        /// h, m or s (e.g. 30d).
        #[arg(long, value_name = "AGE")]
        older_than: String,
        /// Delete without asking (needed when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Only list what would be deleted.
        #[arg(long)]
        dry_run: bool,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `herald sessions export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExportFormat {
    /// A header record, then one message per line (re-importable).
    Jsonl,
    /// One pretty JSON document with messages and usage.
    Json,
}

/// Parses `--status` as an agent status, naming the valid ones when it is not.
fn agent_status(word: &str) -> Result<herald_protocol::AgentStatus, String> {
    herald_protocol::AgentStatus::parse(word).ok_or_else(|| {
        let valid: Vec<&str> = herald_protocol::AgentStatus::ALL
            .iter()
            .map(|s| s.as_str())
            .collect();
        format!(
            "'{word}' is not an agent status; use one of {}",
            valid.join(", ")
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<(Cli, CommonArgs), clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("herald").chain(args.iter().copied()))?;
        let common = cli.common()?;
        Ok((cli, common))
    }

    /// Every argument of `command` and its subcommands, with the path of
    /// subcommand names leading to it.
    fn walk(command: &clap::Command, path: &str, out: &mut Vec<(String, String, bool)>) {
        for arg in command.get_arguments() {
            let help = arg.get_help().or(arg.get_long_help());
            out.push((
                path.to_owned(),
                arg.get_id().to_string(),
                help.is_some_and(|h| !h.to_string().trim().is_empty()),
            ));
        }
        for sub in command.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_of_every_subcommand_has_help_text() {
        let mut command = Cli::command();
        command.build();
        let mut args = Vec::new();
        walk(&command, "herald", &mut args);
        assert!(
            args.len() > 60,
            "the walk found only {} arguments",
            args.len()
        );
        let missing: Vec<String> = args
            .iter()
            .filter(|(_, _, has_help)| !has_help)
            .map(|(path, id, _)| format!("{path}: {id}"))
            .collect();
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }

    #[test]
    fn subcommands_list_only_the_options_they_read() {
        let mut command = Cli::command();
        command.build();
        let longs = |path: &[&str]| -> Vec<String> {
            let mut cmd = &command;
            for name in path {
                cmd = cmd.find_subcommand(name).expect("subcommand");
            }
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned))
                .collect()
        };
        let list = longs(&["sessions", "list"]);
        for absent in ["model", "toolsets", "resume", "mode", "yolo", "cwd", "wait"] {
            assert!(
                !list.contains(&absent.to_owned()),
                "sessions list has --{absent}"
            );
        }
        assert!(list.contains(&"config".to_owned()), "{list:?}");
        let run = longs(&["run"]);
        for present in [
            "model", "toolsets", "resume", "fork", "mode", "yolo", "cwd", "wait",
        ] {
            assert!(run.contains(&present.to_owned()), "run lacks --{present}");
        }
        let doctor = longs(&["doctor"]);
        assert!(doctor.contains(&"model".to_owned()) && !doctor.contains(&"resume".to_owned()));
        let mcp_serve = longs(&["mcp", "serve"]);
        assert!(mcp_serve.contains(&"yolo".to_owned()) && !mcp_serve.contains(&"fork".to_owned()));
    }

    #[test]
    fn session_options_work_before_and_after_run_and_the_subcommand_wins() {
        let (_, common) = parse(&["--model", "a", "--cwd", "/x", "run", "p"]).unwrap();
        assert_eq!(common.model.as_deref(), Some("a"));
        assert_eq!(common.cwd.as_deref(), Some(std::path::Path::new("/x")));
        let (_, common) = parse(&["--model", "a", "run", "--model", "b", "p"]).unwrap();
        assert_eq!(common.model.as_deref(), Some("b"));
        let (_, common) = parse(&["run", "--yolo", "--resume", "ses_1", "p"]).unwrap();
        assert!(common.yolo);
        assert_eq!(common.resume.as_deref(), Some("ses_1"));
        let (_, common) = parse(&[
            "--cwd",
            "/w",
            "--mode",
            "read-only",
            "permissions",
            "check",
            "t",
            "{}",
        ])
        .unwrap();
        assert_eq!(common.mode.as_deref(), Some("read-only"));
        let (_, common) = parse(&["mcp", "serve", "--yolo"]).unwrap();
        assert!(common.yolo);
        // Options that exclude each other do so across the two levels too.
        let err = parse(&["--mode", "read-only", "run", "--yolo", "p"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ArgumentConflict);
        let err = parse(&["--resume", "a", "run", "--fork", "b", "p"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ArgumentConflict);
        // A subcommand does not take options it does not read.
        assert!(parse(&["sessions", "list", "--model", "x"]).is_err());
    }

    #[test]
    fn a_first_prompt_starts_the_interactive_session_and_subcommand_names_win() {
        let (cli, _) = parse(&["fix the build"]).unwrap();
        assert_eq!(cli.prompt.as_deref(), Some("fix the build"));
        assert!(cli.command.is_none());
        let (cli, common) = parse(&["--model", "m", "--resume", "ses_1", "go on"]).unwrap();
        assert_eq!(cli.prompt.as_deref(), Some("go on"));
        assert_eq!(common.resume.as_deref(), Some("ses_1"));
        let (cli, _) = parse(&["run", "x"]).unwrap();
        assert!(cli.prompt.is_none());
        assert!(matches!(cli.command, Some(Command::Run(ref run)) if run.prompt == "x"));
        let (cli, _) = parse(&["sessions", "list"]).unwrap();
        assert!(cli.prompt.is_none() && cli.command.is_some());
        let (cli, _) = parse(&[]).unwrap();
        assert!(cli.prompt.is_none() && cli.command.is_none());
    }
}
