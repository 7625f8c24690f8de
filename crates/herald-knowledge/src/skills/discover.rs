//! Finding skills: `$HERALD_HOME/skills/`, then `.agents/skills/` and
//! `.claude/skills/` in the working directory and its parents up to the
//! repository root.
//!
//! Packs are published in many layouts, so a skills root is searched at any
//! depth (up to [`MAX_DEPTH`] folders): every folder holding a `SKILL.md` is
//! one skill, and the folders above it name its category
//! (`skills/devops/docker/deploy/SKILL.md` is `deploy` in `devops/docker`).
//! A skill's own folder is not searched for more skills: its sub-folders are
//! its references, templates and examples (a skill-authoring skill ships
//! template `SKILL.md` files that are not skills). Hidden folders are
//! skipped. There is no cap on the number of skills; a scan stops only after
//! [`MAX_SCAN_DIRS`] folders, and says so.
//!
//! A skill whose front-matter `name` is not a valid name (`Ahrefs
//! Automation`) is loaded under its folder name made into one
//! ([`slugify`]), with a warning; one that cannot be loaded at all is kept in
//! [`Discovery::rejected`] with the reason, so every front end can say why.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::frontmatter::{parse, slugify, validate_name};
use super::search::close_names;
use super::{CREATED_MARKER, MAX_SKILL_MD_BYTES, SkillError};

/// Deepest folder level searched under a skills root (a skill folder at
/// depth 1 sits directly in the root). Bounds symlink loops.
pub const MAX_DEPTH: usize = 12;
/// Most folders one scan visits; past it the scan stops with a problem line.
pub const MAX_SCAN_DIRS: usize = 100_000;

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
    /// False for `disable-model-invocation: true`: the skill stays out of
    /// the model's index and tools; only the user invokes it.
    pub model_invocable: bool,
    /// Why the skill goes by another name than its front matter gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl SkillInfo {
    /// Where it lives, for messages: `home: /x/skills/name`.
    pub fn place(&self) -> String {
        format!("{}: {}", self.source.as_str(), self.dir.display())
    }
}

/// A `SKILL.md` that could not be loaded, kept so `herald skills list` and
/// `skill_view` can say why instead of the skill silently vanishing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedSkill {
    /// The name it would go by: its front-matter name when valid, else its
    /// folder name made into a name, else the folder name as it is.
    pub name: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    pub source: SkillSource,
    /// What is wrong and what to fix.
    pub error: String,
}

/// The result of a scan: usable skills sorted by name, the rejected ones,
/// and one line per problem (rejected, shadowed, scan stopped).
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub skills: Vec<SkillInfo>,
    /// Skills that failed validation, sorted by name.
    pub rejected: Vec<RejectedSkill>,
    /// One line per rejected folder, shadowed duplicate or stopped scan.
    pub problems: Vec<String>,
    /// The lines of `problems` that are not about a rejected skill
    /// (shadowed duplicates, a stopped scan).
    pub notes: Vec<String>,
}

impl Discovery {
    /// The skills the model may see and load (not
    /// `disable-model-invocation`), sorted by name.
    pub fn for_model(&self) -> impl Iterator<Item = &SkillInfo> {
        self.skills.iter().filter(|s| s.model_invocable)
    }

    /// The skill called `name`: its exact name, else the name `name` turns
    /// into (`"Ahrefs Automation"` finds `ahrefs-automation`). A rejected
    /// skill of that name gives [`SkillError::Rejected`] with its error; an
    /// unknown name gives a few close names, not the whole list.
    pub fn lookup(&self, name: &str) -> Result<&SkillInfo, SkillError> {
        let name = name.trim();
        let slug = slugify(name);
        let matches = |candidate: &str| candidate == name || slug.as_deref() == Some(candidate);
        if let Some(skill) = self.skills.iter().find(|s| s.name == name) {
            return Ok(skill);
        }
        if let Some(skill) = self.skills.iter().find(|s| matches(&s.name)) {
            return Ok(skill);
        }
        if let Some(bad) = self.rejected.iter().find(|r| {
            matches(&r.name)
                || r.path
                    .parent()
                    .and_then(Path::file_name)
                    .and_then(|f| f.to_str())
                    .is_some_and(|folder| folder == name)
        }) {
            return Err(SkillError::Rejected {
                name: bad.name.clone(),
                path: bad.path.clone(),
                error: bad.error.clone(),
            });
        }
        Err(SkillError::NotFound {
            name: name.to_owned(),
            available: self.suggestions(name),
        })
    }

    /// "Did you mean ...?" with a few close names, or how to search.
    fn suggestions(&self, name: &str) -> String {
        if self.skills.is_empty() {
            return "There are no skills yet.".to_owned();
        }
        let close = close_names(&self.skills, name, 5);
        let search = format!(
            "skills_list with a query searches all {} skills (`herald skills list` shows them)",
            self.skills.len()
        );
        if close.is_empty() {
            format!("No similar name; {search}.")
        } else {
            format!("Did you mean: {}? Else {search}.", close.join(", "))
        }
    }
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
        let mut names: HashSet<String> = HashSet::new();
        let mut budget = MAX_SCAN_DIRS;
        for (root, source) in &self.roots {
            let mut dirs = Vec::new();
            scan(root, &mut Vec::new(), &mut dirs, &mut budget);
            for loaded in load_all(&dirs, *source) {
                match loaded {
                    Ok(skill) => {
                        if names.contains(&skill.name) {
                            let first = found
                                .skills
                                .iter()
                                .find(|s| s.name == skill.name)
                                .map(|s| s.dir.display().to_string())
                                .unwrap_or_default();
                            let note = format!(
                                "{}: skill {:?} is shadowed by {first}",
                                skill.dir.display(),
                                skill.name,
                            );
                            found.problems.push(note.clone());
                            found.notes.push(note);
                        } else {
                            names.insert(skill.name.clone());
                            found.skills.push(skill);
                        }
                    }
                    Err(bad) => {
                        found
                            .problems
                            .push(format!("{}: {}", bad.path.display(), bad.error));
                        found.rejected.push(bad);
                    }
                }
            }
            if budget == 0 {
                let note = format!(
                    "{}: stopped scanning after {MAX_SCAN_DIRS} folders; skills further in were not read. Keep skill packs in their own folders",
                    root.display()
                );
                found.problems.push(note.clone());
                found.notes.push(note);
                break;
            }
        }
        found.skills.sort_by(|a, b| a.name.cmp(&b.name));
        found.rejected.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// The skill called `name` (see [`Discovery::lookup`]).
    pub fn find(&self, name: &str) -> Result<SkillInfo, SkillError> {
        self.discover().lookup(name).cloned()
    }
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

/// A skill folder found by [`scan`].
struct Found {
    dir: PathBuf,
    /// The folders between the root and the skill, joined with `/`.
    category: Option<String>,
    /// Whether it holds [`CREATED_MARKER`].
    herald_created: bool,
}

/// Adds the skill folders under `dir` to `out`, in name order, with the
/// category (`trail` of folders between the root and the skill). One
/// `read_dir` per folder: a folder holding `SKILL.md` is a skill and is not
/// searched further.
fn scan(dir: &Path, trail: &mut Vec<String>, out: &mut Vec<Found>, budget: &mut usize) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subdirs: Vec<(String, PathBuf)> = Vec::new();
    let mut is_skill = false;
    let mut herald_created = false;
    for entry in entries.filter_map(Result::ok) {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        let is_dir = kind.is_dir() || (kind.is_symlink() && path.is_dir());
        if name == "SKILL.md" && !is_dir {
            is_skill = true;
        } else if name == CREATED_MARKER && !is_dir {
            herald_created = true;
        } else if is_dir && !name.starts_with('.') {
            subdirs.push((name, path));
        }
    }
    if is_skill && !trail.is_empty() {
        let category = (trail.len() > 1).then(|| trail[..trail.len() - 1].join("/"));
        out.push(Found {
            dir: dir.to_path_buf(),
            category,
            herald_created,
        });
        return;
    }
    if trail.len() >= MAX_DEPTH {
        return;
    }
    subdirs.sort();
    for (name, path) in subdirs {
        trail.push(name);
        scan(&path, trail, out, budget);
        trail.pop();
    }
}

/// The folder's own name.
fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned()
}

/// Folders at or above which loading is spread over threads.
const PARALLEL_FROM: usize = 64;

/// [`load`] for each of `dirs`, in order; big packs on several threads
/// (reading and parsing 2,000 files is most of a scan).
fn load_all(dirs: &[Found], source: SkillSource) -> Vec<Result<SkillInfo, RejectedSkill>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads <= 1 || dirs.len() < PARALLEL_FROM {
        return dirs.iter().map(|found| load(found, source)).collect();
    }
    let chunk = dirs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = dirs
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|found| load(found, source))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| {
                part.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// `path` as text if it has at most `limit` bytes; `Err(None)` when larger.
fn read_limited(path: &Path, limit: usize) -> Result<String, Option<std::io::Error>> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(Some)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(Some)?;
    if bytes.len() > limit {
        return Err(None);
    }
    String::from_utf8(bytes).map_err(|_| {
        Some(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not UTF-8 text",
        ))
    })
}

fn load(found: &Found, source: SkillSource) -> Result<SkillInfo, RejectedSkill> {
    let dir = found.dir.as_path();
    let path = dir.join("SKILL.md");
    let folder = folder_name(dir);
    let reject = |name: &str, error: String| RejectedSkill {
        name: name.to_owned(),
        path: path.clone(),
        source,
        error,
    };
    let fallback = slugify(&folder).unwrap_or_else(|| folder.clone());
    let limit = 4 * MAX_SKILL_MD_BYTES;
    let text = read_limited(&path, limit).map_err(|err| match err {
        Some(e) => reject(&fallback, format!("cannot read it: {e}")),
        None => reject(
            &fallback,
            format!("it is larger than {limit} bytes, the most a SKILL.md may have. Move details into references/"),
        ),
    })?;
    let parsed = parse(&text).map_err(|e| reject(&fallback, e.to_string()))?;
    let declared = parsed
        .front
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let (name, warning) = resolve_name(declared, &folder).map_err(|e| reject(&fallback, e))?;
    let description = parsed
        .front
        .description
        .as_deref()
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            reject(
                &name,
                "the front matter has no description; add `description:` saying when to use the skill"
                    .to_owned(),
            )
        })?;
    Ok(SkillInfo {
        category: parsed
            .category()
            .map(str::to_owned)
            .or_else(|| found.category.clone()),
        model_invocable: !parsed
            .front
            .disable_model_invocation
            .as_ref()
            .is_some_and(|f| f.is_set()),
        name,
        description,
        dir: dir.to_path_buf(),
        source,
        herald_created: found.herald_created,
        warning,
    })
}

/// The name a skill goes by, with a warning when it is not the declared one:
/// the declared name when valid, else the folder name when valid, else the
/// folder name (or the declared name) made into a name.
fn resolve_name(declared: Option<&str>, folder: &str) -> Result<(String, Option<String>), String> {
    if let Some(name) = declared
        && validate_name(name).is_ok()
    {
        return Ok((name.to_owned(), None));
    }
    let from_folder = slugify(folder);
    let origin = if from_folder.is_some() {
        "from its folder name"
    } else {
        "made from it"
    };
    let slug = from_folder.or_else(|| declared.and_then(slugify));
    match (declared, slug) {
        (None, Some(slug)) if slug == folder => Ok((slug, None)),
        (None, Some(slug)) => Ok((
            slug.clone(),
            Some(format!(
                "the front matter has no name and the folder name {folder:?} is not a valid skill name; loaded as {slug:?}"
            )),
        )),
        (Some(declared), Some(slug)) => Ok((
            slug.clone(),
            Some(format!(
                "front-matter name {declared:?} is not a valid skill name (lowercase a-z, 0-9, '.', '_', '-'); loaded as {slug:?}, {origin}. Set `name: {slug}` to silence this"
            )),
        )),
        (_, None) => Err(format!(
            "neither the front-matter name nor the folder name {folder:?} can be made into a skill name; set `name:` to lowercase a-z, 0-9 and '-' (e.g. deploy-docker)"
        )),
    }
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
        assert!(
            found
                .skills
                .iter()
                .all(|s| s.model_invocable && s.warning.is_none())
        );
        assert_eq!(found.rejected.len(), 1);
        assert_eq!(found.rejected[0].name, "broken");
        let problems = found.problems.join("\n");
        assert!(problems.contains("shadowed"), "{problems}");
        assert!(problems.contains("broken/SKILL.md"), "{problems}");
        assert!(roots.find("beta").is_ok());
        let err = roots.find("alpah").unwrap_err().to_string();
        assert!(err.contains("Did you mean: alpha?"), "{err}");
        let err = roots.find("zzz").unwrap_err().to_string();
        assert!(
            err.contains("No similar name; skills_list with a query searches all 4 skills"),
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

    #[test]
    fn title_case_names_load_under_their_folder_name_with_a_warning() {
        let home = tempfile::tempdir().unwrap();
        let skills = home.path().join("skills");
        super::super::fixture::write_skill(
            &skills,
            "composio/ahrefs-automation",
            Some("Ahrefs Automation"),
            "Automate Ahrefs",
            "",
        )
        .unwrap();
        super::super::fixture::write_skill(&skills, "My Tool", None, "Folder with a space", "")
            .unwrap();
        super::super::fixture::write_skill(&skills, "plain", Some("plain"), "No warning", "")
            .unwrap();
        let roots = SkillRoots::new(home.path(), home.path());
        let found = roots.discover();
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ahrefs-automation", "my-tool", "plain"]);
        let warning = found.skills[0].warning.as_deref().unwrap();
        assert!(
            warning
                .starts_with("front-matter name \"Ahrefs Automation\" is not a valid skill name")
                && warning.contains("loaded as \"ahrefs-automation\", from its folder name"),
            "{warning}"
        );
        assert!(
            found.skills[1]
                .warning
                .as_deref()
                .unwrap()
                .contains("folder name \"My Tool\"")
        );
        assert_eq!(found.skills[2].warning, None);
        assert!(
            found.rejected.is_empty() && found.problems.is_empty(),
            "{:?}",
            found.problems
        );
        // The declared name finds it too.
        assert_eq!(
            roots.find("Ahrefs Automation").unwrap().name,
            "ahrefs-automation"
        );
        assert_eq!(
            roots.find("ahrefs-automation").unwrap().category.as_deref(),
            Some("composio")
        );
    }

    #[test]
    fn nested_layouts_are_found_at_any_depth_but_not_inside_a_skill() {
        let home = tempfile::tempdir().unwrap();
        let skills = home.path().join("skills");
        let fx = |rel: &str, name: &str| {
            super::super::fixture::write_skill(&skills, rel, Some(name), "d", "").unwrap()
        };
        fx("top", "top");
        fx("a/b/c/d/e/deep", "deep");
        let creator = fx("tools/skill-creator", "skill-creator");
        // A template inside a skill is part of that skill, not a skill.
        super::super::fixture::write_skill(&creator, "templates/example", Some("example"), "d", "")
            .unwrap();
        fx(".hidden/secret", "secret");
        let mut rel = String::new();
        for i in 0..MAX_DEPTH {
            rel.push_str(&format!("l{i}/"));
        }
        fx(&format!("{rel}too-deep"), "too-deep");
        let found = SkillRoots::new(home.path(), home.path()).discover();
        let summary: Vec<(&str, Option<&str>)> = found
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.category.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                ("deep", Some("a/b/c/d/e")),
                ("skill-creator", Some("tools")),
                ("top", None)
            ]
        );
    }

    #[test]
    fn a_thousand_skill_pack_is_read_whole_and_every_skill_is_reachable() {
        let home = tempfile::tempdir().unwrap();
        let skills = home.path().join("skills");
        let mut names = super::super::fixture::service_pack(&skills, 1_000).unwrap();
        names.extend(super::super::fixture::popular_packs(&skills).unwrap());
        names.sort();
        let found = SkillRoots::new(home.path(), home.path()).discover();
        let loaded: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(loaded, names);
        assert!(found.problems.is_empty(), "{:?}", &found.problems[..3]);
        let renamed = found.skills.iter().filter(|s| s.warning.is_some()).count();
        assert_eq!(renamed, 1_000usize.div_ceil(13));
        for name in &names {
            assert_eq!(&found.lookup(name).unwrap().name, name);
        }
    }

    #[test]
    fn disable_model_invocation_keeps_a_skill_from_the_model_only() {
        let home = tempfile::tempdir().unwrap();
        let skills = home.path().join("skills");
        super::super::fixture::write_skill(
            &skills,
            "deploy",
            Some("deploy"),
            "Ship it",
            "disable-model-invocation: true\n",
        )
        .unwrap();
        super::super::fixture::write_skill(
            &skills,
            "lint",
            Some("lint"),
            "Lint it",
            "disable-model-invocation: false\n",
        )
        .unwrap();
        let found = SkillRoots::new(home.path(), home.path()).discover();
        assert_eq!(found.skills.len(), 2);
        assert!(!found.skills[0].model_invocable && found.skills[1].model_invocable);
        let for_model: Vec<&str> = found.for_model().map(|s| s.name.as_str()).collect();
        assert_eq!(for_model, ["lint"]);
        assert_eq!(found.lookup("deploy").unwrap().name, "deploy");
    }

    #[test]
    fn each_invalid_skill_gets_its_error_and_the_rest_still_load() {
        let home = tempfile::tempdir().unwrap();
        let skills = home.path().join("skills");
        super::super::fixture::write_skill(&skills, "good", Some("good"), "Fine", "").unwrap();
        let cases = [
            ("no-front", "plain text", "must start with a '---' line"),
            ("unclosed", "---\nname: unclosed\n", "not closed"),
            ("bad-yaml", "---\nname: [x\n---\nb", "not valid YAML"),
            (
                "no-desc",
                "---\nname: no-desc\n---\nb",
                "has no description",
            ),
            (
                "!!!",
                "---\nname: \"???\"\ndescription: d\n---\nb",
                "nor the folder name \"!!!\" can be made into a skill name",
            ),
        ];
        for (folder, text, _) in &cases {
            std::fs::create_dir_all(skills.join(folder)).unwrap();
            std::fs::write(skills.join(folder).join("SKILL.md"), text).unwrap();
        }
        let big = skills.join("huge");
        std::fs::create_dir_all(&big).unwrap();
        std::fs::write(big.join("SKILL.md"), "x".repeat(4 * MAX_SKILL_MD_BYTES + 1)).unwrap();
        let roots = SkillRoots::new(home.path(), home.path());
        let found = roots.discover();
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good"]);
        assert_eq!(found.rejected.len(), cases.len() + 1);
        assert_eq!(found.problems.len(), cases.len() + 1);
        for (folder, _, error) in &cases {
            let bad = found
                .rejected
                .iter()
                .find(|r| r.path.parent().unwrap().ends_with(folder))
                .unwrap();
            assert!(bad.error.contains(error), "{folder}: {}", bad.error);
            let err = roots.find(folder).unwrap_err();
            assert!(
                matches!(err, SkillError::Rejected { .. }),
                "{folder}: {err}"
            );
            let text = err.to_string();
            assert!(
                text.contains("is not available") && text.contains(error),
                "{text}"
            );
        }
        let err = roots.find("huge").unwrap_err().to_string();
        assert!(err.contains("Move details into references/"), "{err}");
        // An unknown name lists a few close names, not every skill.
        let err = roots.find("goods").unwrap_err().to_string();
        assert!(err.contains("Did you mean: good?"), "{err}");
    }
}
