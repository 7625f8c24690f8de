//! The compact skills index placed in a new session's system prompt.

use std::path::Path;

use super::SkillRoots;

/// Most skills listed in the index; the rest are reachable via `skills_list`.
pub const MAX_INDEX_SKILLS: usize = 50;
/// Longest description shown per index line.
pub const MAX_INDEX_DESCRIPTION_CHARS: usize = 160;

/// The skills section of the system prompt: a heading, then one line per
/// skill, `- name: description`, sorted by name, each description cut to 160
/// chars and at most 50 lines. `None` when no skill is found. Call it once
/// when a session starts (`home` is `$HERALD_HOME`, `cwd` the session's
/// working directory); the index then stays fixed for the session so the
/// prompt prefix is stable, and skills created meanwhile appear next session.
pub fn skills_prompt_index(home: &Path, cwd: &Path) -> Option<String> {
    let found = SkillRoots::new(home, cwd).discover();
    if found.skills.is_empty() {
        return None;
    }
    let mut out = String::from(
        "# Skills\nSaved procedures. When a task matches one, load it with skill_view first.",
    );
    for skill in found.skills.iter().take(MAX_INDEX_SKILLS) {
        out.push_str(&format!(
            "\n- {}: {}",
            skill.name,
            shorten(&skill.description, MAX_INDEX_DESCRIPTION_CHARS)
        ));
    }
    if found.skills.len() > MAX_INDEX_SKILLS {
        out.push_str(&format!(
            "\n- ... and {} more (skills_list shows all)",
            found.skills.len() - MAX_INDEX_SKILLS
        ));
    }
    Some(out)
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(home: &Path, name: &str, description: &str) {
        let dir = home.join("skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nbody\n"),
        )
        .unwrap();
    }

    #[test]
    fn none_without_skills() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(skills_prompt_index(home.path(), home.path()), None);
    }

    #[test]
    fn one_line_per_skill_sorted_and_capped() {
        let home = tempfile::tempdir().unwrap();
        write(home.path(), "zeta", "last one");
        write(home.path(), "alpha", &"long ".repeat(60));
        let index = skills_prompt_index(home.path(), home.path()).unwrap();
        let lines: Vec<&str> = index.lines().collect();
        assert_eq!(lines[0], "# Skills");
        assert!(lines[2].starts_with("- alpha: long long"), "{index}");
        assert!(lines[2].ends_with('…'), "{index}");
        assert_eq!(
            lines[2].chars().count(),
            "- alpha: ".len() + MAX_INDEX_DESCRIPTION_CHARS
        );
        assert_eq!(lines[3], "- zeta: last one");
        for i in 0..MAX_INDEX_SKILLS {
            write(home.path(), &format!("s{i:02}"), "d");
        }
        let index = skills_prompt_index(home.path(), home.path()).unwrap();
        assert_eq!(index.lines().count(), 2 + MAX_INDEX_SKILLS + 1);
        assert!(
            index.ends_with("... and 2 more (skills_list shows all)"),
            "{index}"
        );
    }
}
