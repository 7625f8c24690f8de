//! Finding skills by words: `skills_list {query}` ranks skills by how well
//! their name, category and description match, and an unknown name gets a
//! few close names ("did you mean") instead of the whole list. Packs hold
//! hundreds of skills, so neither may depend on the model seeing them all.

use super::SkillInfo;
use super::frontmatter::slugify;

/// Points for a query word that is a whole segment of the name
/// (`pdf` in `pdf-forms`).
const NAME_SEGMENT: u32 = 12;
/// Points for a query word inside the name.
const NAME_PART: u32 = 8;
/// Points for a query word inside the category.
const CATEGORY_PART: u32 = 4;
/// Points for a query word that is a whole word of the description.
const DESCRIPTION_WORD: u32 = 3;
/// Points for a query word inside a description word (`automat`).
const DESCRIPTION_PART: u32 = 1;
/// Extra points when the whole query is the name.
const EXACT_NAME: u32 = 100;

/// Lowercase words of `text`: runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// How well `skill` matches the query `terms` (0: not at all).
fn score(skill: &SkillInfo, slug: Option<&str>, terms: &[String]) -> u32 {
    let name_words = words(&skill.name);
    let category = skill.category.as_deref().unwrap_or_default().to_lowercase();
    let description = words(&skill.description);
    let mut total = 0;
    let mut matched = 0;
    for term in terms {
        let mut points = 0;
        if name_words.iter().any(|w| w == term) {
            points += NAME_SEGMENT;
        }
        if skill.name.contains(term.as_str()) {
            points += NAME_PART;
        }
        if category.contains(term.as_str()) {
            points += CATEGORY_PART;
        }
        if description.iter().any(|w| w == term) {
            points += DESCRIPTION_WORD;
        } else if description.iter().any(|w| w.contains(term.as_str())) {
            points += DESCRIPTION_PART;
        }
        if points > 0 {
            matched += 1;
        }
        total += points;
    }
    if total == 0 {
        return 0;
    }
    if slug == Some(skill.name.as_str()) {
        total += EXACT_NAME;
    }
    // A skill matching more of the words ranks above one matching a single
    // word many ways.
    total + matched * 20
}

/// The skills matching `query`, best first (ties: shorter name first). Each word of the
/// query counts: whole name segments most, then name, category and
/// description matches.
pub fn rank<'a>(
    skills: impl IntoIterator<Item = &'a SkillInfo>,
    query: &str,
) -> Vec<&'a SkillInfo> {
    let terms = words(query);
    if terms.is_empty() {
        return Vec::new();
    }
    let slug = slugify(query);
    let mut scored: Vec<(u32, &SkillInfo)> = skills
        .into_iter()
        .map(|s| (score(s, slug.as_deref(), &terms), s))
        .filter(|(points, _)| *points > 0)
        .collect();
    // Ties: the shorter name first (the query covers more of it), then by
    // name.
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.name.len().cmp(&b.1.name.len()))
            .then_with(|| a.1.name.cmp(&b.1.name))
    });
    scored.into_iter().map(|(_, s)| s).collect()
}

/// Edit distance between `a` and `b`, in chars.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Up to `limit` skill names close to `name`: a small edit away, or sharing
/// a name word of 3+ letters, or containing it; closest first.
pub(crate) fn close_names(skills: &[SkillInfo], name: &str, limit: usize) -> Vec<String> {
    let wanted = slugify(name).unwrap_or_else(|| name.trim().to_lowercase());
    let wanted_words = words(&wanted);
    let mut scored: Vec<(usize, &str)> = skills
        .iter()
        .filter_map(|s| {
            let distance = levenshtein(&wanted, &s.name);
            let longest = wanted.len().max(s.name.len());
            let near = distance
                <= if longest <= 4 {
                    1
                } else {
                    (longest / 3).max(2)
                };
            let shares = s.name.contains(wanted.as_str())
                || (wanted.len() >= 3 && wanted.contains(s.name.as_str()))
                || words(&s.name)
                    .iter()
                    .any(|w| w.len() >= 3 && wanted_words.contains(w));
            (near || shares).then_some((distance, s.name.as_str()))
        })
        .collect();
    scored.sort_unstable();
    scored
        .into_iter()
        .take(limit)
        .map(|(_, n)| n.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::skills::SkillSource;

    fn skill(name: &str, category: Option<&str>, description: &str) -> SkillInfo {
        SkillInfo {
            name: name.into(),
            description: description.into(),
            category: category.map(str::to_owned),
            dir: PathBuf::from("/x").join(name),
            source: SkillSource::Home,
            herald_created: false,
            model_invocable: true,
            warning: None,
        }
    }

    fn set() -> Vec<SkillInfo> {
        vec![
            skill(
                "pdf",
                None,
                "Extract text and tables from PDF files, fill forms",
            ),
            skill("pdf-forms", Some("documents"), "Fill in PDF forms"),
            skill("xlsx", Some("documents"), "Spreadsheets: formulas, charts"),
            skill(
                "ahrefs-automation",
                Some("composio"),
                "Automate Ahrefs SEO tasks",
            ),
            skill(
                "slack-automation",
                Some("composio"),
                "Automate Slack messages",
            ),
            skill(
                "test-driven-development",
                None,
                "Write the failing test first",
            ),
        ]
    }

    fn names(found: &[&SkillInfo]) -> Vec<String> {
        found.iter().map(|s| s.name.clone()).collect()
    }

    #[test]
    fn ranks_by_name_then_description() {
        let skills = set();
        assert_eq!(names(&rank(&skills, "pdf")), ["pdf", "pdf-forms"]);
        assert_eq!(names(&rank(&skills, "PDF forms")), ["pdf-forms", "pdf"]);
        assert_eq!(names(&rank(&skills, "seo")), ["ahrefs-automation"]);
        // Equal matches: the shorter name first.
        assert_eq!(
            names(&rank(&skills, "automation")),
            ["slack-automation", "ahrefs-automation"]
        );
        assert_eq!(
            names(&rank(&skills, "composio slack")),
            ["slack-automation", "ahrefs-automation"]
        );
        assert_eq!(
            names(&rank(&skills, "failing test")),
            ["test-driven-development"]
        );
        assert!(rank(&skills, "kubernetes").is_empty());
        assert!(rank(&skills, "  ,, ").is_empty());
    }

    #[test]
    fn close_names_are_few_and_near() {
        let skills = set();
        assert_eq!(close_names(&skills, "pdf-form", 5), ["pdf-forms", "pdf"]);
        assert_eq!(close_names(&skills, "Ahrefs", 5), ["ahrefs-automation"]);
        assert_eq!(close_names(&skills, "tdd", 5), Vec::<String>::new());
        assert_eq!(close_names(&skills, "xlsz", 5), ["xlsx"]);
        assert_eq!(close_names(&skills, "pfd", 5), Vec::<String>::new());
        assert_eq!(close_names(&skills, "pdf-frosm", 5), ["pdf-forms", "pdf"]);
        assert_eq!(close_names(&skills, "automation", 1).len(), 1);
    }

    #[test]
    fn levenshtein_counts_edits() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("same", "same"), 0);
    }
}
