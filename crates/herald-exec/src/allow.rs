//! Which tools a script may call: the fixed allow-list plus
//! read-only MCP tools, intersected with the tools the session has.

use herald_tools::ToolRegistry;

/// Tools a script may call when the session has them. Everything else
/// (delegation, memory, `process`, `execute_code` itself, ...) needs the
/// model's judgement or outlives the script, so it stays a normal call.
pub const SANDBOX_TOOLS: [&str; 8] = [
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "terminal",
    "web_search",
    "web_extract",
    "session_search",
];

/// Prefix of tools served by MCP servers; those marked read-only are allowed.
const MCP_PREFIX: &str = "mcp__";

/// The tools of `registry` a script may call, sorted by name.
pub fn allowed_tools(registry: &ToolRegistry) -> Vec<String> {
    registry
        .names()
        .filter(|name| {
            SANDBOX_TOOLS.contains(name)
                || (name.starts_with(MCP_PREFIX) && registry.is_read_only(name))
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_intersected_with_the_allow_list() {
        let registry = herald_tools::builtin::default_registry(1000);
        assert_eq!(
            allowed_tools(&registry),
            [
                "patch",
                "read_file",
                "search_files",
                "terminal",
                "write_file"
            ]
        );
    }
}
