use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// herald: a fast agent runtime for LLM tool-calling agents.
#[derive(Debug, Parser)]
#[command(name = "herald", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every session-running command accepts.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct CommonArgs {
    /// Model name (e.g. gpt-4.1, claude-sonnet-4-5).
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// Wire API: openai (any OpenAI-compatible server) or anthropic.
    #[arg(long, global = true)]
    pub provider: Option<String>,
    /// Base URL of the provider API.
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// Model requests per turn before a final summary is requested.
    #[arg(long, global = true)]
    pub max_iterations: Option<u32>,
    /// Comma-separated toolsets to enable (e.g. terminal,file).
    #[arg(long, global = true, value_delimiter = ',')]
    pub toolsets: Option<Vec<String>>,
    /// Working directory for the agent.
    #[arg(long, global = true)]
    pub cwd: Option<PathBuf>,
    /// Permission mode: read-only, workspace-write (default) or full-access
    /// (wins over [permissions] mode).
    #[arg(long, global = true, value_parser = ["read-only", "workspace-write", "full-access"])]
    pub mode: Option<String>,
    /// Full access without approval prompts (the catastrophic floor and
    /// deny rules still hold).
    #[arg(long, global = true, conflicts_with = "mode")]
    pub yolo: bool,
    /// Config file to use instead of $HERALD_HOME/config.toml.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Continue a stored session by id.
    #[arg(long, global = true, conflicts_with = "continue_latest")]
    pub resume: Option<String>,
    /// Continue the latest session started in this directory.
    #[arg(long = "continue", global = true)]
    pub continue_latest: bool,
    /// Start a new session with a copy of a stored session's conversation.
    #[arg(long, global = true, conflicts_with_all = ["resume", "continue_latest"])]
    pub fork: Option<String>,
    /// With --resume/--continue: wait for another herald process that runs
    /// the session to finish, instead of refusing.
    #[arg(long, global = true)]
    pub wait: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run one prompt to completion and print the final answer.
    Run(RunArgs),
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
    /// Serve sessions over HTTP: OpenAI-compatible endpoints and the /api.
    Serve(crate::serve_cmd::ServeArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryAction {
    /// Both memory files with their usage.
    Show {
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
pub(crate) enum SkillsAction {
    /// Every skill found ($HERALD_HOME/skills, .agents/skills, .claude/skills).
    List {
        #[arg(long)]
        json: bool,
    },
    /// A skill's SKILL.md and its linked files.
    View {
        name: String,
        /// Show this linked file instead (e.g. references/api.md).
        #[arg(long)]
        file: Option<String>,
    },
    /// Create a skill in $HERALD_HOME/skills.
    Create {
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
    Delete { name: String },
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
}

#[derive(Debug, Subcommand)]
pub(crate) enum AgentsAction {
    /// Agents, newest first.
    List {
        #[arg(long)]
        json: bool,
        /// Only agents of this session's tree.
        #[arg(long)]
        session: Option<String>,
        /// Only agents with this status (queued, running, completed, failed, timeout, interrupted, error).
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One agent with its result.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Mark an unfinished agent as cancelled so `--resume` does not restart it.
    Cancel {
        id: String,
        #[arg(long)]
        json: bool,
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
    Remove { name: String },
    /// Show one server's configuration.
    Get {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Start every configured server (and an approved project .mcp.json)
    /// and list each one's status, tool count and the tokens its tool
    /// schemas add to every request.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Start one server, list its tools and stop it; calls no tool. Exit 1
    /// when it does not start.
    Test {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Serve herald's agent to MCP clients on stdin/stdout: tools run,
    /// delegate, agent_status, agent_result and session_search. Runs with
    /// --mode (or --yolo); calls that need an approval are denied.
    Serve,
    /// Approve the servers of this project's .mcp.json (as the file is
    /// now): they start in the next session. Shows what will run.
    Approve {
        /// Withdraw the approval instead.
        #[arg(long)]
        revoke: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum PermissionsAction {
    /// Print the decision for one call without running anything, as
    /// {"decision","reason","rule"} (with --json) or a line of text.
    /// `--mode` and `--cwd` (global options) set the mode and working
    /// directory; the config's and the project's rules apply.
    Check {
        /// Tool name (terminal, write_file, read_file, mcp__fs__read, ...).
        tool: String,
        /// The call's arguments as a JSON object, e.g. '{"command":"ls"}'.
        args: String,
        #[arg(long)]
        json: bool,
    },
    /// Stored decisions, oldest first: of one session (and its subagents)
    /// or the latest of all.
    Log {
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
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
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsAction {
    /// Recent sessions, newest first.
    List {
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
    /// Full-text search over every stored message.
    Search {
        query: String,
        #[arg(long)]
        json: bool,
        /// Sessions to return (1-10).
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// A session and its messages as JSON.
    Export {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Import a JSONL transcript (one message object per line) as a new session.
    Import {
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Delete a session (and its subagent sessions).
    Delete {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete sessions with no activity for the given age (e.g. 30d, 12h).
    Prune {
        #[arg(long)]
        older_than: String,
        #[arg(long)]
        json: bool,
    },
}
