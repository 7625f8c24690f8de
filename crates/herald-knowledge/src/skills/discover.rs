//! Finding skills: `$HERALD_HOME/skills/`, then `.agents/skills/` and
//! `.claude/skills/` in the working directory and its parents up to the
//! repository root. A skill folder may sit directly in a root or one level
//! down in a category folder (`skills/devops/deploy-docker/SKILL.md`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::frontmatter::{parse, validate_name};
use super::{CREATED_MARKER, MAX_SKILL_MD_BYTES, MAX_SKILLS, SkillError};

/// Where a skill was found; decides precedence and whether herald may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillSource {
    /// `$HERALD_HOME/skills/`: the only place herald writes.
    Home,
    /// A project's `.agents/skills/`.
    Agents,
    /// A project's `.claude/skills/` (Claude Code compatible).
    Claude,
}

impl SkillSource {
    /// Short label used in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Home => "home",
            Self::Agents => ".agents",
            Self::Claude => ".claude",
        }
    }
}

/// One discovered skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    pub category: Option<String>,
    /// The folder holding `SKILL.md`.
    pub dir: PathBuf,
    pub source: SkillSource,
    /// Whether herald created it (and so may change it).
    pub herald_created: bool,
}

impl SkillInfo {
    /// Where it lives, for messages: `home: /x/skills/name`.
    pub fn place(&self) -> String {
        format!("{}: {}", self.source.as_str(), self.dir.display())
    }
}

/// The result of a scan: usable skills sorted by name, and what was skipped.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub skills: Vec<SkillInfo>,
    /// One line per skipped folder or shadowed duplicate.
    pub problems: Vec<String>,
}

/// The folders skills are read from, in precedence order.
#[derive(Debug, Clone)]
pub struct SkillRoots {
    home_skills: PathBuf,
    roots: Vec<(PathBuf, SkillSource)>,
}

impl SkillRoots {
    /// Roots for a session in `cwd` with `home` as `$HERALD_HOME`.
    pub fn new(home: &Path, cwd: &Path) -> Self {
        let home_skills = home.join("skills");
        let mut roots = vec![(home_skills.clone(), SkillSource::Home)];
        for dir in project_dirs(cwd) {
            roots.push((dir.join(".agents/skills"), SkillSource::Agents));
            roots.push((dir.join(".claude/skills"), SkillSource::Claude));
        }
        Self { home_skills, roots }
    }

    /// `$HERALD_HOME/skills`, where herald creates skills.
    pub fn home_dir(&self) -> &Path {
        &self.home_skills
    }

    /// Every root, in precedence order.
    pub fn roots(&self) -> &[(PathBuf, SkillSource)] {
        &self.roots
    }

    /// Scans every root. The first skill of a name wins; later ones are
    /// reported as shadowed.
    pub fn discover(&self) -> Discovery {
        let mut found = Discovery::default();
        for (root, source) in &self.roots {
            for (dir, category) in skill_dirs(root) {
                if found.skills.len() >= MAX_SKILLS {
                    found.problems.push(format!(
                        "stopped after {MAX_SKILLS} skills; remove unused ones"
                    ));
                    return finish(found);
                }
                match load(&dir, *source, category) {
                    Ok(skill) => {
                        if let Some(first) = found.skills.iter().find(|s| s.name == skill.name) {
                            found.problems.push(format!(
                                "{}: skill {:?} is shadowed by {}",
                                dir.display(),
                                skill.name,
                                first.dir.display()
                            ));
                        } else {
                            found.skills.push(skill);
                        }
                    }
                    Err(reason) => found
                        .problems
                        .push(format!("{}: {reason}", dir.join("SKILL.md").display())),
                }
            }
        }
        finish(found)
    }

    /// The skill called `name`, or an error listing the known names.
    pub fn find(&self, name: &str) -> Result<SkillInfo, SkillError> {
        let found = self.discover();
        if let Some(skill) = found.skills.iter().find(|s| s.name == name) {
            return Ok(skill.clone());
        }
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        Err(SkillError::NotFound {
            name: name.to_owned(),
            available: if names.is_empty() {
                "There are no skills yet.".to_owned()
            } else {
                format!("Available skills: {}", names.join(", "))
            },
        })
    }
}

fn finish(mut found: Discovery) -> Discovery {
    found.skills.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// `cwd` and its parents up to the repository root (the first folder with
/// `.git`); only `cwd` when it is not inside a repository. Agent definitions
/// are looked up in the same project folders as skills.
pub fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return dirs;
        }
    }
    vec![cwd.to_path_buf()]
}

/// Skill folders under `root` with the category folder they sit in, sorted.
fn skill_dirs(root: &Path) -> Vec<(PathBuf, Option<String>)> {
    let mut out = Vec::new();
    for (dir, name) in subdirs(root) {
        if dir.join("SKILL.md").is_file() {
            out.push((dir, None));
        } else {
            for (inner, _) in subdirs(&dir) {
                if inner.join("SKILL.md").is_file() {
                    out.push((inner, Some(name.clone())));
                }
            }
        }
    }
    out
}

/// Visible sub-folders of `dir`, sorted by name.
fn subdirs(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let path = e.path();
            (!name.starts_with('.') && path.is_dir()).then_some((path, name))
        })
        .collect();
    out.sort();
    out
}

fn load(dir: &Path, source: SkillSource, category: Option<String>) -> Result<SkillInfo, String> {
    let path = dir.join("SKILL.md");
    let size = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    if size > (4 * MAX_SKILL_MD_BYTES) as u64 {
        return Err(format!("{size} bytes is too large for a skill"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let parsed = parse(&text).map_err(|e| e.to_string())?;
    let folder = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    let name = parsed
        .front
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map_or(folder, str::to_owned);
    validate_name(&name).map_err(|e| e.to_string())?;
    let description = parsed
        .front
        .description
        .as_deref()
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or("the front matter has no description")?;
    Ok(SkillInfo {
        category: parsed.category().map(str::to_owned).or(category),
        name,
        description,
        dir: dir.to_path_buf(),
        source,
        herald_created: dir.join(CREATED_MARKER).is_file(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    pub(crate) fn write_skill(root: &Path, rel: &str, name: &str, description: &str) -> PathBuf {
        let dir = root.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nbody\n"),
        )
        .unwrap();
        dir
    }

    #[test]
    fn finds_skills_in_all_three_places_with_precedence() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let cwd = repo.path().join("sub/dir");
        std::fs::create_dir_all(&cwd).unwrap();
        write_skill(home.path(), "skills/alpha", "alpha", "from home");
        write_skill(repo.path(), ".agents/skills/beta", "beta", "from agents");
        write_skill(&cwd, ".claude/skills/gamma", "gamma", "from claude in cwd");
        write_skill(repo.path(), ".claude/skills/alpha", "alpha", "shadowed");
        write_skill(home.path(), "skills/devops/delta", "delta", "in a category");
        std::fs::create_dir_all(home.path().join("skills/broken")).unwrap();
        std::fs::write(
            home.path().join("skills/broken/SKILL.md"),
            "no front matter",
        )
        .unwrap();

        let roots = SkillRoots::new(home.path(), &cwd);
        let found = roots.discover();
        let summary: Vec<(&str, SkillSource, &str)> = found
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.source, s.description.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("alpha", SkillSource::Home, "from home"),
                ("beta", SkillSource::Agents, "from agents"),
                ("delta", SkillSource::Home, "in a category"),
                ("gamma", SkillSource::Claude, "from claude in cwd"),
            ]
        );
        assert_eq!(found.skills[2].category.as_deref(), Some("devops"));
        let problems = found.problems.join("\n");
        assert!(problems.contains("shadowed"), "{problems}");
        assert!(problems.contains("broken/SKILL.md"), "{problems}");
        assert!(roots.find("beta").is_ok());
        let err = roots.find("nope").unwrap_err().to_string();
        assert!(
            err.contains("Available skills: alpha, beta, delta, gamma"),
            "{err}"
        );
    }

    #[test]
    fn outside_a_repository_only_cwd_is_searched() {
        let home = tempfile::tempdir().unwrap();
        let outer = tempfile::tempdir().unwrap();
        let cwd = outer.path().join("inner");
        std::fs::create_dir_all(&cwd).unwrap();
        write_skill(outer.path(), ".agents/skills/up", "up", "parent");
        write_skill(&cwd, ".agents/skills/here", "here", "cwd");
        let found = SkillRoots::new(home.path(), &cwd).discover();
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["here"]);
    }

    #[test]
    fn description_whitespace_is_collapsed_and_marker_detected() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("skills/multi");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: multi\ndescription: |\n  line one\n  line two\n---\nbody\n",
        )
        .unwrap();
        std::fs::write(dir.join(CREATED_MARKER), "").unwrap();
        let skill = SkillRoots::new(home.path(), home.path())
            .find("multi")
            .unwrap();
        assert_eq!(skill.description, "line one line two");
        assert!(skill.herald_created);
    }
}
