//! The skill tools: `skills_list`, `skill_view` (read-only) and
//! `skill_manage`.

use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use super::view::{render_file, render_skill};
use super::{SkillError, SkillManager, SkillRoots};
use crate::fsutil::blocking;

fn tool_error(err: SkillError) -> ToolError {
    ToolError::new(err.to_string())
}

/// The `skills_list` tool.
#[derive(Debug, Clone)]
pub struct SkillsList {
    roots: SkillRoots,
}

impl SkillsList {
    /// Lists skills found in `roots`.
    pub fn new(roots: SkillRoots) -> Self {
        Self { roots }
    }
}

/// Arguments of `skills_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct SkillsListArgs {
    pub category: Option<String>,
}

impl TypedTool for SkillsList {
    type Args = SkillsListArgs;
    const NAME: &'static str = "skills_list";
    const TOOLSET: &'static str = "skills";
    const DESCRIPTION: &'static str = "List skills: name, source, category, description.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SkillsListArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let roots = self.roots.clone();
        blocking(move || {
            let found = roots.discover();
            let wanted = args
                .category
                .as_deref()
                .map(str::trim)
                .filter(|c| !c.is_empty());
            let skills: Vec<_> = found
                .skills
                .iter()
                .filter(|s| wanted.is_none_or(|c| s.category.as_deref() == Some(c)))
                .collect();
            let mut out = match (skills.len(), wanted) {
                (0, Some(c)) => {
                    let mut categories: Vec<&str> = found
                        .skills
                        .iter()
                        .filter_map(|s| s.category.as_deref())
                        .collect();
                    categories.sort_unstable();
                    categories.dedup();
                    format!(
                        "No skills in category {c:?}. Categories: {}",
                        if categories.is_empty() {
                            "(none)".to_owned()
                        } else {
                            categories.join(", ")
                        }
                    )
                }
                (0, None) => {
                    "No skills yet. Save one with skill_manage after a task worth repeating."
                        .to_owned()
                }
                (n, _) => format!("{n} skills (load one with skill_view):"),
            };
            for s in &skills {
                let category = s
                    .category
                    .as_ref()
                    .map(|c| format!(", {c}"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "\n- {} [{}{category}]: {}",
                    s.name,
                    s.source.as_str(),
                    s.description
                ));
            }
            if !found.problems.is_empty() {
                out.push_str("\nSkipped:");
                for problem in found.problems.iter().take(20) {
                    out.push_str(&format!("\n- {problem}"));
                }
            }
            Ok(out)
        })
        .await
    }
}

/// The `skill_view` tool.
#[derive(Debug, Clone)]
pub struct SkillView {
    roots: SkillRoots,
}

impl SkillView {
    /// Shows skills found in `roots`.
    pub fn new(roots: SkillRoots) -> Self {
        Self { roots }
    }
}

/// Arguments of `skill_view`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct SkillViewArgs {
    pub name: String,
    pub file_path: Option<String>,
}

impl TypedTool for SkillView {
    type Args = SkillViewArgs;
    const NAME: &'static str = "skill_view";
    const TOOLSET: &'static str = "skills";
    const DESCRIPTION: &'static str =
        "Load a skill: SKILL.md and its linked files; file_path loads one linked file.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SkillViewArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let roots = self.roots.clone();
        blocking(move || {
            let skill = roots.find(args.name.trim()).map_err(tool_error)?;
            match args.file_path.as_deref().filter(|p| !p.trim().is_empty()) {
                Some(path) => render_file(&skill, path),
                None => render_skill(&skill),
            }
            .map_err(tool_error)
        })
        .await
    }
}

/// What a `skill_manage` call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(description = "")]
pub enum SkillManageAction {
    Create,
    Edit,
    Patch,
    Delete,
    WriteFile,
    RemoveFile,
}

/// Arguments of `skill_manage`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct SkillManageArgs {
    pub action: SkillManageAction,
    pub name: String,
    pub content: Option<String>,
    pub old_string: Option<String>,
    pub new_string: Option<String>,
    pub file_path: Option<String>,
}

/// The `skill_manage` tool (always acting as [`super::Actor::Agent`]).
#[derive(Debug, Clone)]
pub struct SkillManage {
    manager: SkillManager,
}

impl SkillManage {
    /// Changes skills through `manager`.
    pub fn new(manager: SkillManager) -> Self {
        Self { manager }
    }
}

fn required<'a>(
    value: &'a Option<String>,
    param: &str,
    action: &str,
) -> Result<&'a str, SkillError> {
    value
        .as_deref()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| SkillError::Invalid(format!("'{param}' is required for action {action}")))
}

impl TypedTool for SkillManage {
    type Args = SkillManageArgs;
    const NAME: &'static str = "skill_manage";
    const TOOLSET: &'static str = "skills";
    const DESCRIPTION: &'static str = "Save and maintain your skills (only ones you created). create/edit: content = the \
whole SKILL.md: '---', YAML name (= the skill name) and description (when to use it), '---', markdown: steps with exact commands, pitfalls, verification. patch: old_string -> new_string (file_path for a linked file). \
write_file/remove_file: file_path under references/, templates/, scripts/ or assets/. Save when a recurring task needed \
iteration or a correction (5+ calls); offer first, create only if the user agrees.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: SkillManageArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let manager = self.manager.clone();
        blocking(move || {
            let name = args.name.trim();
            let action = args.action;
            let result = match action {
                SkillManageAction::Create => required(&args.content, "content", "create")
                    .and_then(|c| manager.create(name, c)),
                SkillManageAction::Edit => {
                    required(&args.content, "content", "edit").and_then(|c| manager.edit(name, c))
                }
                SkillManageAction::Patch => required(&args.old_string, "old_string", "patch")
                    .and_then(|old| {
                        manager.patch(
                            name,
                            args.file_path.as_deref(),
                            old,
                            args.new_string.as_deref().unwrap_or_default(),
                        )
                    }),
                SkillManageAction::Delete => manager.delete(name),
                SkillManageAction::WriteFile => {
                    required(&args.file_path, "file_path", "write_file").and_then(|path| {
                        manager.write_file(name, path, args.content.as_deref().unwrap_or_default())
                    })
                }
                SkillManageAction::RemoveFile => {
                    required(&args.file_path, "file_path", "remove_file")
                        .and_then(|path| manager.remove_file(name, path))
                }
            };
            result.map_err(tool_error)
        })
        .await
    }
}
