//! The slash commands of the interactive session. The composer completes
//! them with a popup; the app runs them. A command that is not in this
//! list is an error on screen and never reaches the model.

/// One slash command: its name (without the slash), what it takes and
/// what it does, as the completion popup and `/help` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlashCommand {
    pub name: &'static str,
    /// The argument it takes, for the popup (`""` for none).
    pub args: &'static str,
    pub description: &'static str,
}

/// Every command, in the order the popup lists them.
pub const COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "help",
        args: "",
        description: "keys and commands",
    },
    SlashCommand {
        name: "agents",
        args: "",
        description: "this session's agents: transcripts, cancel",
    },
    SlashCommand {
        name: "resume",
        args: "",
        description: "pick a stored session to continue",
    },
    SlashCommand {
        name: "sessions",
        args: "",
        description: "stored sessions of this directory",
    },
    SlashCommand {
        name: "new",
        args: "",
        description: "start a new session",
    },
    SlashCommand {
        name: "model",
        args: "[NAME]",
        description: "the model of the next session",
    },
    SlashCommand {
        name: "todos",
        args: "",
        description: "the task list",
    },
    SlashCommand {
        name: "memory",
        args: "",
        description: "what the agent remembers",
    },
    SlashCommand {
        name: "skills",
        args: "",
        description: "installed skills",
    },
    SlashCommand {
        name: "skill",
        args: "NAME [request]",
        description: "send a skill's instructions with a request (user-only skills too)",
    },
    SlashCommand {
        name: "usage",
        args: "",
        description: "tokens and cost of this session",
    },
    SlashCommand {
        name: "compress",
        args: "",
        description: "summarise older turns now",
    },
    SlashCommand {
        name: "rewind",
        args: "",
        description: "undo turns: files and conversation back to before one",
    },
    SlashCommand {
        name: "steer",
        args: "TEXT",
        description: "send TEXT at the next tool boundary",
    },
    SlashCommand {
        name: "init",
        args: "",
        description: "write an AGENTS.md for this project",
    },
    SlashCommand {
        name: "exit",
        args: "",
        description: "leave (also Ctrl-D)",
    },
];

/// The command named `name` (no slash), if there is one.
pub fn find(name: &str) -> Option<&'static SlashCommand> {
    COMMANDS.iter().find(|command| command.name == name)
}

/// Commands whose name starts with `prefix` (no slash), in list order.
pub fn matching(prefix: &str) -> impl Iterator<Item = &'static SlashCommand> + '_ {
    COMMANDS
        .iter()
        .filter(move |command| command.name.starts_with(prefix))
}
