//! The arguments of `delegate_task` and their normalisation into a list of
//! child tasks: a single `goal` or a `tasks` batch (also when the
//! model sends the batch as a JSON string), with the errors the spec names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a child may do besides its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChildRole {
    /// Does the work itself; cannot delegate.
    #[default]
    Leaf,
    /// May delegate further when depth and config allow.
    Orchestrator,
}

impl ChildRole {
    /// The name stored and reported.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leaf => "leaf",
            Self::Orchestrator => "orchestrator",
        }
    }
}

/// One task of a batch.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TaskArg {
    /// What the child must achieve.
    pub goal: Option<String>,
    pub context: Option<String>,
    pub toolsets: Option<Vec<String>>,
    pub role: Option<ChildRole>,
    pub allow_tools: Option<Vec<String>>,
    pub deny_tools: Option<Vec<String>>,
    /// An agent definition's name.
    pub agent: Option<String>,
    /// `worktree`, `worktree:fresh` or `worktree:<ref>`.
    pub isolation: Option<String>,
    pub model: Option<String>,
    pub private: Option<bool>,
}

/// A compact schema for `tasks`: every byte of it is sent on each request.
fn tasks_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["array", "string"],
        "description": "Parallel batch replacing goal: objects with goal and the per-child fields above.",
        // Some providers refuse an array schema without `items`.
        "items": {"type": "object"},
    })
}

/// `leaf | orchestrator` without per-variant documentation.
fn role_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["string", "null"],
        "enum": ["leaf", "orchestrator", null],
        "description": "orchestrator may delegate further (default leaf).",
    })
}

/// Arguments of `delegate_task`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct DelegateArgs {
    /// The task, specific and self-contained.
    pub goal: Option<String>,
    /// Facts it needs: paths, constraints, what was tried.
    #[schemars(description = "")]
    pub context: Option<String>,
    /// Default and maximum: yours.
    #[schemars(description = "")]
    pub toolsets: Option<Vec<String>>,
    #[serde(default)]
    #[schemars(schema_with = "tasks_schema")]
    pub tasks: Option<serde_json::Value>,
    #[serde(default)]
    #[schemars(schema_with = "role_schema")]
    pub role: Option<ChildRole>,
    pub max_iterations: Option<u32>,
    pub background: Option<bool>,
    /// Only these tools.
    #[schemars(description = "")]
    pub allow_tools: Option<Vec<String>>,
    pub deny_tools: Option<Vec<String>>,
    /// Token cap for the whole delegation.
    #[schemars(description = "")]
    pub budget_tokens: Option<u64>,
    /// An agent definition's name.
    pub agent: Option<String>,
    /// worktree: own git branch and checkout.
    pub isolation: Option<String>,
    /// From [routing] allow_models.
    pub model: Option<String>,
    /// Local models only.
    pub private: Option<bool>,
}

/// A child task after normalisation: batch fields fall back to the call's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildTask {
    pub index: usize,
    pub goal: String,
    pub context: Option<String>,
    pub toolsets: Option<Vec<String>>,
    pub role: ChildRole,
    pub allow_tools: Option<Vec<String>>,
    pub deny_tools: Option<Vec<String>>,
    /// The agent definition the task names (`agent: NAME`).
    #[serde(default)]
    pub agent: Option<String>,
    /// That definition, once applied (see `apply_definitions`).
    #[serde(default)]
    pub definition: Option<super::apply::AppliedAgent>,
    /// Run in a new git worktree from this base (`isolation`).
    #[serde(default)]
    pub isolation: Option<super::worktree::WorktreeBase>,
    /// The model the caller named (checked against `[routing] allow_models`).
    #[serde(default)]
    pub model: Option<String>,
    /// Private work: local models only (`[routing] local_models`).
    #[serde(default)]
    pub private: bool,
}

/// Turns the arguments into tasks, or the error the model should read.
/// `max_children` is `[delegation] max_concurrent_children`.
pub fn child_tasks(args: &DelegateArgs, max_children: usize) -> Result<Vec<ChildTask>, String> {
    let batch = match &args.tasks {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(text)) if text.trim().is_empty() => None,
        Some(serde_json::Value::String(text)) => Some(
            serde_json::from_str::<Vec<TaskArg>>(text).map_err(|err| {
                format!(
                    "tasks is a string that is not a JSON array of task objects ({err}); send tasks as an array of {{goal, context?, toolsets?, role?, allow_tools?, deny_tools?, agent?}}"
                )
            })?,
        ),
        Some(value) => Some(serde_json::from_value::<Vec<TaskArg>>(value.clone()).map_err(
            |err| {
                format!(
                    "tasks must be an array of task objects {{goal, context?, toolsets?, role?, allow_tools?, deny_tools?, agent?}}: {err}"
                )
            },
        )?),
    };
    let raw = match batch {
        Some(tasks) if tasks.is_empty() => {
            return Err(
                "tasks is empty; give at least one task with a goal, or use goal for a single task"
                    .to_owned(),
            );
        }
        Some(tasks) => tasks,
        None => match &args.goal {
            Some(goal) if !goal.trim().is_empty() => vec![TaskArg {
                goal: Some(goal.clone()),
                ..TaskArg::default()
            }],
            _ => {
                return Err(
                    "delegate_task needs a goal (one task) or tasks (a batch); neither was given"
                        .to_owned(),
                );
            }
        },
    };
    if raw.len() > max_children {
        return Err(format!(
            "{} tasks exceed the limit of {max_children} children per call ([delegation] max_concurrent_children = {max_children}); no child was started. Split the work into batches of at most {max_children}, or raise the limit in config.toml",
            raw.len()
        ));
    }
    raw.into_iter()
        .enumerate()
        .map(|(index, task)| {
            let goal = task
                .goal
                .filter(|g| !g.trim().is_empty())
                .ok_or_else(|| format!("task {index} has no goal; every task needs a goal"))?;
            let isolation = match task.isolation.as_deref().or(args.isolation.as_deref()) {
                Some(text) => super::worktree::WorktreeBase::parse(text)
                    .map_err(|err| format!("task {index}: {err}; no child was started"))?,
                None => None,
            };
            Ok(ChildTask {
                index,
                goal,
                context: task.context.or_else(|| args.context.clone()),
                toolsets: task.toolsets.or_else(|| args.toolsets.clone()),
                role: task.role.or(args.role).unwrap_or_default(),
                allow_tools: task.allow_tools.or_else(|| args.allow_tools.clone()),
                deny_tools: task.deny_tools.or_else(|| args.deny_tools.clone()),
                agent: task.agent.or_else(|| args.agent.clone()),
                definition: None,
                isolation,
                model: task
                    .model
                    .or_else(|| args.model.clone())
                    .filter(|m| !m.trim().is_empty()),
                private: task.private.or(args.private).unwrap_or(false),
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(json: serde_json::Value) -> DelegateArgs {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn single_goal_and_batches_in_both_forms() {
        let tasks =
            child_tasks(&args(serde_json::json!({"goal": "g", "context": "c"})), 3).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].context.as_deref(), Some("c"));
        let batch = serde_json::json!([{"goal": "a"}, {"goal": "b", "role": "orchestrator"}]);
        let from_array = child_tasks(
            &args(serde_json::json!({"goal": "ignored", "tasks": batch})),
            3,
        )
        .unwrap();
        let from_string = child_tasks(
            &args(serde_json::json!({"tasks": batch.to_string(), "role": "leaf"})),
            3,
        )
        .unwrap();
        assert_eq!(
            from_array
                .iter()
                .map(|t| t.goal.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(from_array[1].role, ChildRole::Orchestrator);
        assert_eq!(from_string[1].role, ChildRole::Orchestrator);
        assert_eq!(from_string[0].index, 0);
        let agents = child_tasks(
            &args(serde_json::json!({"agent": "reviewer", "tasks": [{"goal": "a"}, {"goal": "b", "agent": "tester"}]})),
            3,
        )
        .unwrap();
        assert_eq!(agents[0].agent.as_deref(), Some("reviewer"));
        assert_eq!(agents[1].agent.as_deref(), Some("tester"));
        assert_eq!(agents[0].definition, None);
    }

    #[test]
    fn errors_name_the_problem() {
        let err = child_tasks(&args(serde_json::json!({})), 3).unwrap_err();
        assert!(err.contains("needs a goal"), "{err}");
        let err = child_tasks(
            &args(serde_json::json!({"tasks": [{"goal": "a"}, {"goal": "b"}, {"goal": "c"}, {"goal": "d"}]})),
            3,
        )
        .unwrap_err();
        assert!(
            err.contains("max_concurrent_children") && err.contains("no child was started"),
            "{err}"
        );
        let err = child_tasks(
            &args(serde_json::json!({"tasks": [{"goal": "a"}, {"context": "x"}]})),
            3,
        )
        .unwrap_err();
        assert!(err.contains("task 1 has no goal"), "{err}");
        let err = child_tasks(&args(serde_json::json!({"tasks": "[{"})), 3).unwrap_err();
        assert!(err.contains("not a JSON array"), "{err}");
        let err = child_tasks(&args(serde_json::json!({"tasks": []})), 3).unwrap_err();
        assert!(err.contains("empty"), "{err}");
    }
}
