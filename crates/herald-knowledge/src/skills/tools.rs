//! The skill tools: `skills_list`, `skill_view` (read-only) and
//! `skill_manage`.

use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use super::index::{Entry, Rules, fit, priority};
use super::view::{render_file, render_skill};
use super::{
    Discovery, MAX_DESCRIPTION_CHARS, SkillError, SkillInfo, SkillManager, SkillRoots, rank,
};
use crate::fsutil::blocking;

fn tool_error(err: SkillError) -> ToolError {
    ToolError::new(err.to_string())
}

/// Most chars of a `skills_list` answer; past it descriptions shrink, then
/// names are listed alone, then the answer says how many more there are.
pub const LIST_BUDGET_CHARS: usize = 12_000;
/// Most skills a `skills_list {query}` answer shows.
pub const MAX_QUERY_RESULTS: usize = 15;
/// Most problem lines a `skills_list` answer repeats.
const MAX_PROBLEM_LINES: usize = 10;

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
    pub query: Option<String>,
    pub category: Option<String>,
}

/// Whether `skill` is in `wanted` or one of its sub-categories.
fn in_category(skill: &SkillInfo, wanted: &str) -> bool {
    skill.category.as_deref().is_some_and(|c| {
        c == wanted
            || c.strip_prefix(wanted)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// `[source, category]` after a name.
fn tag(skill: &SkillInfo) -> String {
    let category = skill
        .category
        .as_ref()
        .map(|c| format!(", {c}"))
        .unwrap_or_default();
    format!("{} [{}{category}]", skill.name, skill.source.as_str())
}

/// The `skills_list` answer for `query` and `category` over `found`: the
/// skills the model may use, ranked when there is a query, laid out within
/// [`LIST_BUDGET_CHARS`].
fn list_answer(found: &Discovery, query: Option<&str>, category: Option<&str>) -> String {
    let visible: Vec<&SkillInfo> = found
        .for_model()
        .filter(|s| category.is_none_or(|c| in_category(s, c)))
        .collect();
    let (skills, header) = match query {
        Some(q) => {
            let ranked = rank(visible.iter().copied(), q);
            let total = ranked.len();
            let shown: Vec<&SkillInfo> = ranked.into_iter().take(MAX_QUERY_RESULTS).collect();
            let header = match total {
                0 => format!(
                    "No skill matches {q:?} among {} skills; try other or fewer words, or no query to list them all.",
                    visible.len()
                ),
                n if n > shown.len() => format!(
                    "{n} skills match {q:?}; the best {} (load one with skill_view):",
                    shown.len()
                ),
                n => format!("{n} skills match {q:?}, best first (load one with skill_view):"),
            };
            (shown, header)
        }
        None => {
            let header = match (visible.len(), category) {
                (0, Some(c)) => {
                    let mut categories: Vec<&str> = found
                        .for_model()
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
            (visible, header)
        }
    };
    let entries: Vec<Entry<'_>> = skills
        .iter()
        .map(|s| Entry {
            name: &s.name,
            label: tag(s),
            description: &s.description,
            // Ranked answers keep their order.
            priority: if query.is_some() { 0 } else { priority(s) },
        })
        .collect();
    let more = |left: usize| {
        format!(
            "...and {left} more: narrow the list with a query (words from the name or description) or a category."
        )
    };
    let mut out = if entries.is_empty() {
        header
    } else {
        fit(
            &entries,
            &Rules {
                header: &header,
                budget: LIST_BUDGET_CHARS,
                min_description: 60,
                max_description: MAX_DESCRIPTION_CHARS,
                names_note: "Names only (add a query to see descriptions):",
                more: &more,
            },
        )
        .text
    };
    let user_only = found.skills.len() - found.for_model().count();
    if user_only > 0 {
        out.push_str(&format!(
            "\n({user_only} more are marked for the user to invoke and not listed.)"
        ));
    }
    if !found.problems.is_empty() {
        out.push_str("\nNot loaded:");
        for problem in found.problems.iter().take(MAX_PROBLEM_LINES) {
            out.push_str(&format!("\n- {problem}"));
        }
        if found.problems.len() > MAX_PROBLEM_LINES {
            out.push_str(&format!(
                "\n- ...and {} more (`herald skills list` shows all)",
                found.problems.len() - MAX_PROBLEM_LINES
            ));
        }
    }
    out
}

impl TypedTool for SkillsList {
    type Args = SkillsListArgs;
    const NAME: &'static str = "skills_list";
    const TOOLSET: &'static str = "skills";
    const DESCRIPTION: &'static str = "List skills: name, source, category, description. query: words to search names and descriptions (best first).";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SkillsListArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let roots = self.roots.clone();
        blocking(move || {
            let found = roots.discover();
            let clean = |v: &Option<String>| {
                v.as_deref()
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
            };
            let (query, category) = (clean(&args.query), clean(&args.category));
            Ok(list_answer(&found, query.as_deref(), category.as_deref()))
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
            if !skill.model_invocable {
                return Err(ToolError::new(format!(
                    "skill {:?} is marked `disable-model-invocation: true`: only the user invokes it. Do not work around this; if the user wants it, they can run `herald skills view {}` and share it",
                    skill.name, skill.name
                )));
            }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::skills::fixture::{service_pack, write_skill};

    fn found(home: &Path) -> Discovery {
        SkillRoots::new(home, home).discover()
    }

    #[test]
    fn a_query_ranks_by_name_and_description_and_shows_a_few() {
        let home = tempfile::tempdir().unwrap();
        let skills = home.path().join("skills");
        service_pack(&skills, 1_000).unwrap();
        write_skill(
            &skills,
            "docs/pdf",
            Some("pdf"),
            "Fill PDF forms and extract tables",
            "",
        )
        .unwrap();
        let found = found(home.path());
        let out = list_answer(&found, Some("pdf forms"), None);
        let first = out.lines().nth(1).unwrap();
        assert!(
            first.starts_with("- pdf [home, docs]: Fill PDF forms"),
            "{out}"
        );
        let out = list_answer(&found, Some("zendesk"), None);
        assert!(
            out.starts_with("27 skills match \"zendesk\"; the best 15"),
            "{out}"
        );
        assert!(
            out.lines().nth(1).unwrap().starts_with(
                "- zendesk-automation [home, composio-skills]: Automate Zendesk Automation tasks"
            ),
            "{out}"
        );
        assert_eq!(
            out.lines().filter(|l| l.starts_with("- ")).count(),
            MAX_QUERY_RESULTS
        );
        let out = list_answer(&found, Some("kubernetes"), None);
        assert!(
            out.starts_with("No skill matches \"kubernetes\" among 1001 skills"),
            "{out}"
        );
    }

    #[test]
    fn listing_a_huge_pack_stays_within_budget_and_says_how_to_narrow() {
        let home = tempfile::tempdir().unwrap();
        service_pack(&home.path().join("skills"), 1_000).unwrap();
        let found = found(home.path());
        let out = list_answer(&found, None, None);
        assert!(out.chars().count() <= LIST_BUDGET_CHARS, "{}", out.len());
        assert!(
            out.starts_with("1000 skills (load one with skill_view):\nNames only"),
            "{out}"
        );
        assert!(out.contains("more: narrow the list with a query"), "{out}");
        // A category narrows it to a few with descriptions.
        let pack = home.path().join("skills/composio-skills");
        write_skill(
            &pack,
            "crm/hubspot-sync",
            Some("hubspot-sync"),
            "Sync contacts",
            "",
        )
        .unwrap();
        let found = SkillRoots::new(home.path(), home.path()).discover();
        let out = list_answer(&found, None, Some("composio-skills/crm"));
        assert_eq!(
            out,
            "1 skills (load one with skill_view):\n- hubspot-sync [home, composio-skills/crm]: Sync contacts"
        );
        let out = list_answer(&found, None, Some("composio"));
        assert!(out.starts_with("No skills in category \"composio\". Categories: composio-skills, composio-skills/crm"), "{out}");
    }

    #[test]
    fn user_only_and_broken_skills_are_named_but_not_listed_for_the_model() {
        let home = tempfile::tempdir().unwrap();
        let skills = home.path().join("skills");
        write_skill(
            &skills,
            "deploy",
            Some("deploy"),
            "Ship it",
            "disable-model-invocation: true\n",
        )
        .unwrap();
        write_skill(&skills, "lint", Some("lint"), "Lint it", "").unwrap();
        std::fs::create_dir_all(skills.join("broken")).unwrap();
        std::fs::write(
            skills.join("broken/SKILL.md"),
            "---\nname: broken\n---\nbody",
        )
        .unwrap();
        let out = list_answer(&found(home.path()), None, None);
        assert!(out.starts_with("1 skills (load one with skill_view):\n- lint [home]: Lint it\n(1 more are marked for the user to invoke and not listed.)\nNot loaded:\n- "), "{out}");
        assert!(
            out.contains("broken/SKILL.md: the front matter has no description"),
            "{out}"
        );
        assert!(!out.contains("deploy"), "{out}");
    }
}
