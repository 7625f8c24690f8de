//! Learnings, the error memory: the `learning` tool and the call
//! interceptor that closes the loop around it.
//!
//! * [`LearningTool`]: the model saves, searches, lists and forgets fixes
//!   (stored by `herald-store`, FTS-searchable, consolidated on save).
//! * [`LearningInterceptor`]: after every tool call of a session tree,
//!   *recall* appends the best-fitting saved fixes to a failed call's
//!   result (`recall.rs`), and *capture* offers a failure followed by a
//!   success of the same tool on the same target (`target.rs`) as a
//!   candidate learning in one line (`capture.rs`). Both only append to the
//!   newest tool result; the system prompt never changes.

mod capture;
mod interceptor;
mod recall;
mod target;
mod tool;

use std::path::Path;

pub use interceptor::LearningInterceptor;
pub use tool::{LearningAction, LearningArgs, LearningTool};

/// The toolset of the `learning` tool; leaving it out of `--toolsets` also
/// turns recall and capture off.
pub const LEARNING_TOOLSET: &str = "learning";

/// The project a session works in, as learnings are scoped: the nearest
/// directory at or above `cwd` holding `.git` (a subdirectory of a
/// repository is the same project), else `cwd` itself.
pub fn project_path(cwd: &Path) -> String {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .display()
        .to_string()
}

/// Whether the settings' tool selection keeps learnings on.
pub(crate) fn enabled(toolsets: Option<&[String]>) -> bool {
    toolsets.is_none_or(|sets| sets.iter().any(|s| s == LEARNING_TOOLSET))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_project_is_the_repository_root_or_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        assert_eq!(
            project_path(&repo.join("src/deep")),
            repo.display().to_string()
        );
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(project_path(&plain), plain.display().to_string());
    }

    #[test]
    fn the_toolset_selection_switches_learnings() {
        assert!(enabled(None));
        assert!(enabled(Some(&["file".into(), "learning".into()])));
        assert!(!enabled(Some(&["file".into()])));
    }
}
