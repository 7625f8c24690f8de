//! Skills: procedural memory in the Agent Skills format. A skill
//! is a folder holding `SKILL.md` (YAML front matter with `name` and
//! `description`, then a markdown body) plus optional `references/`,
//! `templates/`, `scripts/` and `assets/`.
//!
//! Skills are found in `$HERALD_HOME/skills/`, then the project's
//! `.agents/skills/` and `.claude/skills/` ([`SkillRoots`]). herald writes only
//! under `$HERALD_HOME/skills/` and only to skills it created, which it marks
//! with a `.herald-created` file ([`SkillManager`]).
//!
//! Skill packs are large (hundreds of skills, nested folders, Title Case
//! names): discovery has no cap and reports every skill it could not load
//! ([`Discovery::rejected`]); the prompt index names every skill the model
//! may use within its budget ([`build_index`]); `skills_list {query}` ranks
//! the rest ([`rank`]).

mod discover;
pub mod fixture;
pub mod frontmatter;
mod index;
mod manage;
mod search;
mod tools;
mod view;

use std::path::PathBuf;

pub use discover::{
    Discovery, MAX_DEPTH, MAX_SCAN_DIRS, RejectedSkill, SkillInfo, SkillRoots, SkillSource,
    project_dirs,
};
pub use index::{SkillsIndex, build_index, skills_prompt_index};
pub use manage::{Actor, SkillManager};
pub use search::rank;
pub use tools::{
    SkillManage, SkillManageAction, SkillManageArgs, SkillView, SkillViewArgs, SkillsList,
    SkillsListArgs,
};
pub use view::{render_file, render_skill};

/// Longest skill name.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description (it is shown in every system prompt's index).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Largest `SKILL.md` herald writes, in bytes.
pub const MAX_SKILL_MD_BYTES: usize = 64 * 1024;
/// Largest linked file herald writes or shows, in bytes.
pub const MAX_LINKED_FILE_BYTES: usize = 256 * 1024;
/// Most linked files one skill may hold (also caps listings).
pub const MAX_LINKED_FILES: usize = 100;
/// The only sub-folders linked files may live in.
pub const LINKED_DIRS: [&str; 4] = ["references", "templates", "scripts", "assets"];
/// The file marking a skill as created by herald (and so changeable by it).
pub const CREATED_MARKER: &str = ".herald-created";

/// Why a skill operation did nothing. Messages are written for the model and
/// the user: they say what was wrong and what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// Bad `SKILL.md`, name or argument.
    #[error("{0}")]
    Invalid(String),
    /// No skill has this name.
    #[error("no skill named {name:?}. {available}")]
    NotFound { name: String, available: String },
    /// A skill of this name exists but could not be loaded.
    #[error(
        "skill {name:?} is not available: {error} ({}). Fix that SKILL.md; `herald skills list` shows every skill that failed to load",
        path.display()
    )]
    Rejected {
        name: String,
        path: PathBuf,
        error: String,
    },
    /// `create` with a name that is taken.
    #[error(
        "a skill named {name:?} already exists ({place}); choose another name or edit that skill"
    )]
    Exists { name: String, place: String },
    /// The skill was not created by herald, so herald leaves it alone.
    #[error(
        "skill {name:?} ({place}) was not created by herald, so herald will not change it. \
         Create a new skill with another name instead, or ask the user to edit it"
    )]
    Foreign { name: String, place: String },
    /// Over a size or count limit.
    #[error(
        "{what} is {size} bytes; the limit is {limit}. Split it into smaller files or shorten it"
    )]
    TooLarge {
        what: String,
        size: usize,
        limit: usize,
    },
    /// A linked-file path that breaks the rules.
    #[error("invalid file_path {path:?}: {reason}")]
    Path { path: String, reason: String },
    /// The filesystem refused.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Wraps an io error with what was being done to which path.
pub(crate) fn io_err(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> SkillError {
    let path = path.into();
    move |source| SkillError::Io {
        action,
        path,
        source,
    }
}
