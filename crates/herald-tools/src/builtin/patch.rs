//! The `patch` tool: replace a unique piece of a file (exact match first,
//! then whitespace-tolerant line matching) and show the unified diff.

use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use similar::{ChangeTag, TextDiff};

use super::atomic::atomic_write;
use super::fsutil::{FILE_TOOL_TIMEOUT, Stop, open_regular, run_blocking};
use super::lines::char_boundary;
use crate::{ToolContext, ToolError, TypedTool};

/// Files up to this many lines get a "closest lines" hint on a miss.
const HINT_MAX_LINES: usize = 5000;
/// Largest file `patch` edits (32 MiB). The edit is made in memory (the file
/// and its new text, about twice its size), so larger files are refused
/// before they are read.
pub const MAX_PATCH_BYTES: u64 = 32 * 1024 * 1024;
/// Most places one call changes (and most matches it records).
const MAX_MATCHES: usize = 10_000;
/// Lines of unchanged context around each change in the diff.
const CONTEXT_LINES: usize = 3;
/// Diff lines are cut to this many chars.
const MAX_DIFF_LINE_CHARS: usize = 2000;
/// Time the diff may take before similar approximates it.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// The `patch` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct Patch;

/// Arguments of `patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct PatchArgs {
    /// File to edit.
    #[schemars(description = "")]
    pub path: String,
    /// Must occur once unless replace_all.
    #[schemars(description = "")]
    pub old_string: String,
    /// Replacement text.
    #[schemars(description = "")]
    pub new_string: String,
    /// Replace every occurrence.
    #[schemars(description = "")]
    pub replace_all: Option<bool>,
}

impl TypedTool for Patch {
    type Args = PatchArgs;
    const NAME: &'static str = "patch";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Replace old_string with new_string in a file (read it first). old_string must match \
once (add surrounding lines) unless replace_all; else lines match ignoring trailing whitespace, then indentation. Returns a \
diff. Max 32 MiB.";
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
        if let Some(files) = ctx.state.file_backend() {
            let shown = &args.path;
            let content = files
                .read_text(&path)
                .await
                .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
            if content.len() as u64 > MAX_PATCH_BYTES {
                return Err(too_large(shown, content.len() as u64));
            }
            let patched = apply(&content, &args, &Stop::default())?;
            crate::backend::write_through(&ctx.state, files.as_ref(), &path, &patched.updated)
                .await
                .map_err(|e| ToolError::new(format!("could not write {shown}: {e}")))?;
            return Ok(patched.summary);
        }
        let tracker = ctx.state.file_tracker();
        run_blocking(ctx, Self::NAME, FILE_TOOL_TIMEOUT, move |stop| {
            patch_file(&path, &args, stop, tracker.as_deref())
        })
        .await
    }
}

/// Reads the file to patch: a regular file (never blocking on a special
/// one) of at most [`MAX_PATCH_BYTES`], as UTF-8.
fn read_for_patch(path: &Path, shown: &str) -> Result<String, ToolError> {
    if let Err(e) = std::fs::metadata(path)
        && e.kind() == std::io::ErrorKind::NotFound
    {
        return Err(ToolError::new(format!(
            "file not found: {shown}. Check the path (search_files can find it); create new files with write_file."
        )));
    }
    let (file, meta) = open_regular(path, shown)?;
    let too_large = |size: u64| too_large(shown, size);
    if meta.len() > MAX_PATCH_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_PATCH_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_PATCH_BYTES {
        // It grew after the size check.
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| {
        ToolError::new(format!(
            "{shown} is not UTF-8 text; patch only edits text files"
        ))
    })
}

/// The error for a file over [`MAX_PATCH_BYTES`].
fn too_large(shown: &str, size: u64) -> ToolError {
    ToolError::new(format!(
        "{shown} is too large to patch ({size} bytes; patch edits files of up to {MAX_PATCH_BYTES} bytes = 32 MiB \
         in memory). Edit it with terminal instead (e.g. `sed -i` for a simple replacement), or split the file."
    ))
}

/// A patch worked out and not yet written: the new text and what the tool
/// answers once it is written.
struct Patched {
    updated: String,
    summary: String,
}

/// Patches `path` as `args` say; the write is told to `tracker`.
fn patch_file(
    path: &Path,
    args: &PatchArgs,
    stop: &Stop,
    tracker: Option<&dyn crate::FileTracker>,
) -> Result<String, ToolError> {
    let shown = &args.path;
    let content = read_for_patch(path, shown)?;
    let patched = apply(&content, args, stop)?;
    if let Some(tracker) = tracker {
        tracker.writing(path, patched.updated.as_bytes());
    }
    let written = atomic_write(path, patched.updated.as_bytes());
    if let Some(tracker) = tracker {
        tracker.written(path, written.is_ok());
    }
    written.map_err(|e| ToolError::new(format!("could not write {shown}: {e}")))?;
    Ok(patched.summary)
}

/// Works out the patch `args` asks for on `content` (named `args.path`).
fn apply(content: &str, args: &PatchArgs, stop: &Stop) -> Result<Patched, ToolError> {
    let shown = &args.path;
    let stopped = |_| ToolError::new("patch was stopped");
    stop.check().map_err(stopped)?;
    let Some(found) = find(content, &args.old_string) else {
        return Err(no_match(content, shown, &args.old_string));
    };
    let replace_all = args.replace_all.unwrap_or(false);
    let capped = found.ranges.len() > MAX_MATCHES;
    if found.ranges.len() > 1 && !replace_all {
        let lines: Vec<String> = found
            .ranges
            .iter()
            .take(10)
            .map(|r| line_of(content, r.start).to_string())
            .collect();
        let times = if capped {
            format!("more than {MAX_MATCHES}")
        } else {
            found.ranges.len().to_string()
        };
        return Err(ToolError::new(format!(
            "old_string matches {times} times in {shown} (at lines {}{}); include more surrounding lines \
             to make it unique, or set replace_all=true to change every occurrence",
            lines.join(", "),
            if found.ranges.len() > 10 { ", ..." } else { "" }
        )));
    }
    if capped {
        return Err(ToolError::new(format!(
            "old_string matches more than {MAX_MATCHES} times in {shown}; patch changes at most {MAX_MATCHES} \
             places per call. Use a more specific old_string, or terminal (e.g. `sed -i`) for bulk edits."
        )));
    }
    stop.check().map_err(stopped)?;
    let new_string = found.adapt(content, &args.new_string);
    let mut updated = String::with_capacity(content.len() + new_string.len());
    let mut at = 0;
    for range in &found.ranges {
        updated.push_str(&content[at..range.start]);
        updated.push_str(&new_string);
        at = range.end;
    }
    updated.push_str(&content[at..]);
    stop.check().map_err(stopped)?;
    let diff = unified_diff(shown, content, &updated, &found.ranges, new_string.len());
    let count = found.ranges.len();
    let how = match found.kind {
        MatchKind::Exact => "",
        MatchKind::TrailingWhitespace => " (matched ignoring trailing whitespace)",
        MatchKind::Indentation => " (matched ignoring indentation)",
    };
    let summary = format!(
        "Patched {shown}: {count} replacement{}{how}\n{diff}",
        if count == 1 { "" } else { "s" }
    );
    Ok(Patched { updated, summary })
}

/// The unified diff of a patch that replaced `ranges` of `old` by
/// `new_len` bytes each, giving `new`. Only the lines around the changes are
/// diffed (so a huge file costs no more than its changed region) and long
/// lines are cut, so the diff never copies a huge line whole.
fn unified_diff(
    shown: &str,
    old: &str,
    new: &str,
    ranges: &[Range<usize>],
    new_len: usize,
) -> String {
    let mut out = format!("--- a/{shown}\n+++ b/{shown}\n");
    let deadline = std::time::Instant::now() + DIFF_TIMEOUT;
    // Shift of `new` against `old` before each range.
    let mut shift: isize = 0;
    // Running newline counts up to `old_pos`/`new_pos`.
    let (mut old_pos, mut old_line, mut new_pos, mut new_line) = (0usize, 0usize, 0usize, 0usize);
    let mut i = 0;
    while i < ranges.len() {
        // A cluster: ranges whose context would touch or overlap.
        let first = i;
        while i + 1 < ranges.len()
            && old[ranges[i].end..ranges[i + 1].start]
                .matches('\n')
                .count()
                <= 2 * CONTEXT_LINES
        {
            i += 1;
        }
        let last = i;
        i += 1;
        let shift_before = shift;
        for r in &ranges[first..=last] {
            shift += new_len as isize - r.len() as isize;
        }
        let old_start = lines_back(old, ranges[first].start, CONTEXT_LINES);
        let old_end = lines_forward(old, ranges[last].end, CONTEXT_LINES);
        let new_start = old_start.saturating_add_signed(shift_before);
        let new_end = old_end.saturating_add_signed(shift).min(new.len());
        old_line += old[old_pos..old_start].matches('\n').count();
        new_line += new[new_pos..new_start].matches('\n').count();
        old_pos = old_start;
        new_pos = new_start;
        let diff = TextDiff::configure()
            .deadline(deadline)
            .diff_lines(&old[old_start..old_end], &new[new_start..new_end]);
        for group in diff.grouped_ops(CONTEXT_LINES) {
            let (Some(first_op), Some(last_op)) = (group.first(), group.last()) else {
                continue;
            };
            let old_range =
                old_line + first_op.old_range().start..old_line + last_op.old_range().end;
            let new_range =
                new_line + first_op.new_range().start..new_line + last_op.new_range().end;
            out.push_str(&format!(
                "@@ -{} +{} @@\n",
                hunk_range(&old_range),
                hunk_range(&new_range)
            ));
            for op in &group {
                for change in diff.iter_changes(op) {
                    out.push(match change.tag() {
                        ChangeTag::Delete => '-',
                        ChangeTag::Insert => '+',
                        ChangeTag::Equal => ' ',
                    });
                    let value = change.value();
                    let text = value.strip_suffix('\n').unwrap_or(value);
                    push_clipped(&mut out, text);
                    out.push('\n');
                    if !value.ends_with('\n') {
                        out.push_str("\\ No newline at end of file\n");
                    }
                }
            }
        }
    }
    out
}

/// A hunk header range, as `diff -u` writes it.
fn hunk_range(range: &Range<usize>) -> String {
    match range.len() {
        1 => format!("{}", range.start + 1),
        0 => format!("{},0", range.start),
        n => format!("{},{n}", range.start + 1),
    }
}

/// Appends `text`, cut at [`MAX_DIFF_LINE_CHARS`] chars with a marker.
fn push_clipped(out: &mut String, text: &str) {
    match char_boundary(text.as_bytes(), MAX_DIFF_LINE_CHARS) {
        None => out.push_str(text),
        Some(cut) => {
            out.push_str(&text[..cut]);
            out.push_str(&format!(
                " [... line cut: {} of {} bytes not shown]",
                text.len() - cut,
                text.len()
            ));
        }
    }
}

/// Start of the line `n` lines before the one holding byte `at`.
fn lines_back(text: &str, at: usize, n: usize) -> usize {
    let mut start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    for _ in 0..n {
        if start == 0 {
            break;
        }
        start = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
    }
    start
}

/// End (after the newline) of the line `n` lines after the one holding the
/// byte before `at` (a range ending at a line start ends that line).
fn lines_forward(text: &str, at: usize, n: usize) -> usize {
    let mut end = if at > 0 && text.as_bytes()[at - 1] == b'\n' {
        at
    } else {
        text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
    };
    for _ in 0..n {
        if end >= text.len() {
            break;
        }
        end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
    }
    end
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

/// The line starting at byte `start` (which is below `content.len()`).
fn line_at(content: &str, start: usize) -> Line {
    let end = content[start..]
        .find('\n')
        .map_or(content.len(), |i| start + i + 1);
    let text = &content[start..end];
    let text = text.strip_suffix('\n').unwrap_or(text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    Line {
        start,
        text_end: start + text.len(),
        end,
    }
}

/// Finds `old`: exact substring matches, else whole-line matches ignoring
/// trailing whitespace, else ignoring leading and trailing whitespace. At
/// most [`MAX_MATCHES`] + 1 matches are recorded (one more says "too many").
/// Lines are scanned in place, never collected, so memory does not grow
/// with the file's line count.
fn find(content: &str, old: &str) -> Option<Found> {
    let exact: Vec<Range<usize>> = content
        .match_indices(old)
        .take(MAX_MATCHES + 1)
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
        let mut ranges = Vec::new();
        let mut pos = 0;
        while pos < content.len() && ranges.len() <= MAX_MATCHES {
            let mut at = pos;
            let mut last = None;
            for want in &wanted {
                if at >= content.len() {
                    last = None;
                    break;
                }
                let line = line_at(content, at);
                if norm(&content[line.start..line.text_end]) != *want {
                    last = None;
                    break;
                }
                at = line.end;
                last = Some(line);
            }
            match last {
                Some(last) => {
                    ranges.push(
                        pos..if keep_newline {
                            last.end
                        } else {
                            last.text_end
                        },
                    );
                    pos = last.end;
                }
                None => pos = line_at(content, pos).end,
            }
        }
        let Some(first) = ranges.first() else {
            continue;
        };
        let indent = (kind == MatchKind::Indentation)
            .then(|| indent_pair(content, first.start, old))
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
/// matched (the match starts at byte `start`).
fn indent_pair(content: &str, start: usize, old: &str) -> Option<(String, String)> {
    let (offset, old_line) = old
        .split('\n')
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty())?;
    let mut at = start;
    for _ in 0..offset {
        at = line_at(content, at).end;
        if at >= content.len() {
            return None;
        }
    }
    let line = line_at(content, at);
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
    if first.len() > 500 || content.lines().nth(HINT_MAX_LINES).is_some() {
        return None;
    }
    let lines: Vec<&str> = content.lines().collect();
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
    async fn special_files_are_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&tmp.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let ctx = ctx(tmp.path());
        for (path, kind) in [("pipe", "FIFO"), ("/dev/null", "character device")] {
            let args = PatchArgs {
                path: path.into(),
                old_string: "a".into(),
                new_string: "b".into(),
                replace_all: None,
            };
            let err = Patch.run(args, &ctx).await.unwrap_err();
            assert!(
                err.0
                    .starts_with(&format!("not a regular file: {path} is ")),
                "{err}"
            );
            assert!(err.0.contains(kind), "{err}");
        }
    }

    #[tokio::test]
    async fn files_over_the_cap_are_refused_unread() {
        let tmp = setup("");
        let path = tmp.path().join("f.txt");
        // Sparse: no disk space used, and patch must not read it.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(MAX_PATCH_BYTES + 1)
            .unwrap();
        let err = patch(tmp.path(), "a", "b", false).await.unwrap_err();
        assert!(
            err.0
                .contains("f.txt is too large to patch (33554433 bytes"),
            "{err}"
        );
        assert!(err.0.contains("32 MiB"), "{err}");
        assert!(err.0.contains("terminal"), "{err}");
    }

    #[tokio::test]
    async fn match_counts_are_capped() {
        let tmp = setup(&"ab\n".repeat(MAX_MATCHES + 5));
        let err = patch(tmp.path(), "ab", "cd", false).await.unwrap_err();
        assert!(err.0.contains("matches more than 10000 times"), "{err}");
        assert!(
            err.0.contains("lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ..."),
            "{err}"
        );
        let err = patch(tmp.path(), "ab", "cd", true).await.unwrap_err();
        assert!(err.0.contains("at most 10000 places"), "{err}");
        assert!(file(&tmp).starts_with("ab\nab\n"));
        let err = patch(tmp.path(), "  ab  ", "cd", true).await.unwrap_err();
        assert!(err.0.contains("at most 10000 places"), "{err}");
    }

    #[tokio::test]
    async fn a_long_line_is_patched_and_its_diff_lines_are_cut() {
        let line = format!("{}NEEDLE{}", "a".repeat(3_000_000), "b".repeat(3_000_000));
        let tmp = setup(&format!("first\n{line}\nlast\n"));
        let out = patch(tmp.path(), "NEEDLE", "pin", false).await.unwrap();
        assert!(out.len() < 10_000, "{}", out.len());
        let short = out.replace(&"a".repeat(1000), "A");
        assert!(out.contains("@@ -1,3 +1,3 @@\n first\n-aaaa"), "{short}");
        assert!(
            out.contains(" [... line cut: 5998006 of 6000006 bytes not shown]\n+aaa"),
            "{short}"
        );
        assert!(
            out.contains(" [... line cut: 5998003 of 6000003 bytes not shown]\n last\n"),
            "{short}"
        );
        assert_eq!(
            file(&tmp),
            format!(
                "first\n{}pin{}\nlast\n",
                "a".repeat(3_000_000),
                "b".repeat(3_000_000)
            )
        );
    }

    /// The windowed diff is the same as a diff of the whole files.
    #[test]
    fn windowed_diff_equals_the_whole_file_diff() {
        let base: String = (1..=60).map(|i| format!("line {i}\n")).collect();
        let cases: Vec<(String, &str, &str)> = vec![
            (base.clone(), "line 1\n", "first\n"),
            (base.clone(), "line 30\n", "x\ny\n"),
            (base.clone(), "line 60\n", ""),
            (base.clone(), "line 5\nline 6\n", "five\n"),
            (base.clone(), "line 4", "LINE 4"),
            (base.clone(), "0\n", "0!\n"),
            (base.clone(), "line 2", "line 2 and more"),
            (base.trim_end().to_owned(), "line 60", "end"),
            ("a\nb".into(), "b", "c\nd\n"),
            ("x".into(), "x", "y"),
        ];
        for (content, old, new) in cases {
            let ranges: Vec<Range<usize>> = content
                .match_indices(old)
                .map(|(i, m)| i..i + m.len())
                .collect();
            let updated = content.replace(old, new);
            let ours = unified_diff("f", &content, &updated, &ranges, new.len());
            let whole = TextDiff::from_lines(&content, &updated)
                .unified_diff()
                .context_radius(CONTEXT_LINES)
                .header("a/f", "b/f")
                .to_string();
            assert_eq!(ours, whole, "{old:?} -> {new:?}");
        }
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
