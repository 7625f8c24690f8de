//! The `read_file` tool: numbered lines of a text file, a range at a time.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, ErrorKind, Read};
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::fsutil::blocking;
use crate::{ToolContext, ToolError, TypedTool};

/// Default number of lines returned.
const DEFAULT_LIMIT: u64 = 500;
/// Lines longer than this many chars are cut.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes inspected for NUL to detect binary files.
const BINARY_PROBE: u64 = 8192;

/// The `read_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadFile;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ReadFileArgs {
    /// File path, absolute or relative to the current directory.
    pub path: String,
    /// First line to show, 1-based (default 1).
    pub offset: Option<u64>,
    /// Maximum number of lines (default 500).
    pub limit: Option<u64>,
}

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "read_file";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Read a text file as numbered lines `N|text`, up to limit lines from offset, \
with the total line count and the offset to continue from. Use before patching a file; \
the line numbers are not part of the content. Long lines are cut at 2000 chars.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: ReadFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let path = ctx.state.resolve(&args.path);
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        ctx.state.note_read(&path);
        blocking(move || read_lines(&path, &args.path, offset, limit)).await
    }
}

/// Reads lines `offset..offset+limit` of `path` (named `shown` in messages).
fn read_lines(path: &Path, shown: &str, offset: u64, limit: u64) -> Result<String, ToolError> {
    let file = open_text(path, shown)?;
    let mut probe = Vec::new();
    (&file)
        .take(BINARY_PROBE)
        .read_to_end(&mut probe)
        .map_err(|e| read_error(shown, &e))?;
    if probe.contains(&0) {
        return Err(ToolError::new(format!(
            "{shown} looks like a binary file (it contains NUL bytes); read_file shows text only. \
             Inspect it with terminal (e.g. `file {shown}` or `xxd {shown} | head`)."
        )));
    }
    let mut reader = BufReader::new(Cursor::new(probe).chain(file));
    let last_wanted = offset.saturating_add(limit - 1);
    let mut out = String::new();
    let mut line = Vec::new();
    let mut total: u64 = 0;
    while total < last_wanted {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| read_error(shown, &e))?
            == 0
        {
            break;
        }
        total += 1;
        if total >= offset {
            push_line(&mut out, total, &line);
        }
    }
    if total == last_wanted {
        total += count_remaining_lines(&mut reader).map_err(|e| read_error(shown, &e))?;
    }
    if total == 0 {
        return Ok(format!("[{shown} is empty: 0 lines]"));
    }
    if offset > total {
        return Err(ToolError::new(format!(
            "offset {offset} is beyond the end of {shown}, which has {total} lines; \
             use an offset from 1 to {total}"
        )));
    }
    let last = last_wanted.min(total);
    if last < total {
        out.push_str(&format!(
            "[lines {offset}-{last} of {total}; {} more, continue with offset={}]",
            total - last,
            last + 1
        ));
    } else {
        out.push_str(&format!("[lines {offset}-{last} of {total}; end of file]"));
    }
    Ok(out)
}

fn open_text(path: &Path, shown: &str) -> Result<File, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => ToolError::new(format!(
            "file not found: {shown} (resolved to {}). Check the path, or find the file with \
             search_files(target=\"files\", pattern=\"*name*\").",
            path.display()
        )),
        _ => read_error(shown, &e),
    })?;
    if meta.is_dir() {
        return Err(ToolError::new(format!(
            "{shown} is a directory, not a file. List it with terminal (`ls {shown}`) or \
             search_files(target=\"files\", path=\"{shown}\", pattern=\"*\")."
        )));
    }
    File::open(path).map_err(|e| read_error(shown, &e))
}

fn read_error(shown: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(format!("cannot read {shown}: {err}"))
}

/// Appends `N|text`, without the line ending, cutting very long lines.
fn push_line(out: &mut String, number: u64, raw: &[u8]) {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = String::from_utf8_lossy(raw);
    out.push_str(&number.to_string());
    out.push('|');
    match text.char_indices().nth(MAX_LINE_CHARS) {
        None => out.push_str(&text),
        Some((cut, _)) => {
            out.push_str(&text[..cut]);
            out.push_str(&format!(
                " [... line cut: {} chars total]",
                text.chars().count()
            ));
        }
    }
    out.push('\n');
}

/// Counts the lines left in `reader` without keeping them.
fn count_remaining_lines(reader: &mut impl BufRead) -> std::io::Result<u64> {
    let mut count = 0;
    let mut last = b'\n';
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        count += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[buf.len() - 1];
        let n = buf.len();
        reader.consume(n);
    }
    if last != b'\n' {
        count += 1;
    }
    Ok(count)
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

    async fn read(
        ctx: &ToolContext,
        path: &str,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<String, ToolError> {
        let args = ReadFileArgs {
            path: path.to_owned(),
            offset,
            limit,
        };
        ReadFile.run(args, ctx).await
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn reads_whole_small_file_with_footer() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "alpha\r\nbeta\ngamma").unwrap();
        let out = read(&ctx(tmp.path()), "a.txt", None, None).await.unwrap();
        assert_eq!(
            out,
            "1|alpha\n2|beta\n3|gamma\n[lines 1-3 of 3; end of file]"
        );
    }

    #[tokio::test]
    async fn reads_ranges_and_says_how_to_continue() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("n.txt"), numbered(20)).unwrap();
        let ctx = ctx(tmp.path());
        let out = read(&ctx, "n.txt", Some(5), Some(3)).await.unwrap();
        assert_eq!(
            out,
            "5|line 5\n6|line 6\n7|line 7\n[lines 5-7 of 20; 13 more, continue with offset=8]"
        );
        let out = read(&ctx, "n.txt", Some(19), Some(10)).await.unwrap();
        assert_eq!(
            out,
            "19|line 19\n20|line 20\n[lines 19-20 of 20; end of file]"
        );
        let out = read(&ctx, "n.txt", Some(1), Some(20)).await.unwrap();
        assert!(out.ends_with("[lines 1-20 of 20; end of file]"), "{out}");
    }

    #[tokio::test]
    async fn default_limit_is_500_lines() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("big.txt"), numbered(1200)).unwrap();
        let out = read(&ctx(tmp.path()), "big.txt", None, None).await.unwrap();
        assert!(out.contains("500|line 500\n"));
        assert!(!out.contains("501|"));
        assert!(out.ends_with("[lines 1-500 of 1200; 700 more, continue with offset=501]"));
    }

    #[tokio::test]
    async fn offset_beyond_end_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("n.txt"), numbered(3)).unwrap();
        let err = read(&ctx(tmp.path()), "n.txt", Some(10), None)
            .await
            .unwrap_err();
        assert!(
            err.0
                .contains("offset 10 is beyond the end of n.txt, which has 3 lines"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn missing_directory_and_binary_files_have_clear_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let err = read(&ctx, "nope.rs", None, None).await.unwrap_err();
        assert!(err.0.contains("file not found: nope.rs"), "{err}");
        assert!(err.0.contains("search_files"), "{err}");

        std::fs::create_dir(tmp.path().join("dir")).unwrap();
        let err = read(&ctx, "dir", None, None).await.unwrap_err();
        assert!(err.0.contains("dir is a directory"), "{err}");

        std::fs::write(tmp.path().join("bin"), b"ELF\x00\x01\x02").unwrap();
        let err = read(&ctx, "bin", None, None).await.unwrap_err();
        assert!(err.0.contains("binary file"), "{err}");
    }

    #[tokio::test]
    async fn long_lines_are_cut_and_empty_files_reported() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("long.txt"), "x".repeat(2500)).unwrap();
        std::fs::write(tmp.path().join("empty.txt"), "").unwrap();
        let ctx = ctx(tmp.path());
        let out = read(&ctx, "long.txt", None, None).await.unwrap();
        assert!(out.starts_with(&format!("1|{}", "x".repeat(2000))));
        assert!(out.contains("[... line cut: 2500 chars total]"), "{out}");
        let out = read(&ctx, "empty.txt", None, None).await.unwrap();
        assert_eq!(out, "[empty.txt is empty: 0 lines]");
    }

    #[tokio::test]
    async fn registry_dispatch_and_validation() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "hi\n").unwrap();
        let ctx = ctx(tmp.path());
        let registry = default_registry(10_000);
        assert!(registry.is_read_only("read_file"));
        let call = ToolCall {
            id: "1".into(),
            name: "read_file".into(),
            arguments: r#"{"path": "a.txt", "offset": 1}"#.into(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(!result.is_error, "{}", result.content);
        assert!(result.content.starts_with("1|hi\n"));
        let call = ToolCall {
            id: "2".into(),
            name: "read_file".into(),
            arguments: r#"{"path": "a.txt", "offset": "x"}"#.into(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(result.is_error);
        assert!(
            result.content.contains("'offset' must be integer"),
            "{}",
            result.content
        );
    }
}
