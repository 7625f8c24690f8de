//! Which tools a child gets: the requested toolsets intersected
//! with the parent's, then `allow_tools` narrows and `deny_tools` removes;
//! interactive and parent-only tools never pass down, and the delegation
//! tools are added back (bound to the child) only for orchestrators with
//! depth headroom. A tool a child may not use is absent from its list.

use std::collections::BTreeSet;

use herald_tools::ToolRegistry;

use super::args::ChildTask;

/// Tools no child ever gets: they need the user or the parent's own state.
pub const NEVER_FOR_CHILDREN: &[&str] = &["clarify", "memory", "execute_code"];

/// The delegation tools; an agent that may delegate gets its own instances.
pub const DELEGATION_TOOLS: &[&str] = &[
    "delegate_task",
    "agent_status",
    "agent_list",
    "agent_wait",
    "agent_cancel",
    "agent_send",
    "agent_followup",
];

/// The child's registry without delegation tools, or the error for the model.
pub fn child_registry(parent: &ToolRegistry, task: &ChildTask) -> Result<ToolRegistry, String> {
    let mut registry = parent.clone();
    for name in NEVER_FOR_CHILDREN.iter().chain(DELEGATION_TOOLS) {
        registry.remove(name);
    }
    if let Some(requested) = &task.toolsets {
        let parent_sets: BTreeSet<&str> = parent.toolsets();
        let kept: Vec<String> = requested
            .iter()
            .map(|s| s.trim())
            .filter(|s| parent_sets.contains(s))
            .map(str::to_owned)
            .collect();
        if kept.is_empty() {
            return Err(format!(
                "task {}: none of the requested toolsets ({}) is available to you; yours are: {}",
                task.index,
                requested.join(", "),
                parent_sets.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        // Every kept name is a toolset of the parent, so this cannot fail;
        // toolsets made empty by the removals above are simply gone.
        let available = registry.toolsets();
        let mut kept: Vec<String> = kept
            .into_iter()
            .filter(|s| available.contains(s.as_str()))
            .collect();
        // MCP tools past the schema budget are reached through
        // `mcp_search`/`mcp_call` (toolset `mcp`): a child given a server's
        // toolset gets those two as well (they only see its own tools).
        let search = herald_mcp::SEARCH_TOOLSET;
        if kept.iter().any(|s| s.starts_with("mcp-"))
            && available.contains(search)
            && !kept.iter().any(|s| s == search)
        {
            kept.push(search.to_owned());
        }
        registry
            .retain_toolsets(&kept)
            .map_err(|err| format!("task {}: {err}", task.index))?;
    }
    if let Some(allow) = &task.allow_tools {
        let unknown: Vec<&str> = allow
            .iter()
            .map(String::as_str)
            .filter(|name| parent.get(name).is_none())
            .collect();
        if !unknown.is_empty() {
            return Err(format!(
                "task {}: allow_tools names tools you do not have ({}); yours are: {}",
                task.index,
                unknown.join(", "),
                parent.names().collect::<Vec<_>>().join(", ")
            ));
        }
        let names: Vec<String> = registry.names().map(str::to_owned).collect();
        for name in names {
            if !allow.contains(&name) {
                registry.remove(&name);
            }
        }
    }
    for name in task.deny_tools.iter().flatten() {
        registry.remove(name);
    }
    // An agent definition's tools (already narrowed to the parent's).
    if let Some(only) = task.definition.as_ref().and_then(|d| d.tools.as_ref()) {
        let names: Vec<String> = registry.names().map(str::to_owned).collect();
        for name in names.iter().filter(|n| !only.contains(n)) {
            registry.remove(name);
        }
    }
    Ok(registry)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::delegation::args::ChildRole;

    fn task() -> ChildTask {
        ChildTask {
            index: 0,
            goal: "g".into(),
            context: None,
            toolsets: None,
            role: ChildRole::Leaf,
            allow_tools: None,
            deny_tools: None,
            agent: None,
            definition: None,
            isolation: None,
            model: None,
            private: false,
        }
    }

    fn names(r: &ToolRegistry) -> Vec<&str> {
        r.names().collect()
    }

    #[test]
    fn toolsets_intersect_then_allow_then_deny() {
        let parent = herald_tools::builtin::default_registry(1000);
        let all = child_registry(&parent, &task()).unwrap();
        assert_eq!(names(&all), names(&parent));
        let mut t = task();
        t.toolsets = Some(vec!["file".into(), "web".into()]);
        let files = child_registry(&parent, &t).unwrap();
        assert_eq!(
            names(&files),
            ["patch", "read_file", "search_files", "write_file"]
        );
        t.allow_tools = Some(vec![
            "read_file".into(),
            "search_files".into(),
            "terminal".into(),
        ]);
        t.deny_tools = Some(vec!["search_files".into()]);
        assert_eq!(names(&child_registry(&parent, &t).unwrap()), ["read_file"]);
        t.toolsets = Some(vec!["web".into()]);
        let err = child_registry(&parent, &t).unwrap_err();
        assert!(err.contains("none of the requested toolsets"), "{err}");
        let mut t = task();
        t.allow_tools = Some(vec!["rm_rf".into()]);
        let err = child_registry(&parent, &t).unwrap_err();
        assert!(err.contains("rm_rf") && err.contains("read_file"), "{err}");
    }

    #[test]
    fn an_agent_definition_narrows_after_allow_and_deny() {
        let parent = herald_tools::builtin::default_registry(1000);
        let mut t = task();
        t.definition = Some(crate::delegation::apply::AppliedAgent {
            name: "reviewer".into(),
            path: "/p/reviewer.md".into(),
            instructions: "Review.".into(),
            tools: Some(vec![
                "read_file".into(),
                "search_files".into(),
                "terminal".into(),
            ]),
            model: None,
            max_iterations: None,
        });
        assert_eq!(
            names(&child_registry(&parent, &t).unwrap()),
            ["read_file", "search_files", "terminal"]
        );
        t.deny_tools = Some(vec!["terminal".into()]);
        t.allow_tools = Some(vec!["read_file".into(), "terminal".into(), "patch".into()]);
        assert_eq!(names(&child_registry(&parent, &t).unwrap()), ["read_file"]);
    }
}
