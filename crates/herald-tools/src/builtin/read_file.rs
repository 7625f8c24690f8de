//! The `read_file` tool: numbered lines of a text file, a range at a time.

use std::io::{BufReader, Cursor, Read};
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::fsutil::{FILE_TOOL_TIMEOUT, Stop, open_regular, run_blocking};
use super::lines::{char_boundary, count_remaining_lines, read_capped_line};
use crate::{ToolContext, ToolError, TypedTool};

/// Default number of lines returned.
const DEFAULT_LIMIT: u64 = 500;
/// Lines longer than this many chars are cut.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of one line held in memory: enough for [`MAX_LINE_CHARS`] chars of
/// any UTF-8 text; the rest of a longer line is skipped, never stored.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// Bytes inspected for NUL to detect binary files.
const BINARY_PROBE: u64 = 8192;
/// Read buffer size.
const BUFFER_BYTES: usize = 64 * 1024;
/// Files up to this size are read whole and split in memory (one read, no
/// per-line copies); larger ones stream.
const WHOLE_FILE_BYTES: u64 = 1024 * 1024;

/// The `read_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadFile;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ReadFileArgs {
    /// File path, absolute or relative to the current directory.
    #[schemars(description = "")]
    pub path: String,
    /// First line, 1-based.
    pub offset: Option<u64>,
    /// Lines (default 500).
    pub limit: Option<u64>,
}

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "read_file";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Read a text file as `N|text` lines (numbers are not content), with the line count \
and the offset to continue from; lines are cut at 2000 chars.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: ReadFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let path = ctx.state.resolve(&args.path);
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        ctx.state.note_read(&path);
        if let Some(files) = ctx.state.file_backend() {
            let text = files
                .read_text(&path)
                .await
                .map_err(|e| ToolError::new(format!("cannot read {}: {e}", args.path)))?;
            return read_text_lines(&text, &args.path, offset, limit);
        }
        let tracker = ctx.state.file_tracker();
        run_blocking(ctx, Self::NAME, FILE_TOOL_TIMEOUT, move |stop| {
            read_lines(&path, &args.path, offset, limit, stop, tracker.as_deref())
        })
        .await
    }
}

/// The error for a file whose first bytes contain NUL.
fn refuse_binary(head: &[u8], shown: &str) -> Result<(), ToolError> {
    let probe = &head[..head.len().min(BINARY_PROBE as usize)];
    if memchr::memchr(0, probe).is_some() {
        return Err(ToolError::new(format!(
            "{shown} looks like a binary file (it contains NUL bytes); read_file shows text only. \
             Inspect it with terminal (e.g. `file {shown}` or `xxd {shown} | head`)."
        )));
    }
    Ok(())
}

/// Reads lines `offset..offset+limit` of `path` (named `shown` in messages).
/// Files up to [`WHOLE_FILE_BYTES`] are read in one go and split in place;
/// larger ones stream through a fixed buffer, holding at most
/// [`MAX_LINE_BYTES`] of each line, so memory stays bounded whatever the file.
/// A text file read is told to `tracker` (with its bytes when read whole).
fn read_lines(
    path: &Path,
    shown: &str,
    offset: u64,
    limit: u64,
    stop: &Stop,
    tracker: Option<&dyn crate::FileTracker>,
) -> Result<String, ToolError> {
    let (file, meta) = open_regular(path, shown)?;
    // One more byte than a whole read wants: getting it means the file grew
    // past the bound since it was measured, and it streams instead.
    let (want, capacity) = if meta.len() <= WHOLE_FILE_BYTES {
        (
            WHOLE_FILE_BYTES + 1,
            usize::try_from(meta.len()).unwrap_or(0) + 1,
        )
    } else {
        (BINARY_PROBE, 0)
    };
    let mut head = Vec::with_capacity(capacity);
    (&file)
        .take(want)
        .read_to_end(&mut head)
        .map_err(|e| read_error(shown, &e))?;
    refuse_binary(&head, shown)?;
    let whole = (head.len() as u64) < want;
    if let Some(tracker) = tracker {
        if whole {
            tracker.read(path, Some(&head), Some(&meta));
        } else {
            tracker.read(path, None, None);
        }
    }
    let last_wanted = offset.saturating_add(limit - 1);
    let (out, total) = if whole {
        stop.check().map_err(|e| read_error(shown, &e))?;
        number_lines_in(&head, offset, last_wanted)
    } else {
        let reader = BufReader::with_capacity(BUFFER_BYTES, Cursor::new(head).chain(file));
        number_lines_streamed(reader, offset, last_wanted, stop)
            .map_err(|e| read_error(shown, &e))?
    };
    finish(out, total, shown, offset, last_wanted)
}

/// Lines `offset..offset+limit` of `text` handed over by a
/// [`crate::FileBackend`] (an editor's buffer), numbered as a file's.
fn read_text_lines(text: &str, shown: &str, offset: u64, limit: u64) -> Result<String, ToolError> {
    refuse_binary(text.as_bytes(), shown)?;
    let last_wanted = offset.saturating_add(limit - 1);
    let (out, total) = number_lines_in(text.as_bytes(), offset, last_wanted);
    finish(out, total, shown, offset, last_wanted)
}

/// Adds the footer to the numbered lines `out` of a file of `total` lines
/// (or says it is empty, or refuses an offset past its end).
fn finish(
    mut out: String,
    total: u64,
    shown: &str,
    offset: u64,
    last_wanted: u64,
) -> Result<String, ToolError> {
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
    // The text stays in the conversation for the whole session: give back
    // what was reserved and not used (glibc shrinks a block in place).
    out.shrink_to_fit();
    Ok(out)
}

/// Numbers lines `offset..=last_wanted` of a whole file held in memory;
/// returns them and the file's line count. The same lines as
/// [`number_lines_streamed`] gives for the same bytes.
fn number_lines_in(bytes: &[u8], offset: u64, last_wanted: u64) -> (String, u64) {
    // Valid UTF-8 is checked once for the whole file, not line by line.
    let text = std::str::from_utf8(bytes).ok();
    let mut out = String::with_capacity(bytes.len() + bytes.len() / 4 + 64);
    let mut total: u64 = 0;
    let mut start = 0;
    while start < bytes.len() && total < last_wanted {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |at| start + at);
        total += 1;
        if total >= offset {
            let line_end = if end > start && bytes[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            match text.and_then(|text| text.get(start..line_end)) {
                // Short enough that it cannot need cutting.
                Some(line) if line.len() <= MAX_LINE_CHARS => {
                    push_decimal(&mut out, total);
                    out.push('|');
                    out.push_str(line);
                    out.push('\n');
                }
                _ => {
                    let line = &bytes[start..line_end];
                    let kept = &line[..line.len().min(MAX_LINE_BYTES)];
                    push_line(&mut out, total, kept, line.len() as u64);
                }
            }
        }
        start = end + 1;
    }
    // The lines after the wanted ones are only counted.
    let rest = bytes.get(start..).unwrap_or_default();
    total += memchr::memchr_iter(b'\n', rest).count() as u64;
    if rest.last().is_some_and(|&last| last != b'\n') {
        total += 1;
    }
    (out, total)
}

/// Numbers lines `offset..=last_wanted` of a file of any size read through
/// `reader`; returns them and the file's line count.
fn number_lines_streamed(
    mut reader: impl std::io::BufRead,
    offset: u64,
    last_wanted: u64,
    stop: &Stop,
) -> std::io::Result<(String, u64)> {
    let mut out = String::new();
    let mut line = Vec::new();
    let mut total: u64 = 0;
    while total < last_wanted {
        let Some(length) = read_capped_line(&mut reader, &mut line, MAX_LINE_BYTES, stop)? else {
            break;
        };
        total += 1;
        if total >= offset {
            push_line(&mut out, total, &line, length);
        }
    }
    if total == last_wanted {
        total += count_remaining_lines(&mut reader, stop)?;
    }
    Ok((out, total))
}

fn read_error(shown: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(format!("cannot read {shown}: {err}"))
}

/// Appends `N|text` for a line whose first bytes are `kept` (without the line
/// ending) and whose full length is `length` bytes, cutting it at
/// [`MAX_LINE_CHARS`] chars with a marker saying how many bytes were left out.
fn push_line(out: &mut String, number: u64, kept: &[u8], length: u64) {
    // Into `out` directly: no string per line, no formatting machinery
    // (this runs for every line of every file read).
    push_decimal(out, number);
    out.push('|');
    // A line of at most MAX_LINE_CHARS bytes has at most that many chars:
    // only longer ones need counting.
    let cut = (kept.len() > MAX_LINE_CHARS)
        .then(|| char_boundary(kept, MAX_LINE_CHARS))
        .flatten()
        .or_else(|| ((kept.len() as u64) < length).then_some(kept.len()));
    match cut {
        None => push_text(out, kept),
        Some(cut) => {
            push_text(out, &kept[..cut]);
            out.push_str(&format!(
                " [... line cut: {} of {length} bytes not shown]",
                length - cut as u64
            ));
        }
    }
    out.push('\n');
}

/// Appends `bytes` as text: as they are when they are UTF-8 (checked with
/// the standard library's word-at-a-time validation), else with each
/// invalid sequence replaced by U+FFFD.
fn push_text(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &digit in &digits[at..] {
        out.push(char::from(digit));
    }
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

    #[test]
    fn whole_and_streamed_reads_number_the_same_lines() {
        let long_ascii = format!("{}\r\n", "x".repeat(MAX_LINE_BYTES + 5));
        let long_wide = format!("{}\nafter", "é".repeat(MAX_LINE_CHARS + 3));
        let inputs: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"\n".to_vec(),
            b"a".to_vec(),
            b"a\n".to_vec(),
            b"a\r\nb\r\n".to_vec(),
            b"\r".to_vec(),
            b"a\r\r\n\n\nlast".to_vec(),
            b"caf\xc3\xa9\nbad \xff\xfe end\n\xe6\x97".to_vec(),
            long_ascii.into_bytes(),
            long_wide.into_bytes(),
            numbered(40).into_bytes(),
        ];
        let stop = Stop::default();
        for bytes in &inputs {
            for offset in 1..=5 {
                for last_wanted in [offset, offset + 1, offset + 3, u64::MAX] {
                    let whole = number_lines_in(bytes, offset, last_wanted);
                    // A small buffer splits lines and line endings across reads.
                    let reader = BufReader::with_capacity(7, &bytes[..]);
                    let streamed =
                        number_lines_streamed(reader, offset, last_wanted, &stop).unwrap();
                    assert_eq!(
                        whole,
                        streamed,
                        "{:?} from {offset} to {last_wanted}",
                        String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
                    );
                }
            }
        }
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
    async fn invalid_utf8_is_replaced_and_valid_text_kept_as_is() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("mixed.txt"),
            b"caf\xc3\xa9\nbad \xff\xfe end\n",
        )
        .unwrap();
        let out = read(&ctx(tmp.path()), "mixed.txt", None, None)
            .await
            .unwrap();
        assert_eq!(
            out,
            "1|café\n2|bad \u{FFFD}\u{FFFD} end\n[lines 1-2 of 2; end of file]"
        );
    }

    #[test]
    fn line_numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 99, 100, 1_234_567_890, u64::MAX] {
            let mut out = String::from("x");
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
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
        assert!(
            out.contains("[... line cut: 500 of 2500 bytes not shown]"),
            "{out}"
        );
        let out = read(&ctx, "empty.txt", None, None).await.unwrap();
        assert_eq!(out, "[empty.txt is empty: 0 lines]");
    }

    #[tokio::test]
    async fn fifo_socket_and_device_are_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&tmp.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(tmp.path().join("sock")).unwrap();
        let ctx = ctx(tmp.path());
        let started = std::time::Instant::now();
        for (path, kind) in [
            ("pipe", "FIFO"),
            ("sock", "socket"),
            ("/dev/zero", "character device"),
        ] {
            let err = read(&ctx, path, None, None).await.unwrap_err();
            assert!(
                err.0
                    .starts_with(&format!("not a regular file: {path} is ")),
                "{err}"
            );
            assert!(err.0.contains(kind), "{err}");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_huge_line_is_cut_with_the_bytes_left_out_and_numbering_goes_on() {
        let tmp = tempfile::tempdir().unwrap();
        // 20 MB in one line, then two short ones.
        let mut text = "é".repeat(10_000_000);
        text.push_str("\nsecond\r\nthird");
        std::fs::write(tmp.path().join("wide.txt"), &text).unwrap();
        let ctx = ctx(tmp.path());
        let out = read(&ctx, "wide.txt", None, None).await.unwrap();
        let expected_head = format!("1|{}", "é".repeat(2000));
        assert!(out.starts_with(&expected_head), "{}", &out[..100]);
        assert!(
            out.contains(
                " [... line cut: 19996000 of 20000000 bytes not shown]\n2|second\n3|third\n"
            ),
            "{}",
            &out[out.len() - 200..]
        );
        assert!(out.ends_with("[lines 1-3 of 3; end of file]"), "{out}");
        // Skipping past the long line and counting past the range work too.
        let out = read(&ctx, "wide.txt", Some(2), Some(1)).await.unwrap();
        assert_eq!(
            out,
            "2|second\n[lines 2-2 of 3; 1 more, continue with offset=3]"
        );
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
