//! The compact skills index placed in a new session's system prompt.
//!
//! Every skill the model may use is named, whatever the pack size, as long
//! as names fit the budget: descriptions are shortened (at word boundaries)
//! first, then dropped, and only when even the names do not fit does the
//! index name as many as fit and say how many more exist and how to search
//! them. `skills_list` lays out its answer the same way ([`fit`]).

use std::path::Path;

use super::{SkillInfo, SkillRoots, SkillSource};

/// Longest description shown per index line when the budget allows.
pub const MAX_INDEX_DESCRIPTION_CHARS: usize = 250;
/// Shortest useful description: below it the index lists names only.
pub const MIN_INDEX_DESCRIPTION_CHARS: usize = 40;

const HEADER: &str =
    "# Skills\nSaved procedures. When a task matches one, load it with skill_view first.";
const NAMES_NOTE: &str =
    "Too many skills to describe here; skills_list with a query shows their descriptions:";

/// A built index and how it came out (benchmarks and tests read the
/// counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsIndex {
    /// The prompt section.
    pub text: String,
    /// Skills the model may use (the index's subject).
    pub skills: usize,
    /// Skills named in the text.
    pub named: usize,
    /// Skills shown with a description.
    pub described: usize,
    /// Longest description allowed (0 when names only).
    pub description_chars: usize,
}

/// The skills section of a new session's system prompt for `home`
/// (`$HERALD_HOME`) and `cwd`, at most `budget` chars; `None` when the model
/// has no skill. Called once when a session starts; the index then stays
/// fixed for the session so the prompt prefix is stable, and skills created
/// meanwhile appear next session.
pub fn skills_prompt_index(home: &Path, cwd: &Path, budget: usize) -> Option<String> {
    let found = SkillRoots::new(home, cwd).discover();
    let skills: Vec<&SkillInfo> = found.for_model().collect();
    build_index(&skills, budget).map(|index| index.text)
}

/// The index of `skills` (sorted by name, `disable-model-invocation` ones
/// already left out) in at most `budget` chars.
pub fn build_index(skills: &[&SkillInfo], budget: usize) -> Option<SkillsIndex> {
    if skills.is_empty() {
        return None;
    }
    let entries: Vec<Entry<'_>> = skills
        .iter()
        .map(|s| Entry {
            name: &s.name,
            label: s.name.clone(),
            description: &s.description,
            priority: priority(s),
        })
        .collect();
    let total = skills.len();
    let more = move |left: usize| {
        format!(
            "...and {left} more of {total} skills, not named here. Search them by name and description with skills_list {{\"query\": \"a few words\"}}."
        )
    };
    let fitted = fit(
        &entries,
        &Rules {
            header: HEADER,
            budget,
            min_description: MIN_INDEX_DESCRIPTION_CHARS,
            max_description: MAX_INDEX_DESCRIPTION_CHARS,
            names_note: NAMES_NOTE,
            more: &more,
        },
    );
    Some(SkillsIndex {
        text: fitted.text,
        skills: total,
        named: fitted.named,
        described: fitted.described,
        description_chars: fitted.description_chars,
    })
}

/// Which skills a listing too long for all names names first: those herald
/// created, then the rest of `$HERALD_HOME/skills`, then project skills, so
/// a large pack cannot crowd out the user's own few.
pub(crate) fn priority(skill: &SkillInfo) -> u8 {
    match (skill.herald_created, skill.source) {
        (true, _) => 0,
        (false, SkillSource::Home) => 1,
        _ => 2,
    }
}

/// One listed skill: its bare name, the label its line starts with, its
/// description, and its priority when not every name fits (0 first).
pub(crate) struct Entry<'a> {
    pub name: &'a str,
    pub label: String,
    pub description: &'a str,
    pub priority: u8,
}

/// How [`fit`] lays a listing out.
pub(crate) struct Rules<'a> {
    pub header: &'a str,
    /// Most chars of the whole text.
    pub budget: usize,
    pub min_description: usize,
    pub max_description: usize,
    /// The line before a names-only list.
    pub names_note: &'a str,
    /// The closing line when `n` entries are not named.
    pub more: &'a dyn Fn(usize) -> String,
}

/// A laid-out listing.
pub(crate) struct Fitted {
    pub text: String,
    pub named: usize,
    pub described: usize,
    pub description_chars: usize,
}

/// Lays `entries` out in at most `rules.budget` chars, in three steps:
/// one line each (`- label: description`) with descriptions cut at a word
/// boundary to the longest length that fits (never below
/// `min_description`); else every name in one comma-separated list; else as
/// many names as fit (by `priority`, then order; shown in order) and the
/// `more` line.
pub(crate) fn fit(entries: &[Entry<'_>], rules: &Rules<'_>) -> Fitted {
    let header_chars = rules.header.chars().count();
    let lines_chars = |max: usize| -> usize {
        header_chars
            + entries
                .iter()
                .map(|e| {
                    let (desc, cut) = cut_at_word(e.description, max);
                    let desc_chars = desc.chars().count() + usize::from(cut);
                    3 + e.label.chars().count() + if desc_chars > 0 { 2 + desc_chars } else { 0 }
                })
                .sum::<usize>()
    };
    if lines_chars(rules.min_description) <= rules.budget {
        let (mut low, mut high) = (rules.min_description, rules.max_description);
        while low < high {
            let mid = (low + high).div_ceil(2);
            if lines_chars(mid) <= rules.budget {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        let mut text = rules.header.to_owned();
        let mut described = 0;
        for e in entries {
            text.push_str("\n- ");
            text.push_str(&e.label);
            let (desc, cut) = cut_at_word(e.description, low);
            if !desc.is_empty() {
                described += 1;
                text.push_str(": ");
                text.push_str(desc);
                if cut {
                    text.push('…');
                }
            }
        }
        return Fitted {
            text,
            named: entries.len(),
            described,
            description_chars: low,
        };
    }
    let mut text = format!("{}\n{}\n", rules.header, rules.names_note);
    let names_chars: usize = entries
        .iter()
        .map(|e| e.name.chars().count() + 2)
        .sum::<usize>()
        .saturating_sub(2);
    if text.chars().count() + names_chars <= rules.budget {
        let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
        text.push_str(&names.join(", "));
        return Fitted {
            text,
            named: entries.len(),
            described: 0,
            description_chars: 0,
        };
    }
    // Room for the closing line with the largest count it can state.
    let reserve = (rules.more)(entries.len()).chars().count() + 1;
    let mut used = text.chars().count() + reserve;
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (entries[i].priority, i));
    let mut chosen = vec![false; entries.len()];
    let mut named = 0;
    for i in order {
        let cost = entries[i].name.chars().count() + if named == 0 { 0 } else { 2 };
        if used + cost > rules.budget {
            break;
        }
        chosen[i] = true;
        used += cost;
        named += 1;
    }
    let names: Vec<&str> = entries
        .iter()
        .zip(&chosen)
        .filter(|(_, chosen)| **chosen)
        .map(|(e, _)| e.name)
        .collect();
    text.push_str(&names.join(", "));
    text.push('\n');
    text.push_str(&(rules.more)(entries.len() - named));
    Fitted {
        text,
        named,
        described: 0,
        description_chars: 0,
    }
}

/// `text` whole when it has at most `max` chars; else its longest run of
/// whole words that leaves room for a `…` (trailing punctuation dropped),
/// and `true`. Never cuts inside a word: a first word longer than the room
/// gives an empty string.
pub(crate) fn cut_at_word(text: &str, max: usize) -> (&str, bool) {
    if text.chars().count() <= max {
        return (text, false);
    }
    let room = max.saturating_sub(1);
    let mut end = 0;
    for (count, (i, c)) in text.char_indices().enumerate() {
        if count > room {
            break;
        }
        if c.is_whitespace() {
            end = i;
        }
    }
    let kept = text[..end].trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, ',' | ';' | ':' | '-' | '(' | '—' | '–' | '/')
    });
    (kept, true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::skills::SkillSource;

    fn skill(name: &str, description: &str) -> SkillInfo {
        SkillInfo {
            name: name.into(),
            description: description.into(),
            category: None,
            dir: PathBuf::from("/x").join(name),
            source: SkillSource::Claude,
            herald_created: false,
            model_invocable: true,
            warning: None,
        }
    }

    fn index(skills: &[SkillInfo], budget: usize) -> SkillsIndex {
        let refs: Vec<&SkillInfo> = skills.iter().collect();
        build_index(&refs, budget).unwrap()
    }

    #[test]
    fn none_without_skills() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(skills_prompt_index(home.path(), home.path(), 4_000), None);
        assert_eq!(build_index(&[], 4_000), None);
    }

    #[test]
    fn cuts_at_word_boundaries_only() {
        assert_eq!(cut_at_word("short", 10), ("short", false));
        assert_eq!(cut_at_word("alpha beta gamma", 12), ("alpha beta", true));
        assert_eq!(cut_at_word("alpha, beta gamma", 10), ("alpha", true));
        assert_eq!(cut_at_word("alpha beta", 10), ("alpha beta", false));
        assert_eq!(cut_at_word("alphabetagamma delta", 8), ("", true));
        assert_eq!(cut_at_word("über straße weiter", 13), ("über straße", true));
    }

    #[test]
    fn small_sets_keep_their_whole_descriptions() {
        let skills = [skill("zeta", "last one"), skill("alpha", "first one")];
        let built = index(&skills, 4_000);
        assert_eq!(
            built.text,
            format!("{HEADER}\n- zeta: last one\n- alpha: first one")
        );
        assert_eq!((built.named, built.described), (2, 2));
    }

    #[test]
    fn long_descriptions_shrink_to_fit_at_word_boundaries() {
        let words = "word ".repeat(100);
        let skills: Vec<SkillInfo> = (0..30)
            .map(|i| skill(&format!("skill-{i:02}"), &format!("Use {i} {words}")))
            .collect();
        let built = index(&skills, 4_000);
        assert!(built.text.chars().count() <= 4_000, "{}", built.text);
        assert_eq!((built.named, built.described), (30, 30));
        assert!(built.description_chars >= MIN_INDEX_DESCRIPTION_CHARS);
        assert!(built.description_chars < MAX_INDEX_DESCRIPTION_CHARS);
        for (line, s) in built.text.lines().skip(2).zip(&skills) {
            let desc = line.strip_prefix(&format!("- {}: ", s.name)).unwrap();
            let kept = desc.strip_suffix('…').unwrap();
            assert!(s.description.starts_with(kept), "{line}");
            // The cut falls between words.
            assert_eq!(
                s.description[kept.len()..].chars().next(),
                Some(' '),
                "{line}"
            );
        }
        // A bigger budget gives longer descriptions, never more than the cap.
        let roomy = index(&skills, 40_000);
        assert_eq!(roomy.description_chars, MAX_INDEX_DESCRIPTION_CHARS);
    }

    #[test]
    fn names_only_when_descriptions_do_not_fit() {
        let skills: Vec<SkillInfo> = (0..150)
            .map(|i| {
                skill(
                    &format!("skill-{i:03}"),
                    "A description long enough to matter",
                )
            })
            .collect();
        let built = index(&skills, 4_000);
        assert!(built.text.chars().count() <= 4_000);
        assert_eq!((built.named, built.described), (150, 0));
        assert!(built.text.contains(NAMES_NOTE));
        for s in &skills {
            assert!(built.text.contains(&s.name), "{} missing", s.name);
        }
    }

    #[test]
    fn a_pack_too_large_for_names_says_how_many_more_and_how_to_search() {
        let skills: Vec<SkillInfo> = (0..864)
            .map(|i| skill(&format!("service-{i:03}-automation"), "Automate it"))
            .collect();
        let built = index(&skills, 4_000);
        let chars = built.text.chars().count();
        assert!(chars <= 4_000 && chars > 3_800, "{chars}");
        assert!(built.named > 100 && built.named < 864, "{}", built.named);
        assert!(
            built.text.ends_with(&format!(
                "...and {} more of 864 skills, not named here. Search them by name and description with skills_list {{\"query\": \"a few words\"}}.",
                864 - built.named
            )),
            "{}",
            built.text
        );
        // The user's own skills are named even when they sort last.
        let mut mine = skills.clone();
        mine.push(SkillInfo {
            source: SkillSource::Home,
            ..skill("zz-my-own", "Mine")
        });
        let with_mine = index(&mine, 4_000);
        assert!(
            with_mine.text.contains(", zz-my-own\n...and"),
            "{}",
            with_mine.text
        );
        assert!(
            with_mine.text.contains(&format!(
                "...and {} more of 865 skills",
                865 - with_mine.named
            )),
            "{}",
            with_mine.text
        );
        // Names are whole: every named one is a listed skill.
        let listed = built.text.lines().nth(3).unwrap();
        let named: Vec<&str> = listed.split(", ").collect();
        assert_eq!(named.len(), built.named);
        assert!(named.iter().zip(&skills).all(|(n, s)| *n == s.name));
    }
}
