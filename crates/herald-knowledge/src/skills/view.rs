//! Showing a skill: its `SKILL.md` with the list of linked files, or one
//! linked file. Reading is allowed for skills from every source.

use std::path::{Component, Path, PathBuf};

use super::{MAX_LINKED_FILE_BYTES, MAX_LINKED_FILES, SkillError, SkillInfo, io_err};
use crate::fsutil::thousands;

/// Files in a skill folder other than `SKILL.md` and hidden ones, relative,
/// sorted, with their sizes; at most [`MAX_LINKED_FILES`] (+1 to detect more).
pub(crate) fn linked_files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    collect(dir, Path::new(""), 0, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, rel: &Path, depth: usize, out: &mut Vec<(PathBuf, u64)>) {
    if depth > 4 || out.len() > MAX_LINKED_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        if text.starts_with('.') || (depth == 0 && text == "SKILL.md") {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let child = rel.join(text);
        if kind.is_dir() {
            collect(&entry.path(), &child, depth + 1, out);
        } else if kind.is_file() {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            out.push((child, size));
        }
        if out.len() > MAX_LINKED_FILES {
            return;
        }
    }
}

/// `SKILL.md` in full, then the linked files to load with `file_path`.
pub fn render_skill(skill: &SkillInfo) -> Result<String, SkillError> {
    let path = skill.dir.join("SKILL.md");
    let text = std::fs::read_to_string(&path).map_err(io_err("read", &path))?;
    let mut out = format!(
        "Skill {} ({}{})\n\n{}",
        skill.name,
        skill.place(),
        skill
            .category
            .as_ref()
            .map(|c| format!(", category {c}"))
            .unwrap_or_default(),
        text.trim_end()
    );
    let files = linked_files(&skill.dir);
    if !files.is_empty() {
        out.push_str("\n\nLinked files (load one with skill_view file_path):");
        for (rel, size) in files.iter().take(MAX_LINKED_FILES) {
            out.push_str(&format!(
                "\n- {} ({} bytes)",
                rel.display(),
                thousands(*size as usize)
            ));
        }
        if files.len() > MAX_LINKED_FILES {
            out.push_str(&format!(
                "\n- ... more files (only {MAX_LINKED_FILES} listed)"
            ));
        }
    }
    Ok(out)
}

/// One file of the skill, by a path relative to its folder.
pub fn render_file(skill: &SkillInfo, file_path: &str) -> Result<String, SkillError> {
    let bad = |reason: &str| SkillError::Path {
        path: file_path.to_owned(),
        reason: reason.to_owned(),
    };
    let rel = Path::new(file_path.trim());
    if file_path.trim().is_empty() {
        return Err(bad("give a path relative to the skill folder"));
    }
    for component in rel.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(bad("'..' is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(bad("use a path relative to the skill folder"));
            }
        }
    }
    let path = skill.dir.join(rel);
    let missing = || {
        let listed: Vec<String> = linked_files(&skill.dir)
            .iter()
            .take(20)
            .map(|(p, _)| p.display().to_string())
            .collect();
        bad(&format!(
            "no such file in skill {}; its files: {}",
            skill.name,
            if listed.is_empty() {
                "(none besides SKILL.md)".to_owned()
            } else {
                listed.join(", ")
            }
        ))
    };
    let (Ok(real), Ok(root)) = (path.canonicalize(), skill.dir.canonicalize()) else {
        return Err(missing());
    };
    if !real.starts_with(&root) {
        return Err(bad("the path leads outside the skill folder"));
    }
    if !real.is_file() {
        return Err(missing());
    }
    let size = std::fs::metadata(&real)
        .map_err(io_err("read", &real))?
        .len() as usize;
    if size > MAX_LINKED_FILE_BYTES {
        return Err(SkillError::TooLarge {
            what: file_path.to_owned(),
            size,
            limit: MAX_LINKED_FILE_BYTES,
        });
    }
    let bytes = std::fs::read(&real).map_err(io_err("read", &real))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| bad("it is a binary file; only text files can be shown"))?;
    Ok(format!("{}/{}\n\n{}", skill.name, rel.display(), text))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::skills::SkillRoots;

    fn skill(home: &Path) -> SkillInfo {
        let dir = home.join("skills/s");
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: s\ndescription: d\n---\nUse references/api.md\n",
        )
        .unwrap();
        std::fs::write(dir.join("references/api.md"), "GET /things").unwrap();
        std::fs::write(dir.join("forms.md"), "top-level file").unwrap();
        std::fs::write(dir.join(".herald-created"), "").unwrap();
        std::fs::write(dir.join("logo.bin"), [0xff, 0xfe, 0x00]).unwrap();
        SkillRoots::new(home, home).find("s").unwrap()
    }

    #[test]
    fn view_shows_text_and_linked_files_without_hidden_ones() {
        let home = tempfile::tempdir().unwrap();
        let s = skill(home.path());
        let text = render_skill(&s).unwrap();
        assert!(text.contains("Use references/api.md"), "{text}");
        assert!(text.contains("- references/api.md (11 bytes)"), "{text}");
        assert!(text.contains("- forms.md"), "{text}");
        assert!(!text.contains(".herald-created"), "{text}");
    }

    #[test]
    fn file_view_reads_inside_the_folder_only() {
        let home = tempfile::tempdir().unwrap();
        let s = skill(home.path());
        assert!(
            render_file(&s, "references/api.md")
                .unwrap()
                .ends_with("GET /things")
        );
        assert!(render_file(&s, "forms.md").is_ok());
        for (path, reason) in [
            ("../../x", "'..'"),
            ("/etc/passwd", "relative"),
            ("references/none.md", "its files: forms.md"),
            ("logo.bin", "binary"),
        ] {
            let err = render_file(&s, path).unwrap_err().to_string();
            assert!(err.contains(reason), "{path}: {err}");
        }
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), s.dir.join("link")).unwrap();
        let err = render_file(&s, "link").unwrap_err().to_string();
        assert!(err.contains("outside the skill folder"), "{err}");
    }
}
