//! The slash commands of the interactive session. The composer completes
//! them with a popup; the app runs them. A command that is not in this
//! list is an error on screen and never reaches the model.

use std::borrow::Cow;

/// One slash command: its name (without the slash), what it takes and
/// what it does, as the completion popup and `/help` show it. Built-in
/// commands are constants; an MCP server's prompts are commands of the
/// session (`/<server>:<prompt>`, see [`SlashCommand::for_prompt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommand {
    pub name: Cow<'static, str>,
    /// The argument it takes, for the popup (`""` for none).
    pub args: Cow<'static, str>,
    pub description: Cow<'static, str>,
}

impl SlashCommand {
    /// A built-in command.
    const fn builtin(name: &'static str, args: &'static str, description: &'static str) -> Self {
        SlashCommand {
            name: Cow::Borrowed(name),
            args: Cow::Borrowed(args),
            description: Cow::Borrowed(description),
        }
    }

    /// The command that fills in an MCP prompt and sends it.
    pub fn for_prompt(prompt: &herald_core::runtime::McpPrompt) -> Self {
        let description = if prompt.description.is_empty() {
            format!("MCP prompt of {}", prompt.server)
        } else {
            format!(
                "{} (MCP prompt)",
                herald_protocol::one_line(&prompt.description)
            )
        };
        SlashCommand {
            name: Cow::Owned(prompt.command()),
            args: Cow::Owned(prompt.usage()),
            description: Cow::Owned(description),
        }
    }
}

/// Every command, in the order the popup lists them.
pub const COMMANDS: &[SlashCommand] = &[
    SlashCommand::builtin("help", "", "keys and commands"),
    SlashCommand::builtin("agents", "", "this session's agents: transcripts, cancel"),
    SlashCommand::builtin("resume", "", "pick a stored session to continue"),
    SlashCommand::builtin("sessions", "", "stored sessions of this directory"),
    SlashCommand::builtin("new", "", "start a new session"),
    SlashCommand::builtin("model", "[NAME]", "the model of the next session"),
    SlashCommand::builtin("todos", "", "the task list"),
    SlashCommand::builtin("memory", "", "what the agent remembers"),
    SlashCommand::builtin("skills", "", "installed skills"),
    SlashCommand::builtin(
        "skill",
        "NAME [request]",
        "send a skill's instructions with a request (user-only skills too)",
    ),
    SlashCommand::builtin("usage", "", "tokens and cost of this session"),
    SlashCommand::builtin("compress", "", "summarise older turns now"),
    SlashCommand::builtin(
        "rewind",
        "",
        "undo turns: files and conversation back to before one",
    ),
    SlashCommand::builtin("steer", "TEXT", "send TEXT at the next tool boundary"),
    SlashCommand::builtin(
        "message",
        "AGENT TEXT",
        "steer a running subagent, or ask a finished one a follow-up",
    ),
    SlashCommand::builtin(
        "heartbeat",
        "[on EVERY|off]",
        "wake this session with HEARTBEAT.md while idle",
    ),
    SlashCommand::builtin("init", "", "write an AGENTS.md for this project"),
    SlashCommand::builtin("exit", "", "leave (also Ctrl-D)"),
];

/// The built-in command named `name` (no slash), if there is one.
pub fn find(name: &str) -> Option<&'static SlashCommand> {
    COMMANDS.iter().find(|command| command.name == name)
}

/// Commands whose name starts with `prefix` (no slash): the built-in ones
/// in list order, then the session's `extra` ones.
pub fn matching(prefix: &str, extra: &[SlashCommand]) -> Vec<SlashCommand> {
    COMMANDS
        .iter()
        .chain(extra)
        .filter(|command| command.name.starts_with(prefix))
        .cloned()
        .collect()
}
