//! Creating and changing skills. Writes go only under `$HERALD_HOME/skills/`;
//! the agent may change only skills carrying herald's `.herald-created`
//! marker, while the user (through the CLI) may change any skill there.

use std::path::{Component, Path, PathBuf};

use super::frontmatter::{validate, validate_name};
use super::{
    CREATED_MARKER, LINKED_DIRS, MAX_LINKED_FILE_BYTES, MAX_LINKED_FILES, MAX_SKILL_MD_BYTES,
    SkillError, SkillRoots, SkillSource, io_err,
};
use crate::fsutil::atomic_write;

/// Who asks for a change; decides whether the provenance rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// The model through `skill_manage`: only herald-created skills.
    Agent,
    /// The user through `herald skills ...`: any skill under the home folder.
    User,
}

/// Performs validated skill changes for one actor.
#[derive(Debug, Clone)]
pub struct SkillManager {
    roots: SkillRoots,
    actor: Actor,
}

const MARKER_TEXT: &str =
    "This skill was created by herald; herald's skill_manage tool may change it.\n";

impl SkillManager {
    /// A manager over `roots` acting for `actor`.
    pub fn new(roots: SkillRoots, actor: Actor) -> Self {
        Self { roots, actor }
    }

    /// The roots skills are looked up in.
    pub fn roots(&self) -> &SkillRoots {
        &self.roots
    }

    /// Creates `$HERALD_HOME/skills/<name>/SKILL.md` from `content` (front
    /// matter and body), marked as created by herald. The folder appears at
    /// once, complete, or not at all.
    pub fn create(&self, name: &str, content: &str) -> Result<String, SkillError> {
        validate_name(name)?;
        check_size("SKILL.md", content.len(), MAX_SKILL_MD_BYTES)?;
        validate(content, name)?;
        if let Ok(existing) = self.roots.find(name) {
            return Err(SkillError::Exists {
                name: name.to_owned(),
                place: existing.place(),
            });
        }
        let home = self.roots.home_dir();
        let target = home.join(name);
        if target.exists() {
            return Err(SkillError::Exists {
                name: name.to_owned(),
                place: target.display().to_string(),
            });
        }
        std::fs::create_dir_all(home).map_err(io_err("create", home))?;
        let staging = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempdir_in(home)
            .map_err(io_err("create a folder in", home))?;
        std::fs::write(staging.path().join("SKILL.md"), content)
            .map_err(io_err("write", staging.path().join("SKILL.md")))?;
        std::fs::write(staging.path().join(CREATED_MARKER), MARKER_TEXT)
            .map_err(io_err("write", staging.path().join(CREATED_MARKER)))?;
        if target.exists() {
            return Err(SkillError::Exists {
                name: name.to_owned(),
                place: target.display().to_string(),
            });
        }
        let staged = staging.keep();
        if let Err(err) = std::fs::rename(&staged, &target) {
            let _ = std::fs::remove_dir_all(&staged);
            return Err(io_err("create", &target)(err));
        }
        Ok(format!(
            "Created skill {name} at {}. It appears in the skills index from the next session; skill_view loads it now.",
            target.display()
        ))
    }

    /// Replaces the whole `SKILL.md` of a skill herald may change.
    pub fn edit(&self, name: &str, content: &str) -> Result<String, SkillError> {
        let dir = self.owned(name)?;
        check_size("SKILL.md", content.len(), MAX_SKILL_MD_BYTES)?;
        validate(content, name)?;
        let path = dir.join("SKILL.md");
        atomic_write(&path, content.as_bytes()).map_err(io_err("write", &path))?;
        Ok(format!("Updated {}.", path.display()))
    }

    /// Replaces the one occurrence of `old` with `new` in `SKILL.md` or in a
    /// linked file; a patched `SKILL.md` must still validate.
    pub fn patch(
        &self,
        name: &str,
        file_path: Option<&str>,
        old: &str,
        new: &str,
    ) -> Result<String, SkillError> {
        let dir = self.owned(name)?;
        let (path, shown) = match file_path.map(str::trim).filter(|p| !p.is_empty()) {
            Some(rel) => {
                let rel = linked_path(rel)?;
                no_symlinks(&dir, &rel)?;
                (dir.join(&rel), rel.display().to_string())
            }
            None => (dir.join("SKILL.md"), "SKILL.md".to_owned()),
        };
        if old.is_empty() {
            return Err(SkillError::Invalid(
                "old_string is required for patch: copy the exact text to change from skill_view"
                    .into(),
            ));
        }
        let text = std::fs::read_to_string(&path).map_err(io_err("read", &path))?;
        let count = text.matches(old).count();
        if count != 1 {
            return Err(SkillError::Invalid(if count == 0 {
                format!(
                    "old_string was not found in {shown}; load it with skill_view and copy the exact text"
                )
            } else {
                format!(
                    "old_string appears {count} times in {shown}; include more surrounding text so it is unique"
                )
            }));
        }
        let patched = text.replacen(old, new, 1);
        if file_path.is_none() {
            check_size("SKILL.md", patched.len(), MAX_SKILL_MD_BYTES)?;
            validate(&patched, name)?;
        } else {
            check_size(&shown, patched.len(), MAX_LINKED_FILE_BYTES)?;
        }
        atomic_write(&path, patched.as_bytes()).map_err(io_err("write", &path))?;
        Ok(format!("Patched {shown} of skill {name}."))
    }

    /// Deletes a skill folder herald may change.
    pub fn delete(&self, name: &str) -> Result<String, SkillError> {
        let dir = self.owned(name)?;
        std::fs::remove_dir_all(&dir).map_err(io_err("delete", &dir))?;
        Ok(format!("Deleted skill {name} ({}).", dir.display()))
    }

    /// Writes a linked file under one of the four sub-folders.
    pub fn write_file(
        &self,
        name: &str,
        file_path: &str,
        content: &str,
    ) -> Result<String, SkillError> {
        let dir = self.owned(name)?;
        let rel = linked_path(file_path)?;
        check_size(file_path, content.len(), MAX_LINKED_FILE_BYTES)?;
        no_symlinks(&dir, &rel)?;
        let path = dir.join(&rel);
        if path.is_dir() {
            return Err(SkillError::Path {
                path: file_path.to_owned(),
                reason: "it is a folder; name a file inside it".into(),
            });
        }
        if !path.exists() && super::view::linked_files(&dir).len() >= MAX_LINKED_FILES {
            return Err(SkillError::Invalid(format!(
                "skill {name} already has {MAX_LINKED_FILES} linked files, the limit; remove or merge some first"
            )));
        }
        atomic_write(&path, content.as_bytes()).map_err(io_err("write", &path))?;
        Ok(format!(
            "Wrote {} ({} bytes) in skill {name}.",
            rel.display(),
            content.len()
        ))
    }

    /// Removes a linked file (and sub-folders it leaves empty).
    pub fn remove_file(&self, name: &str, file_path: &str) -> Result<String, SkillError> {
        let dir = self.owned(name)?;
        let rel = linked_path(file_path)?;
        no_symlinks(&dir, &rel)?;
        let path = dir.join(&rel);
        if !path.is_file() {
            return Err(SkillError::Path {
                path: file_path.to_owned(),
                reason: format!("no such file in skill {name}; skill_view lists its files"),
            });
        }
        std::fs::remove_file(&path).map_err(io_err("remove", &path))?;
        let mut parent = path.parent();
        while let Some(p) = parent.filter(|p| *p != dir) {
            if std::fs::remove_dir(p).is_err() {
                break;
            }
            parent = p.parent();
        }
        Ok(format!("Removed {} from skill {name}.", rel.display()))
    }

    /// The folder of a skill this actor may change, or why not.
    fn owned(&self, name: &str) -> Result<PathBuf, SkillError> {
        validate_name(name)?;
        let dir = match self.roots.find(name) {
            Ok(skill) if skill.source != SkillSource::Home => {
                return Err(SkillError::Foreign {
                    name: name.to_owned(),
                    place: skill.place(),
                });
            }
            Ok(skill) => skill.dir,
            Err(not_found) => {
                // A home folder whose SKILL.md no longer parses can still be
                // repaired or deleted.
                let dir = self.roots.home_dir().join(name);
                if !dir.is_dir() {
                    return Err(not_found);
                }
                dir
            }
        };
        let meta = std::fs::symlink_metadata(&dir).map_err(io_err("inspect", &dir))?;
        if meta.file_type().is_symlink() {
            return Err(SkillError::Foreign {
                name: name.to_owned(),
                place: format!("{} is a symlink", dir.display()),
            });
        }
        if self.actor == Actor::Agent && !dir.join(CREATED_MARKER).is_file() {
            return Err(SkillError::Foreign {
                name: name.to_owned(),
                place: format!("home: {}", dir.display()),
            });
        }
        Ok(dir)
    }
}

fn check_size(what: &str, size: usize, limit: usize) -> Result<(), SkillError> {
    if size > limit {
        return Err(SkillError::TooLarge {
            what: what.to_owned(),
            size,
            limit,
        });
    }
    Ok(())
}

/// Checks a linked-file path: relative, no `..` or hidden parts, inside one
/// of `references/`, `templates/`, `scripts/`, `assets/`, naming a file.
pub(crate) fn linked_path(path: &str) -> Result<PathBuf, SkillError> {
    let bad = |reason: &str| SkillError::Path {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = path.trim();
    if trimmed.is_empty() {
        return Err(bad("give a path such as references/notes.md"));
    }
    let mut parts = Vec::new();
    for component in Path::new(trimmed).components() {
        match component {
            Component::Normal(part) => {
                let part = part
                    .to_str()
                    .ok_or_else(|| bad("the path must be valid UTF-8"))?;
                if part.starts_with('.') {
                    return Err(bad("hidden names (starting with '.') are not allowed"));
                }
                parts.push(part);
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(bad("'..' is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(bad("use a path relative to the skill folder"));
            }
        }
    }
    match parts.first() {
        Some(first) if LINKED_DIRS.contains(first) => {}
        _ => {
            return Err(bad(
                "files go in references/, templates/, scripts/ or assets/ (SKILL.md itself is changed with edit or patch)",
            ));
        }
    }
    if parts.len() < 2 {
        return Err(bad(
            "name a file inside the folder, e.g. references/notes.md",
        ));
    }
    Ok(parts.iter().collect())
}

/// Refuses paths whose existing parts are symlinks, so a write cannot land
/// outside the skill folder.
fn no_symlinks(dir: &Path, rel: &Path) -> Result<(), SkillError> {
    let mut current = dir.to_path_buf();
    for part in rel.components() {
        current.push(part);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(SkillError::Path {
                    path: rel.display().to_string(),
                    reason: format!("{} is a symlink", current.display()),
                });
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn skill_md(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\n# Steps\n1. do it\n")
    }

    struct Env {
        home: tempfile::TempDir,
        cwd: tempfile::TempDir,
    }

    impl Env {
        fn new() -> Self {
            Self {
                home: tempfile::tempdir().unwrap(),
                cwd: tempfile::tempdir().unwrap(),
            }
        }

        fn manager(&self, actor: Actor) -> SkillManager {
            SkillManager::new(SkillRoots::new(self.home.path(), self.cwd.path()), actor)
        }

        fn dir(&self, name: &str) -> PathBuf {
            self.home.path().join("skills").join(name)
        }
    }

    #[test]
    fn create_writes_skill_and_marker_and_refuses_collisions() {
        let env = Env::new();
        let m = env.manager(Actor::Agent);
        let out = m.create("deploy", &skill_md("deploy", "Ship it")).unwrap();
        assert!(out.starts_with("Created skill deploy"), "{out}");
        assert!(env.dir("deploy").join("SKILL.md").is_file());
        assert!(env.dir("deploy").join(CREATED_MARKER).is_file());
        // No staging folders are left behind.
        let names: Vec<_> = std::fs::read_dir(env.home.path().join("skills"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["deploy"]);
        let err = m
            .create("deploy", &skill_md("deploy", "again"))
            .unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        // A project skill's name is taken too.
        let project = env.cwd.path().join(".claude/skills/review");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("SKILL.md"), skill_md("review", "Review code")).unwrap();
        let err = m.create("review", &skill_md("review", "mine")).unwrap_err();
        assert!(err.to_string().contains(".claude"), "{err}");
    }

    #[test]
    fn create_validates_name_front_matter_and_size() {
        let env = Env::new();
        let m = env.manager(Actor::Agent);
        assert!(m.create("../evil", &skill_md("../evil", "x")).is_err());
        let err = m.create("Bad", &skill_md("Bad", "x")).unwrap_err();
        assert!(err.to_string().contains("invalid skill name"), "{err}");
        let err = m.create("a", &skill_md("b", "x")).unwrap_err();
        assert!(err.to_string().contains("differs"), "{err}");
        let huge = format!("{}{}", skill_md("big", "x"), "y".repeat(MAX_SKILL_MD_BYTES));
        let err = m.create("big", &huge).unwrap_err();
        assert!(err.to_string().contains("the limit is 65536"), "{err}");
        assert!(!env.home.path().join("skills/big").exists());
    }

    #[test]
    fn agent_refuses_skills_it_did_not_create() {
        let env = Env::new();
        // A skill the user placed in the home folder by hand.
        std::fs::create_dir_all(env.dir("handmade")).unwrap();
        std::fs::write(
            env.dir("handmade").join("SKILL.md"),
            skill_md("handmade", "mine"),
        )
        .unwrap();
        // A project skill.
        let project = env.cwd.path().join(".agents/skills/proj");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("SKILL.md"), skill_md("proj", "project")).unwrap();
        let agent = env.manager(Actor::Agent);
        for name in ["handmade", "proj"] {
            for result in [
                agent.edit(name, &skill_md(name, "changed")),
                agent.patch(name, None, "do it", "x"),
                agent.write_file(name, "references/a.md", "x"),
                agent.remove_file(name, "references/a.md"),
                agent.delete(name),
            ] {
                let err = result.unwrap_err().to_string();
                assert!(err.contains("was not created by herald"), "{name}: {err}");
            }
        }
        assert!(env.dir("handmade").join("SKILL.md").is_file());
        assert!(project.join("SKILL.md").is_file());
        // The user may delete the hand-made home skill, but not project ones.
        let user = env.manager(Actor::User);
        assert!(user.delete("proj").is_err());
        user.delete("handmade").unwrap();
        assert!(!env.dir("handmade").exists());
    }

    #[test]
    fn edit_patch_and_linked_files() {
        let env = Env::new();
        let m = env.manager(Actor::Agent);
        m.create("s", &skill_md("s", "first")).unwrap();
        m.edit("s", &skill_md("s", "second")).unwrap();
        let text = std::fs::read_to_string(env.dir("s").join("SKILL.md")).unwrap();
        assert!(text.contains("description: second"));
        m.patch("s", None, "1. do it", "1. do it well").unwrap();
        let err = m.patch("s", None, "nothing like this", "x").unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
        // A patch that breaks the front matter is refused and not written.
        let err = m.patch("s", None, "name: s", "name: t").unwrap_err();
        assert!(err.to_string().contains("differs"), "{err}");
        assert!(
            std::fs::read_to_string(env.dir("s").join("SKILL.md"))
                .unwrap()
                .contains("do it well")
        );

        m.write_file("s", "references/api.md", "GET /x\nGET /x\n")
            .unwrap();
        let err = m
            .patch("s", Some("references/api.md"), "GET /x", "y")
            .unwrap_err();
        assert!(err.to_string().contains("appears 2 times"), "{err}");
        m.patch("s", Some("references/api.md"), "GET /x\nGET", "GET /y\nGET")
            .unwrap();
        m.write_file("s", "scripts/deep/run.sh", "echo hi").unwrap();
        m.remove_file("s", "scripts/deep/run.sh").unwrap();
        assert!(
            !env.dir("s").join("scripts").exists(),
            "empty folders are removed"
        );
        let err = m.remove_file("s", "references/none.md").unwrap_err();
        assert!(err.to_string().contains("no such file"), "{err}");
        let err = m
            .write_file(
                "s",
                "references/big.bin",
                &"x".repeat(MAX_LINKED_FILE_BYTES + 1),
            )
            .unwrap_err();
        assert!(err.to_string().contains("the limit is 262144"), "{err}");
        m.delete("s").unwrap();
        assert!(!env.dir("s").exists());
        assert!(
            m.delete("s")
                .unwrap_err()
                .to_string()
                .contains("no skill named")
        );
    }

    #[test]
    fn linked_paths_follow_the_rules() {
        for good in ["references/a.md", "templates/x/y.txt", "./assets/logo.svg"] {
            assert!(linked_path(good).is_ok(), "{good}");
        }
        for (bad, reason) in [
            ("", "give a path"),
            ("../x", "'..' is not allowed"),
            ("references/../../etc/passwd", "'..' is not allowed"),
            ("/etc/passwd", "relative"),
            ("notes.md", "references/, templates/"),
            ("secrets/a.md", "references/, templates/"),
            ("SKILL.md", "references/, templates/"),
            ("references", "name a file inside"),
            ("references/.hidden", "hidden"),
        ] {
            let err = linked_path(bad).unwrap_err().to_string();
            assert!(err.contains(reason), "{bad}: {err}");
        }
    }

    #[test]
    fn symlinked_subfolders_are_refused() {
        let env = Env::new();
        let m = env.manager(Actor::Agent);
        m.create("s", &skill_md("s", "x")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), env.dir("s").join("references")).unwrap();
        let err = m.write_file("s", "references/a.md", "x").unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert!(!outside.path().join("a.md").exists());
    }
}
