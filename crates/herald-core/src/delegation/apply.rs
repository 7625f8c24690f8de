//! `delegate_task` with `agent: NAME`: the named definition applied to a
//! child task before anything starts — its instructions, its tools
//! narrowed to what the delegating agent may grant, its model and
//! iteration limit. An unknown name or tool is an error for the model.

use herald_llm::ProviderKind;
use herald_tools::ToolRegistry;
use serde::{Deserialize, Serialize};

use super::args::ChildTask;
use super::definitions::{AgentDefs, HERALD_TOOLS, resolve_model};
use super::scope::{DELEGATION_TOOLS, NEVER_FOR_CHILDREN};

/// A definition as applied to one child (journaled with the task, so a
/// restarted child keeps it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedAgent {
    pub name: String,
    /// The file it came from (for messages).
    pub path: String,
    /// The child's instructions.
    pub instructions: String,
    /// The only tools the child may have (names of the delegating agent's
    /// tools); `None` = no narrowing.
    pub tools: Option<Vec<String>>,
    /// The model the child runs on; `None` = the children's usual one.
    pub model: Option<String>,
    pub max_iterations: Option<u32>,
}

/// Applies the definition each task names (`task.agent`). `provider` is
/// the children's provider (model aliases depend on it). Fails, naming the
/// task, on an unknown definition or a tool name that is neither the
/// delegating agent's nor herald's.
pub fn apply_definitions(
    tasks: &mut [ChildTask],
    defs: &AgentDefs,
    parent: &ToolRegistry,
    provider: ProviderKind,
) -> Result<(), String> {
    for task in tasks.iter_mut() {
        let Some(name) = task
            .agent
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        let def = defs
            .find(name)
            .map_err(|err| format!("task {}: {err}", task.index))?;
        let tools = match &def.tools {
            None => None,
            Some(names) => Some(grantable(names, parent).map_err(|err| {
                format!(
                    "task {}: agent {:?} ({}) {err}",
                    task.index,
                    def.name,
                    def.path.display()
                )
            })?),
        };
        let (model, note) = resolve_model(def.model.as_deref(), provider);
        if let Some(note) = note {
            tracing::info!(agent = %def.name, "{note}");
        }
        if task.isolation.is_none() {
            task.isolation = def.isolation.clone();
        }
        task.definition = Some(AppliedAgent {
            name: def.name.clone(),
            path: def.path.display().to_string(),
            instructions: def.instructions.clone(),
            tools,
            model,
            max_iterations: def.max_iterations,
        });
    }
    Ok(())
}

/// The definition's tools the delegating agent can pass to a child. Names
/// of herald tools it lacks (its toolsets leave them out) are dropped; any
/// other name it lacks is an error listing the tools it has.
fn grantable(names: &[String], parent: &ToolRegistry) -> Result<Vec<String>, String> {
    let passable = |name: &str| {
        parent.get(name).is_some()
            && !NEVER_FOR_CHILDREN.contains(&name)
            && !DELEGATION_TOOLS.contains(&name)
    };
    let unknown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| parent.get(n).is_none() && !HERALD_TOOLS.contains(n))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "names tools that do not exist here ({}); valid tool names: {}. Fix the definition's tools line",
            unknown.join(", "),
            parent
                .names()
                .filter(|n| passable(n))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let kept: Vec<String> = names.iter().filter(|n| passable(n)).cloned().collect();
    if kept.is_empty() {
        return Err(format!(
            "allows only tools a child of yours cannot get ({}); a child can get: {}",
            names.join(", "),
            parent
                .names()
                .filter(|n| passable(n))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(kept)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::delegation::args::ChildRole;

    fn load_defs(text: &str) -> (tempfile::TempDir, AgentDefs) {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("agents")).unwrap();
        std::fs::write(home.path().join("agents/reviewer.md"), text).unwrap();
        let defs = AgentDefs::discover(home.path(), home.path());
        assert!(defs.problems.is_empty(), "{:?}", defs.problems);
        (home, defs)
    }

    fn task(agent: Option<&str>) -> ChildTask {
        ChildTask {
            index: 1,
            goal: "g".into(),
            context: None,
            toolsets: None,
            role: ChildRole::Leaf,
            allow_tools: None,
            deny_tools: None,
            agent: agent.map(str::to_owned),
            definition: None,
            isolation: None,
            model: None,
            private: false,
        }
    }

    #[test]
    fn applies_instructions_tools_and_model() {
        let (_home, defs) = load_defs(
            "---\nname: reviewer\ndescription: d\ntools: Read, Grep, Glob, memory, process\nmodel: opus\nmax_iterations: 7\n---\nReview.\n",
        );
        let mut parent = herald_tools::builtin::default_registry(1000);
        parent.remove("process");
        let mut tasks = vec![task(Some("reviewer")), task(None)];
        apply_definitions(&mut tasks, &defs, &parent, ProviderKind::Anthropic).unwrap();
        let applied = tasks[0].definition.clone().unwrap();
        assert_eq!(applied.instructions, "Review.");
        // memory never passes to a child; process is herald's but the parent lacks it.
        assert_eq!(applied.tools.unwrap(), ["read_file", "search_files"]);
        assert_eq!(applied.model.as_deref(), Some("claude-opus-4-1"));
        assert_eq!(applied.max_iterations, Some(7));
        assert_eq!(tasks[1].definition, None);
        let mut tasks = vec![task(Some("reviewer"))];
        apply_definitions(&mut tasks, &defs, &parent, ProviderKind::OpenAi).unwrap();
        assert_eq!(tasks[0].definition.as_ref().unwrap().model, None);
    }

    #[test]
    fn a_definitions_isolation_applies_unless_the_task_sets_its_own() {
        use crate::delegation::worktree::WorktreeBase;
        let (_home, defs) =
            load_defs("---\nname: reviewer\ndescription: d\nisolation: worktree\n---\nx\n");
        let parent = herald_tools::builtin::default_registry(1000);
        let mut own = task(Some("reviewer"));
        own.isolation = Some(WorktreeBase::Ref("v2".into()));
        let mut tasks = vec![task(Some("reviewer")), own, task(None)];
        apply_definitions(&mut tasks, &defs, &parent, ProviderKind::OpenAi).unwrap();
        assert_eq!(tasks[0].isolation, Some(WorktreeBase::Head));
        assert_eq!(tasks[1].isolation, Some(WorktreeBase::Ref("v2".into())));
        assert_eq!(tasks[2].isolation, None);
    }

    #[test]
    fn unknown_names_are_errors_listing_what_exists() {
        let (_home, defs) =
            load_defs("---\nname: reviewer\ndescription: d\ntools: Read, frobnicate\n---\nx\n");
        let parent = herald_tools::builtin::default_registry(1000);
        let mut tasks = vec![task(Some("nobody"))];
        let err = apply_definitions(&mut tasks, &defs, &parent, ProviderKind::OpenAi).unwrap_err();
        assert!(
            err.contains("task 1: no agent definition \"nobody\"; available: reviewer"),
            "{err}"
        );
        let mut tasks = vec![task(Some("reviewer"))];
        let err = apply_definitions(&mut tasks, &defs, &parent, ProviderKind::OpenAi).unwrap_err();
        assert!(
            err.contains("(frobnicate)")
                && err.contains("valid tool names: ")
                && err.contains("read_file"),
            "{err}"
        );
        assert_eq!(tasks[0].definition, None);
        let (_home, defs) =
            load_defs("---\nname: reviewer\ndescription: d\ntools: memory\n---\nx\n");
        let err = apply_definitions(&mut tasks, &defs, &parent, ProviderKind::OpenAi).unwrap_err();
        assert!(err.contains("cannot get (memory)"), "{err}");
    }
}
