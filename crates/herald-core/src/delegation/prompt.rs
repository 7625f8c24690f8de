//! The focused system prompt of a child agent: its task, the context the
//! parent gave, where to work, what it may delegate, and how to report back.

use std::path::Path;

use super::args::{ChildRole, ChildTask};

/// Depth facts an orchestrator's prompt states, so it does not guess.
#[derive(Debug, Clone, Copy)]
pub struct DepthFacts {
    /// The child's depth (the top-level agent is 0).
    pub depth: u32,
    /// `[delegation] max_spawn_depth`, clamped.
    pub max_depth: u32,
    /// Whether this child has `delegate_task`.
    pub can_delegate: bool,
}

/// Builds the child's system prompt.
pub fn child_system_prompt(task: &ChildTask, cwd: &Path, depth: DepthFacts) -> String {
    let mut prompt = String::with_capacity(1024 + task.goal.len());
    prompt.push_str(
        "You are a subagent of herald: a focused agent working on one delegated task with tools on the user's machine. \
The agent that delegated it sees only your final answer, not your steps.\n\n",
    );
    // An agent definition's instructions come first: children of the same
    // definition share this prefix.
    if let Some(def) = &task.definition {
        prompt.push_str(&format!("# Instructions (agent {})\n", def.name));
        prompt.push_str(def.instructions.trim());
        prompt.push_str("\n\n");
    }
    prompt.push_str("# Task\n");
    prompt.push_str(task.goal.trim());
    if let Some(context) = task.context.as_deref().filter(|c| !c.trim().is_empty()) {
        prompt.push_str("\n\n# Context from the delegating agent\n");
        prompt.push_str(context.trim());
    }
    prompt.push_str(&format!(
        "\n\n# Working directory\n{}\nUse this path for files and commands unless the task names another; do not assume other locations exist — look first.",
        cwd.display()
    ));
    if depth.can_delegate {
        let next = depth.depth + 1;
        let grandchildren = if next < depth.max_depth {
            "may delegate further if you make them orchestrators"
        } else {
            "cannot delegate further"
        };
        prompt.push_str(&format!(
            "\n\n# Delegation\nYou are an orchestrator at depth {} of at most {}. You may split the task with delegate_task; your children (depth {next}) {grandchildren}. Delegate only independent, self-contained pieces and give each child the context it needs.",
            depth.depth, depth.max_depth
        ));
    } else if task.role == ChildRole::Orchestrator {
        prompt.push_str(&format!(
            "\n\n# Delegation\nYou are at depth {} of at most {}: you cannot delegate; do the work yourself.",
            depth.depth, depth.max_depth
        ));
    }
    prompt.push_str(
        "\n\n# Finishing\nWork until the task is done or you are blocked. Then answer with a concise summary: what you did, what you found, which files you created or changed, and any problems or open questions. That summary is all the delegating agent receives.\n",
    );
    prompt
}

/// What a child isolated in a worktree is told about it.
pub fn worktree_note(branch: &str, parent_checkout: &Path) -> String {
    format!(
        "\n# Worktree\nThe working directory is your own git worktree on branch `{branch}`. Commit your finished work there with git (the delegating agent merges the branch); uncommitted changes are reported as left over. The parent's checkout {} is not writable for you.\n",
        parent_checkout.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orchestrator_prompt_states_depth_and_grandchild_rights() {
        let task = ChildTask {
            index: 0,
            goal: "map the repo".into(),
            context: Some("only src/".into()),
            toolsets: None,
            role: ChildRole::Orchestrator,
            allow_tools: None,
            deny_tools: None,
            agent: None,
            definition: None,
            isolation: None,
            model: None,
            private: false,
        };
        let facts = DepthFacts {
            depth: 1,
            max_depth: 3,
            can_delegate: true,
        };
        let p = child_system_prompt(&task, Path::new("/w"), facts);
        assert!(p.contains("map the repo") && p.contains("only src/") && p.contains("/w"));
        assert!(
            p.contains("depth 1 of at most 3") && p.contains("may delegate further"),
            "{p}"
        );
        let facts = DepthFacts {
            depth: 1,
            max_depth: 2,
            can_delegate: true,
        };
        assert!(
            child_system_prompt(&task, Path::new("/w"), facts).contains("cannot delegate further")
        );
        let facts = DepthFacts {
            depth: 1,
            max_depth: 1,
            can_delegate: false,
        };
        assert!(child_system_prompt(&task, Path::new("/w"), facts).contains("you cannot delegate"));
    }

    #[test]
    fn an_agent_definition_puts_its_instructions_before_the_task() {
        let mut task = ChildTask {
            index: 0,
            goal: "review src/".into(),
            context: None,
            toolsets: None,
            role: ChildRole::Leaf,
            allow_tools: None,
            deny_tools: None,
            agent: Some("reviewer".into()),
            definition: None,
            isolation: None,
            model: None,
            private: false,
        };
        let facts = DepthFacts {
            depth: 1,
            max_depth: 1,
            can_delegate: false,
        };
        let plain = child_system_prompt(&task, Path::new("/w"), facts);
        assert!(!plain.contains("# Instructions"), "{plain}");
        task.definition = Some(crate::delegation::apply::AppliedAgent {
            name: "reviewer".into(),
            path: "/p/reviewer.md".into(),
            instructions: "You are a strict reviewer.\n".into(),
            tools: None,
            model: None,
            max_iterations: None,
        });
        let p = child_system_prompt(&task, Path::new("/w"), facts);
        let instructions = p.find(
            "# Instructions (agent reviewer)\nYou are a strict reviewer.\n\n# Task\nreview src/",
        );
        assert!(instructions.is_some(), "{p}");
    }
}
