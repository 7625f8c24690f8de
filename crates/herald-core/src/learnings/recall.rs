//! Automatic recall: when a call fails, the learnings that fit the failure
//! best are appended to its result as one marked block of bounded size.
//!
//! The store ranks candidates with bm25 over an any-term query made of the
//! call's target and the failure's error lines; a candidate is kept only
//! when the failure's text covers most of its pattern ([`relevant`]), so
//! a shared word such as "error" or "not" alone never brings one in.

use std::collections::BTreeSet;

use herald_store::Learning;
use herald_tools::ToolResult;

use super::target::Target;

/// Most characters the appended block may have, header included.
pub(crate) const RECALL_CHARS: usize = 1_200;
/// Most learnings appended to one result.
pub(crate) const RECALL_MAX: usize = 3;
/// Candidates the store ranks before the relevance filter.
pub(crate) const RECALL_CANDIDATES: usize = 20;
/// Uses after which the block suggests moving a learning into a skill.
pub(crate) const SKILL_SUGGESTION_USES: i64 = 3;
/// First line of the block (tests and the docs look for it).
pub(crate) const RECALL_HEADER: &str =
    "[learnings] Fixes saved earlier for failures like this one (learning tool):";

/// Error lines of a failure's text used for the query.
const QUERY_LINES: usize = 4;
/// Characters of the failure's text its words are taken from (head and tail).
const TEXT_WINDOW: usize = 8_000;
/// Words that say a line reports a failure.
const ERROR_WORDS: &[&str] = &[
    "error",
    "fail",
    "not found",
    "no such",
    "denied",
    "cannot",
    "can't",
    "unable",
    "invalid",
    "missing",
    "undefined",
    "unknown",
    "refused",
    "exception",
    "traceback",
    "panicked",
    "fatal",
    "not permitted",
];

/// Whether a finished call failed: an error result, or a result holding a
/// non-zero `exit_code` (a command that ran and failed). An interrupted
/// call did not fail on its own, so it is not counted.
pub(crate) fn failed(result: &ToolResult) -> bool {
    if result.content.starts_with("interrupted:") {
        return false;
    }
    result.is_error || crate::tool_runner::exit_code(&result.content).is_some_and(|code| code != 0)
}

/// The text a failure reports: the `error` or `output` string of a JSON
/// result (`terminal`), else the whole result.
pub(crate) fn failure_text(content: &str) -> String {
    crate::tool_runner::json_object(content)
        .and_then(|object| {
            ["error", "output"]
                .iter()
                .find_map(|key| object.get(*key)?.as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| content.to_owned())
}

/// `text` when short, else its head and tail (errors sit at either end).
fn window(text: &str) -> String {
    if text.len() <= TEXT_WINDOW {
        return text.to_owned();
    }
    let count = text.chars().count();
    if count <= TEXT_WINDOW {
        return text.to_owned();
    }
    let head: String = text.chars().take(TEXT_WINDOW / 2).collect();
    let tail: String = text.chars().skip(count - TEXT_WINDOW / 2).collect();
    format!("{head}\n{tail}")
}

/// The lines of a failure that report it: those holding an error word (the
/// first three and the last), else the last three non-empty lines.
pub(crate) fn error_lines(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let flagged: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| {
            let lower = line.to_lowercase();
            ERROR_WORDS.iter().any(|w| lower.contains(w))
        })
        .collect();
    let mut picked: Vec<&str> = if flagged.is_empty() {
        lines.iter().rev().take(3).rev().copied().collect()
    } else {
        let mut picked: Vec<&str> = flagged.iter().take(QUERY_LINES - 1).copied().collect();
        if let Some(last) = flagged.last()
            && !picked.contains(last)
        {
            picked.push(last);
        }
        picked
    };
    picked.dedup();
    picked
        .into_iter()
        .map(|l| l.chars().take(200).collect())
        .collect()
}

/// What a failure is looked up by.
#[derive(Debug, Clone)]
pub(crate) struct FailureQuery {
    /// The any-term FTS text: the target's words, then the error lines.
    pub text: String,
    /// Every word of the call's arguments and failure text, for [`relevant`].
    pub words: BTreeSet<String>,
}

impl FailureQuery {
    /// The query for a failed call with these arguments and result text.
    pub(crate) fn new(target: &Target, arguments: &str, content: &str) -> FailureQuery {
        let text = window(&failure_text(content));
        let mut query = target.query_words();
        for line in error_lines(&text) {
            query.push(' ');
            query.push_str(&line);
        }
        let mut words = words_of(&text);
        words.extend(words_of(arguments));
        FailureQuery { text: query, words }
    }
}

/// Lowercase alphanumeric words, numbers as `#` (as the store compares
/// patterns).
pub(crate) fn words_of(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.chars().all(|c| c.is_ascii_digit()) {
                "#".to_owned()
            } else {
                w.to_lowercase()
            }
        })
        .collect()
}

/// Whether a learning fits a failure: the failure's words cover at least
/// half of the learning's pattern words, and at least two of them (all of
/// a one-word pattern).
pub(crate) fn relevant(learning: &Learning, failure: &BTreeSet<String>) -> bool {
    let pattern = words_of(&learning.pattern);
    if pattern.is_empty() {
        return false;
    }
    let covered = pattern.intersection(failure).count();
    covered >= pattern.len().min(2) && covered * 2 >= pattern.len()
}

/// One line of text: whitespace runs as one space, cut to `max` characters
/// with an ellipsis.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('\u{2026}');
    cut
}

/// One learning as a block entry.
fn entry(learning: &Learning) -> String {
    let kind = match (learning.tool.as_str(), learning.error_type.as_str()) {
        ("", "") => String::new(),
        (tool, "") | ("", tool) => format!(" {tool}"),
        (tool, kind) => format!(" {tool}/{kind}"),
    };
    let mut line = format!(
        "- #{}{kind}: {} \u{2192} fix: {}",
        learning.id,
        clip(&learning.pattern, 160),
        clip(&learning.fix, 400)
    );
    if !learning.context.is_empty() {
        line.push_str(&format!(" (when: {})", clip(&learning.context, 120)));
    }
    if learning.times_used >= SKILL_SUGGESTION_USES {
        line.push_str(&format!(
            " [used {} times: consider a \"Pitfalls\" entry in a skill (skill_manage), then learning forget {}]",
            learning.times_used, learning.id
        ));
    }
    line
}

/// The block appended to a failed result: a blank line, the header and one
/// entry per learning, never longer than `RECALL_CHARS` (an entry that does
/// not fit is cut, the ones after it are left out). `None` for no learnings.
pub(crate) fn render_block(learnings: &[Learning]) -> Option<String> {
    if learnings.is_empty() {
        return None;
    }
    let mut block = format!("\n\n{RECALL_HEADER}");
    for learning in learnings {
        let room = RECALL_CHARS.saturating_sub(block.chars().count() + 1);
        if room < 40 {
            break;
        }
        block.push('\n');
        block.push_str(&clip(&entry(learning), room));
    }
    Some(block)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn learning(id: i64, pattern: &str, fix: &str, used: i64) -> Learning {
        Learning {
            id,
            pattern: pattern.into(),
            error_type: "missing-setup".into(),
            fix: fix.into(),
            context: String::new(),
            tags: Vec::new(),
            tool: "terminal".into(),
            project: None,
            created_at: 0,
            last_used_at: None,
            times_used: used,
        }
    }

    #[test]
    fn a_failure_is_an_error_or_a_non_zero_exit() {
        assert!(failed(&ToolResult::error("no such file")));
        assert!(failed(&ToolResult::ok(r#"{"exit_code":2,"output":"x"}"#)));
        assert!(!failed(&ToolResult::ok(r#"{"exit_code":0,"output":"x"}"#)));
        assert!(!failed(&ToolResult::ok("exit_code 3")));
        assert!(!failed(&ToolResult::error(
            "interrupted: the user stopped this call before it finished"
        )));
    }

    #[test]
    fn the_query_takes_the_target_and_the_error_lines() {
        let content = serde_json::json!({
            "exit_code": 101,
            "output": "   Compiling app v0.1.0\nwarning: unused\nerror: linker `cc` not found\n  = note: No such file\nerror: aborting due to previous error\n"
        })
        .to_string();
        let target = Target::Command(["cargo build".to_owned()].into_iter().collect());
        let query = FailureQuery::new(&target, r#"{"command":"cargo build"}"#, &content);
        assert_eq!(
            query.text,
            "cargo build error: linker `cc` not found = note: No such file error: aborting due to previous error"
        );
        assert!(query.words.contains("compiling") && query.words.contains("cargo"));
        // Without error words: the last lines.
        assert_eq!(error_lines("a\nb\n\nc\nd"), vec!["b", "c", "d"]);
    }

    #[test]
    fn relevance_needs_most_of_the_pattern() {
        let failure = words_of("sh build.sh: error: build cache missing, run prepare first");
        assert!(relevant(
            &learning(1, "build.sh: build cache missing", "run prepare.sh", 0),
            &failure
        ));
        // Only "error" in common.
        assert!(!relevant(
            &learning(2, "error: disk quota exceeded on upload", "clean", 0),
            &failure
        ));
        // One of a two-word pattern is not enough.
        assert!(!relevant(
            &learning(3, "cache corrupted", "rm", 0),
            &failure
        ));
        assert!(relevant(&learning(4, "missing", "x", 0), &failure));
    }

    #[test]
    fn the_block_is_capped_and_suggests_a_skill_after_three_uses() {
        let long = "x".repeat(5_000);
        let many: Vec<Learning> = (1..=3)
            .map(|i| learning(i, &format!("pattern {i} {long}"), &long, i))
            .collect();
        let block = render_block(&many).unwrap();
        assert!(block.chars().count() <= RECALL_CHARS, "{}", block.len());
        assert!(block.starts_with(&format!("\n\n{RECALL_HEADER}\n- #1 terminal/missing-setup")));
        let short = vec![
            learning(7, "build cache missing", "run sh prepare.sh first", 3),
            learning(8, "other thing", "do other", 1),
        ];
        let block = render_block(&short).unwrap();
        assert_eq!(
            block,
            format!(
                "\n\n{RECALL_HEADER}\n- #7 terminal/missing-setup: build cache missing \u{2192} fix: run sh prepare.sh first [used 3 times: consider a \"Pitfalls\" entry in a skill (skill_manage), then learning forget 7]\n- #8 terminal/missing-setup: other thing \u{2192} fix: do other"
            )
        );
        assert_eq!(render_block(&[]), None);
    }
}
