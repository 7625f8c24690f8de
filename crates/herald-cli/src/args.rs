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
    /// Run without approval prompts.
    #[arg(long, global = true)]
    pub yolo: bool,
    /// Config file to use instead of $HERALD_HOME/config.toml.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run one prompt to completion and print the final answer.
    Run(RunArgs),
    /// Show or locate the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
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
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigAction {
    /// Print the config file path, creating a commented template if missing.
    Path,
    /// Print the effective configuration (keys redacted).
    Show,
}
