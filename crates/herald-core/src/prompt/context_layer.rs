//! The project-context layer of the system prompt: the context files and the
//! files they import, each cut to a fair share of the budget.
//!
//! Sharing: each file may use up to the per-file budget. When all of them
//! together exceed the total, they get equal shares (a file smaller than its
//! share gives the rest to the others), the few characters of rounding go to
//! the outermost files first, and every file keeps at least
//! [`MIN_HEAD_CHARS`] — so no file is dropped whole and the repository
//! root's file, which users write first, is never the first to go. A cut
//! file keeps its head (ending at a line or word break when one is near) and
//! a marker saying how much is left and where `read_file` continues.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::context_files::{ContextFile, ContextFiles, Import};

/// The heading and preamble of the project-context layer.
const PROJECT_CONTEXT_HEADER: &str = "\
# Project context
Instructions from the project's context files, outermost directory first; a file imported with @path follows the file importing it. Follow them; where they conflict, the file deeper in the tree wins.";

/// Every file keeps at least this much of its head, even when that takes
/// the layer over its total (only with more than 80 files at the defaults).
pub const MIN_HEAD_CHARS: usize = 200;

/// How one file fared in the layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextFileReport {
    /// Where the file is.
    pub path: PathBuf,
    /// The file whose `@path` loaded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported_by: Option<PathBuf>,
    /// Characters of its (trimmed) text.
    pub chars: usize,
    /// Characters it was allowed.
    pub budget: usize,
    /// Characters of it in the prompt (the marker not counted).
    pub kept_chars: usize,
    /// Characters left out.
    pub cut_chars: usize,
    /// Why it could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The project-context layer as built: the repository root, the budgets,
/// each file and each import.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ContextReport {
    /// The repository root the walk started from (`None`: no repository).
    pub repo_root: Option<PathBuf>,
    /// The budget of one file.
    pub per_file_chars: usize,
    /// The budget of all files together.
    pub total_chars: usize,
    /// Each file in prompt order.
    pub files: Vec<ContextFileReport>,
    /// Each `@path` token, loaded or not.
    pub imports: Vec<Import>,
}

/// The layer's text (`None` without files) and its report.
pub(super) fn render(
    found: &ContextFiles,
    per_file: usize,
    total: usize,
) -> (Option<String>, ContextReport) {
    let mut report = ContextReport {
        repo_root: found.repo_root.clone(),
        per_file_chars: per_file,
        total_chars: total,
        files: Vec::with_capacity(found.files.len()),
        imports: found.imports.clone(),
    };
    if found.files.is_empty() {
        return (None, report);
    }
    let sizes: Vec<usize> = found.files.iter().map(|f| f.text.chars().count()).collect();
    let wants: Vec<usize> = sizes.iter().map(|n| (*n).min(per_file)).collect();
    let allowed = shares(&wants, total);
    let mut out = String::from(PROJECT_CONTEXT_HEADER);
    for ((file, chars), budget) in found.files.iter().zip(sizes).zip(allowed) {
        out.push_str("\n\n## ");
        out.push_str(&file.path.display().to_string());
        if let Some(by) = &file.imported_by {
            out.push_str(&format!(" (imported by {})", by.display()));
        }
        out.push('\n');
        let kept_chars = match &file.problem {
            Some(problem) => {
                out.push_str(&format!("[not loaded: {problem}]"));
                0
            }
            None => {
                let (body, kept) = keep_head(file, budget);
                out.push_str(&body);
                kept
            }
        };
        report.files.push(ContextFileReport {
            path: file.path.clone(),
            imported_by: file.imported_by.clone(),
            chars,
            budget,
            kept_chars,
            cut_chars: chars - kept_chars,
            problem: file.problem.clone(),
        });
    }
    (Some(out), report)
}

/// Each file's allowance: its want if all fit in `total`, else equal shares
/// (water-filling), the rounding remainder a character each outermost first,
/// and never less than [`MIN_HEAD_CHARS`] (or the whole want, if smaller).
fn shares(wants: &[usize], total: usize) -> Vec<usize> {
    if wants.iter().sum::<usize>() <= total {
        return wants.to_vec();
    }
    let mut sorted = wants.to_vec();
    sorted.sort_unstable();
    let mut remaining = total;
    let mut left = sorted.len();
    let mut level = 0;
    for want in sorted {
        if want <= remaining / left {
            remaining -= want;
            left -= 1;
        } else {
            level = remaining / left;
            break;
        }
    }
    let mut allowed: Vec<usize> = wants.iter().map(|w| (*w).min(level)).collect();
    // Fewer spare characters than cut files remain: one more each, root first.
    let mut spare = total.saturating_sub(allowed.iter().sum());
    for (got, want) in allowed.iter_mut().zip(wants) {
        let extra = (want - *got).min(spare).min(1);
        *got += extra;
        spare -= extra;
    }
    for (got, want) in allowed.iter_mut().zip(wants) {
        *got = (*got).max((*want).min(MIN_HEAD_CHARS));
    }
    allowed
}

/// The file's text within `budget` characters and the characters kept: the
/// whole text, or its head cut at a line break (or else a word break) near
/// the limit, followed by a marker naming what is left and where to read it.
fn keep_head(file: &ContextFile, budget: usize) -> (String, usize) {
    let text = file.text.as_str();
    let limit = text
        .char_indices()
        .nth(budget)
        .map_or(text.len(), |(i, _)| i);
    if limit >= text.len() {
        return (text.to_owned(), text.chars().count());
    }
    let head = &text[..limit];
    let cut = head
        .rfind('\n')
        .filter(|at| *at >= limit * 6 / 10)
        .or_else(|| {
            head.rfind(char::is_whitespace)
                .filter(|at| *at >= limit * 8 / 10)
        })
        .unwrap_or(limit);
    let kept = text[..cut].trim_end();
    let rest = &text[cut..];
    let rest_at = cut + (rest.len() - rest.trim_start().len());
    let line = file.first_line + text[..rest_at].matches('\n').count();
    let kept_chars = kept.chars().count();
    let more = text.chars().count() - kept_chars;
    let body = format!(
        "{kept}\n[... {} more chars: read_file {} from line {line}]",
        thousands(more),
        display(&file.path),
    );
    (body, kept_chars)
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// `n` with a comma every three digits, as people write sizes.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> ContextFile {
        ContextFile {
            path: PathBuf::from(path),
            text: text.to_owned(),
            first_line: 1,
            imported_by: None,
            depth: 0,
            problem: None,
        }
    }

    #[test]
    fn shares_are_whole_when_they_fit_and_fair_when_not() {
        assert_eq!(shares(&[100, 200], 1_000), [100, 200]);
        // Equal shares; the small file gives its spare room to the others.
        assert_eq!(
            shares(&[5_000, 5_000, 5_000], 10_100),
            [3_367, 3_367, 3_366]
        );
        assert_eq!(
            shares(&[1_000, 8_000, 8_000], 10_000),
            [1_000, 4_500, 4_500]
        );
        // The root (first) gets the rounding remainder first; a floor for all.
        assert_eq!(shares(&[900, 900, 900], 1_000), [334, 333, 333]);
        assert_eq!(shares(&[900, 900, 900, 900, 900, 900], 600), [200; 6]);
        assert_eq!(shares(&[50, 900], 100), [50, 200]);
    }

    #[test]
    fn a_cut_keeps_the_head_at_a_line_break_and_says_where_to_read_on() {
        let mut f = file("/r/AGENTS.md", "");
        f.first_line = 3;
        f.text = (1..=100)
            .map(|n| format!("line {n:03}\n"))
            .collect::<String>();
        f.text = f.text.trim().to_owned();
        let (body, kept) = keep_head(&f, 95);
        assert!(body.starts_with("line 001\n"), "{body}");
        // 95 chars end inside line 011; the cut falls after line 010.
        assert!(body.contains("line 010\n[... "), "{body}");
        assert!(!body.contains("line 011"));
        assert!(
            body.ends_with(&format!(
                "[... {} more chars: read_file /r/AGENTS.md from line 13]",
                thousands(f.text.chars().count() - kept)
            )),
            "{body}"
        );
        assert_eq!(kept, 89);
    }

    #[test]
    fn a_cut_without_line_breaks_falls_on_a_word_and_respects_chars() {
        let f = file("/r/a.md", &"wörd ".repeat(100));
        let (body, kept) = keep_head(&f, 52);
        assert!(body.starts_with("wörd wörd"));
        assert!(body.contains("wörd\n[... "), "{body}");
        assert_eq!(kept, 49);
        let f = file("/r/a.md", &"é".repeat(10_000));
        let (body, kept) = keep_head(&f, 100);
        assert_eq!(kept, 100);
        assert!(body.contains("[... 9,900 more chars: read_file /r/a.md from line 1]"));
    }

    #[test]
    fn every_file_keeps_its_head_and_the_root_survives() {
        let found = ContextFiles {
            repo_root: Some("/r".into()),
            files: vec![
                file("/r/AGENTS.md", &format!("ROOT-HEAD {}", "r ".repeat(5_000))),
                file("/r/a/AGENTS.md", &format!("A-HEAD {}", "a ".repeat(5_000))),
                file(
                    "/r/a/b/AGENTS.md",
                    &format!("B-HEAD {}", "b ".repeat(5_000)),
                ),
            ],
            imports: Vec::new(),
        };
        let (text, report) = render(&found, 8_000, 10_100);
        let text = text.unwrap();
        for head in ["ROOT-HEAD", "A-HEAD", "B-HEAD"] {
            assert!(text.contains(head), "{head} missing");
        }
        assert_eq!(text.matches("more chars: read_file").count(), 3);
        let kept: usize = report.files.iter().map(|f| f.kept_chars).sum();
        assert!(kept <= 10_100, "{kept}");
        assert!(report.files[0].kept_chars >= report.files[2].kept_chars);
        assert!(report.files.iter().all(|f| f.cut_chars > 0));
        assert_eq!(report.files[0].budget, 3_367);
    }

    #[test]
    fn an_unreadable_file_is_named_with_its_problem() {
        let mut bad = file("/r/AGENTS.md", "");
        bad.problem = Some("it is a binary file".into());
        let found = ContextFiles {
            repo_root: None,
            files: vec![bad, file("/r/CLAUDE.md", "ok")],
            imports: Vec::new(),
        };
        let (text, report) = render(&found, 8_000, 16_000);
        let text = text.unwrap();
        assert!(text.contains("## /r/AGENTS.md\n[not loaded: it is a binary file]"));
        assert!(text.ends_with("## /r/CLAUDE.md\nok"));
        assert_eq!(report.files[0].kept_chars, 0);
        assert_eq!(report.files[0].cut_chars, 0);
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(4_210), "4,210");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
