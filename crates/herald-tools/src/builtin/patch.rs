//! The `patch` tool: replace a unique piece of a file (exact match first,
//! then whitespace-tolerant line matching) and show the unified diff.

use std::ops::Range;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use similar::TextDiff;

use super::fsutil::{atomic_write, blocking};
use crate::{ToolContext, ToolError, TypedTool};

/// Files up to this many lines get a "closest lines" hint on a miss.
const HINT_MAX_LINES: usize = 5000;

/// The `patch` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct Patch;

/// Arguments of `patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct PatchArgs {
    /// File to edit.
    pub path: String,
    /// Text to find; must occur exactly once unless replace_all.
    pub old_string: String,
    /// Replacement text.
    pub new_string: String,
    /// Replace every occurrence (default false).
    pub replace_all: Option<bool>,
}

impl TypedTool for Patch {
    type Args = PatchArgs;
    const NAME: &'static str = "patch";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Edit a file by replacing old_string with new_string. old_string must match exactly once \
(include a few surrounding lines to make it unique) unless replace_all=true; if no exact match, lines are matched \
ignoring trailing whitespace, then indentation. Returns a unified diff. Read the file first.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: PatchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.old_string.is_empty() {
            return Err(ToolError::new(
                "old_string is empty; give the text to replace (to create or overwrite a whole file use write_file)",
            ));
        }
        if args.old_string == args.new_string {
            return Err(ToolError::new(
                "old_string and new_string are identical; nothing would change",
            ));
        }
        let path = ctx.state.resolve(&args.path);
        ctx.state.note_written(&path);
        blocking(move || patch_file(&path, &args)).await
    }
}

fn patch_file(path: &Path, args: &PatchArgs) -> Result<String, ToolError> {
    let shown = &args.path;
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(format!(
            "file not found: {shown}. Check the path (search_files can find it); create new files with write_file."
        )),
        std::io::ErrorKind::IsADirectory => {
            ToolError::new(format!("{shown} is a directory; patch edits files"))
        }
        _ => ToolError::new(format!("cannot read {shown}: {e}")),
    })?;
    let content = String::from_utf8(bytes).map_err(|_| {
        ToolError::new(format!(
            "{shown} is not UTF-8 text; patch only edits text files"
        ))
    })?;
    let Some(found) = find(&content, &args.old_string) else {
        return Err(no_match(&content, shown, &args.old_string));
    };
    let replace_all = args.replace_all.unwrap_or(false);
    if found.ranges.len() > 1 && !replace_all {
        let lines: Vec<String> = found
            .ranges
            .iter()
            .take(10)
            .map(|r| line_of(&content, r.start).to_string())
            .collect();
        return Err(ToolError::new(format!(
            "old_string matches {} times in {shown} (at lines {}); include more surrounding lines \
             to make it unique, or set replace_all=true to change every occurrence",
            found.ranges.len(),
            lines.join(", ")
        )));
    }
    let new_string = found.adapt(&content, &args.new_string);
    let mut updated = String::with_capacity(content.len() + new_string.len());
    let mut at = 0;
    for range in &found.ranges {
        updated.push_str(&content[at..range.start]);
        updated.push_str(&new_string);
        at = range.end;
    }
    updated.push_str(&content[at..]);
    atomic_write(path, updated.as_bytes())
        .map_err(|e| ToolError::new(format!("could not write {shown}: {e}")))?;

    let diff = TextDiff::from_lines(&content, &updated)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    let count = found.ranges.len();
    let how = match found.kind {
        MatchKind::Exact => "",
        MatchKind::TrailingWhitespace => " (matched ignoring trailing whitespace)",
        MatchKind::Indentation => " (matched ignoring indentation)",
    };
    Ok(format!(
        "Patched {shown}: {count} replacement{}{how}\n{diff}",
        if count == 1 { "" } else { "s" }
    ))
}

/// How `old_string` was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchKind {
    Exact,
    TrailingWhitespace,
    Indentation,
}

/// Non-overlapping byte ranges of the file that `old_string` matched.
#[derive(Debug)]
struct Found {
    ranges: Vec<Range<usize>>,
    kind: MatchKind,
    /// For an indentation-insensitive match: (indent in old_string, indent in file).
    indent: Option<(String, String)>,
}

impl Found {
    /// The replacement adjusted to the match: re-indented like the file and
    /// with CRLF endings where the file uses them.
    fn adapt(&self, content: &str, new: &str) -> String {
        if self.kind == MatchKind::Exact {
            return new.to_owned();
        }
        let mut text = match &self.indent {
            Some((old_indent, file_indent)) if old_indent != file_indent => new
                .split('\n')
                .map(|line| match line.strip_prefix(old_indent.as_str()) {
                    Some(rest) if !line.trim().is_empty() => format!("{file_indent}{rest}"),
                    _ => line.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => new.to_owned(),
        };
        let crlf = self
            .ranges
            .first()
            .is_some_and(|r| content[r.clone()].contains("\r\n"));
        if crlf && !text.contains('\r') {
            text = text.replace('\n', "\r\n");
        }
        text
    }
}

/// One line of the file: where it starts, where its text ends (before
/// `\r\n`/`\n`) and where the next line starts.
struct Line {
    start: usize,
    text_end: usize,
    end: usize,
}

fn split_lines(content: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    for piece in content.split_inclusive('\n') {
        let end = start + piece.len();
        let text = piece.strip_suffix('\n').unwrap_or(piece);
        let text = text.strip_suffix('\r').unwrap_or(text);
        lines.push(Line {
            start,
            text_end: start + text.len(),
            end,
        });
        start = end;
    }
    lines
}

/// Finds `old`: exact substring matches, else whole-line matches ignoring
/// trailing whitespace, else ignoring leading and trailing whitespace.
fn find(content: &str, old: &str) -> Option<Found> {
    let exact: Vec<Range<usize>> = content
        .match_indices(old)
        .map(|(i, m)| i..i + m.len())
        .collect();
    if !exact.is_empty() {
        return Some(Found {
            ranges: exact,
            kind: MatchKind::Exact,
            indent: None,
        });
    }
    if old.trim().is_empty() {
        return None;
    }
    let lines = split_lines(content);
    let wanted: Vec<&str> = old.strip_suffix('\n').unwrap_or(old).split('\n').collect();
    let keep_newline = old.ends_with('\n');
    for kind in [MatchKind::TrailingWhitespace, MatchKind::Indentation] {
        let norm = |s: &str| -> String {
            match kind {
                MatchKind::Indentation => s.trim().to_owned(),
                _ => s.trim_end().to_owned(),
            }
        };
        let wanted: Vec<String> = wanted.iter().map(|s| norm(s)).collect();
        let mut starts = Vec::new();
        let mut i = 0;
        while i + wanted.len() <= lines.len() {
            let window = &lines[i..i + wanted.len()];
            if window
                .iter()
                .zip(&wanted)
                .all(|(line, want)| norm(&content[line.start..line.text_end]) == *want)
            {
                starts.push(i);
                i += wanted.len();
            } else {
                i += 1;
            }
        }
        if starts.is_empty() {
            continue;
        }
        let ranges = starts
            .iter()
            .map(|&i| {
                let last = &lines[i + wanted.len() - 1];
                lines[i].start..if keep_newline {
                    last.end
                } else {
                    last.text_end
                }
            })
            .collect();
        let indent = (kind == MatchKind::Indentation)
            .then(|| indent_pair(content, &lines[starts[0]..], old))
            .flatten();
        return Some(Found {
            ranges,
            kind,
            indent,
        });
    }
    None
}

/// Indentation of the first non-blank line of `old` and of the file line it
/// matched.
fn indent_pair(content: &str, lines: &[Line], old: &str) -> Option<(String, String)> {
    let (offset, old_line) = old
        .split('\n')
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty())?;
    let line = lines.get(offset)?;
    let file_line = &content[line.start..line.text_end];
    let indent = |s: &str| s[..s.len() - s.trim_start().len()].to_owned();
    Some((indent(old_line), indent(file_line)))
}

/// 1-based line number of byte `offset`.
fn line_of(content: &str, offset: usize) -> usize {
    content[..offset].matches('\n').count() + 1
}

/// The "not found" error, with the most similar lines of the file if any.
fn no_match(content: &str, shown: &str, old: &str) -> ToolError {
    let mut message = format!(
        "old_string was not found in {shown} (also tried ignoring whitespace). \
         Re-read the file with read_file and copy the text exactly."
    );
    if let Some(hint) = closest_lines(content, old) {
        message.push_str("\nMost similar lines in the file:\n");
        message.push_str(&hint);
    }
    ToolError::new(message)
}

fn closest_lines(content: &str, old: &str) -> Option<String> {
    let first = old.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lines: Vec<&str> = content.lines().collect();
    if lines.len() > HINT_MAX_LINES || first.len() > 500 {
        return None;
    }
    let (best, score) = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.len() <= 500 && !l.trim().is_empty())
        .map(|(i, l)| (i, TextDiff::from_chars(first, l.trim()).ratio()))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if score < 0.5 {
        return None;
    }
    let span = old.lines().count().max(1);
    let from = best.saturating_sub(1);
    let to = (best + span + 1).min(lines.len());
    Some(
        (from..to)
            .map(|i| format!("{}|{}\n", i + 1, lines[i]))
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use herald_protocol::ToolCall;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::AgentState;
    use crate::builtin::default_registry;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(AgentState::new(dir.to_path_buf()), CancellationToken::new())
    }

    async fn patch(
        dir: &Path,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<String, ToolError> {
        let args = PatchArgs {
            path: "f.txt".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: Some(replace_all),
        };
        Patch.run(args, &ctx(dir)).await
    }

    fn setup(content: &str) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f.txt"), content).unwrap();
        tmp
    }

    fn file(tmp: &tempfile::TempDir) -> String {
        std::fs::read_to_string(tmp.path().join("f.txt")).unwrap()
    }

    #[tokio::test]
    async fn exact_match_is_replaced_and_diff_returned() {
        let tmp = setup("a\nb\nc\nd\n");
        let out = patch(tmp.path(), "b\nc", "B\nC", false).await.unwrap();
        assert_eq!(file(&tmp), "a\nB\nC\nd\n");
        assert!(out.starts_with("Patched f.txt: 1 replacement\n"), "{out}");
        assert!(out.contains("--- a/f.txt\n+++ b/f.txt\n"), "{out}");
        assert!(out.contains("@@ -1,4 +1,4 @@"), "{out}");
        assert!(out.contains("-b\n-c\n+B\n+C\n"), "{out}");
    }

    #[tokio::test]
    async fn ambiguous_match_is_refused_unless_replace_all() {
        let tmp = setup("x = 1\ny = 2\nx = 1\n");
        let err = patch(tmp.path(), "x = 1", "x = 3", false)
            .await
            .unwrap_err();
        assert!(err.0.contains("matches 2 times"), "{err}");
        assert!(err.0.contains("lines 1, 3"), "{err}");
        assert!(err.0.contains("replace_all"), "{err}");
        assert_eq!(file(&tmp), "x = 1\ny = 2\nx = 1\n");
        let out = patch(tmp.path(), "x = 1", "x = 3", true).await.unwrap();
        assert!(out.contains("2 replacements"), "{out}");
        assert_eq!(file(&tmp), "x = 3\ny = 2\nx = 3\n");
    }

    #[tokio::test]
    async fn trailing_whitespace_is_tolerated() {
        let tmp = setup("fn a() {   \n    one();\t\n}\n");
        let out = patch(
            tmp.path(),
            "fn a() {\n    one();\n}",
            "fn a() {\n    two();\n}",
            false,
        )
        .await
        .unwrap();
        assert!(out.contains("ignoring trailing whitespace"), "{out}");
        assert_eq!(file(&tmp), "fn a() {\n    two();\n}\n");
    }

    #[tokio::test]
    async fn indentation_is_tolerated_and_replacement_reindented() {
        let tmp = setup("impl X {\n        if a {\n            b();\n        }\n}\n");
        let out = patch(
            tmp.path(),
            "if a {\n    b();\n}\n",
            "if a {\n    c();\n    d();\n}\n",
            false,
        )
        .await
        .unwrap();
        assert!(out.contains("ignoring indentation"), "{out}");
        assert_eq!(
            file(&tmp),
            "impl X {\n        if a {\n            c();\n            d();\n        }\n}\n"
        );
    }

    #[tokio::test]
    async fn crlf_files_keep_their_line_endings() {
        let tmp = setup("one\r\ntwo\r\nthree\r\n");
        patch(tmp.path(), "one\ntwo\n", "1\n2\n", false)
            .await
            .unwrap();
        assert_eq!(file(&tmp), "1\r\n2\r\nthree\r\n");
    }

    #[tokio::test]
    async fn no_match_explains_and_shows_closest_lines() {
        let tmp = setup("fn main() {\n    println!(\"hello\");\n}\n");
        let err = patch(tmp.path(), "println!(\"helo world\");", "x", false)
            .await
            .unwrap_err();
        assert!(err.0.contains("not found in f.txt"), "{err}");
        assert!(err.0.contains("read_file"), "{err}");
        assert!(err.0.contains("2|    println!(\"hello\");"), "{err}");
        assert_eq!(file(&tmp), "fn main() {\n    println!(\"hello\");\n}\n");
    }

    #[tokio::test]
    async fn empty_or_identical_strings_and_missing_files_are_errors() {
        let tmp = setup("abc\n");
        let err = patch(tmp.path(), "", "x", false).await.unwrap_err();
        assert!(err.0.contains("old_string is empty"), "{err}");
        let err = patch(tmp.path(), "abc", "abc", false).await.unwrap_err();
        assert!(err.0.contains("identical"), "{err}");
        assert_eq!(file(&tmp), "abc\n");
        let empty = tempfile::tempdir().unwrap();
        let err = patch(empty.path(), "a", "b", false).await.unwrap_err();
        assert!(err.0.contains("file not found: f.txt"), "{err}");
    }

    #[tokio::test]
    async fn registry_dispatch() {
        let tmp = setup("hello world\n");
        let registry = default_registry(10_000);
        let call = ToolCall {
            id: "1".into(),
            name: "patch".into(),
            arguments: r#"{"path": "f.txt", "old_string": "world", "new_string": "there"}"#.into(),
        };
        let result = registry.execute(&call, &ctx(tmp.path())).await;
        assert!(!result.is_error, "{}", result.content);
        assert!(result.content.contains("-hello world\n+hello there\n"));
        assert_eq!(file(&tmp), "hello there\n");
    }
}
