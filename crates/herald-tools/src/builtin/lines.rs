//! Line reading with bounded memory: a line of any length (a 1 GiB minified
//! file is one line) is held only up to a cap; the rest is skipped while it
//! streams past and only counted.

use std::io::{BufRead, ErrorKind, Read};

use super::fsutil::Stop;

/// Reads the next line of `reader` into `keep`, keeping at most `cap` bytes of
/// it, and returns the line's full length in bytes without its ending (`\n`
/// or `\r\n`); `None` at the end of input. Bytes past the cap are consumed
/// and counted, never stored.
pub fn read_capped_line(
    reader: &mut impl BufRead,
    keep: &mut Vec<u8>,
    cap: usize,
    stop: &Stop,
) -> std::io::Result<Option<u64>> {
    keep.clear();
    let mut total: u64 = 0;
    let mut any = false;
    let mut last = 0u8;
    loop {
        stop.check()?;
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (chunk_len, used, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, i + 1, true),
            None => (buf.len(), buf.len(), false),
        };
        let chunk = &buf[..chunk_len];
        let room = cap.saturating_sub(keep.len());
        keep.extend_from_slice(&chunk[..chunk.len().min(room)]);
        total += chunk.len() as u64;
        if let Some(&b) = chunk.last() {
            last = b;
        }
        reader.consume(used);
        if done {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if last == b'\r' {
        total -= 1;
        keep.truncate(usize::try_from(total).unwrap_or(usize::MAX));
    }
    Ok(Some(total))
}

/// Counts the lines left in `reader` without keeping them (a final line
/// without newline counts).
pub fn count_remaining_lines(reader: &mut impl BufRead, stop: &Stop) -> std::io::Result<u64> {
    let mut count = 0;
    let mut last = b'\n';
    loop {
        stop.check()?;
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let Some(&end) = buf.last() else { break };
        count += memchr::memchr_iter(b'\n', buf).count() as u64;
        last = end;
        let n = buf.len();
        reader.consume(n);
    }
    if last != b'\n' {
        count += 1;
    }
    Ok(count)
}

/// Byte index in `bytes` where character number `chars` (0-based) starts, if
/// the text has more than `chars` characters. Counts UTF-8 lead bytes, so it
/// never splits a character of valid UTF-8.
pub fn char_boundary(bytes: &[u8], chars: usize) -> Option<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| (**b & 0xC0) != 0x80)
        .nth(chars)
        .map(|(i, _)| i)
}

/// A reader that passes lines through unchanged but cuts every line longer
/// than `cap` bytes: the excess is dropped (the newline is kept, so line
/// numbers stay right). A line-oriented searcher reading through it never
/// needs more than `cap` bytes for a line.
pub struct LineCapReader<R> {
    inner: R,
    cap: usize,
    /// Bytes of the current line passed through so far.
    line_len: usize,
    /// Lines that were cut.
    cut_lines: u64,
    /// Whether the current line was already counted as cut.
    counted: bool,
}

impl<R: BufRead> LineCapReader<R> {
    /// Wraps `inner`, cutting lines at `cap` bytes (at least 1).
    pub fn new(inner: R, cap: usize) -> Self {
        Self {
            inner,
            cap: cap.max(1),
            line_len: 0,
            cut_lines: 0,
            counted: false,
        }
    }

    /// How many lines were cut so far.
    pub fn cut_lines(&self) -> u64 {
        self.cut_lines
    }
}

impl<R: BufRead> Read for LineCapReader<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(0);
            }
            if self.line_len >= self.cap {
                // Skipping the rest of an over-long line, up to its newline.
                let (dropped, ends) = match memchr::memchr(b'\n', buf) {
                    Some(i) => (i, true),
                    None => (buf.len(), false),
                };
                self.inner.consume(dropped);
                if dropped > 0 && !self.counted {
                    self.cut_lines += 1;
                    self.counted = true;
                }
                if ends {
                    self.line_len = 0;
                    self.counted = false;
                }
                continue;
            }
            let room = self.cap - self.line_len;
            let n = out.len().min(buf.len());
            let (take, ends) = match memchr::memchr(b'\n', &buf[..n]) {
                Some(i) if i < room => (i + 1, true),
                _ => (n.min(room), false),
            };
            out[..take].copy_from_slice(&buf[..take]);
            self.inner.consume(take);
            if ends {
                self.line_len = 0;
            } else {
                self.line_len += take;
            }
            return Ok(take);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{BufReader, Cursor};

    use super::*;

    fn lines(text: &[u8], cap: usize, buf: usize) -> Vec<(Vec<u8>, u64)> {
        let mut reader = BufReader::with_capacity(buf, Cursor::new(text.to_vec()));
        let mut keep = Vec::new();
        let mut out = Vec::new();
        while let Some(total) =
            read_capped_line(&mut reader, &mut keep, cap, &Stop::default()).unwrap()
        {
            out.push((keep.clone(), total));
        }
        out
    }

    #[test]
    fn capped_lines_keep_a_prefix_and_count_the_rest() {
        let text = b"short\r\nxxxxxxxxxxxxxxxxxxxx\nlast";
        for buf in [1, 3, 8, 1024] {
            assert_eq!(
                lines(text, 8, buf),
                [
                    (b"short".to_vec(), 5),
                    (b"xxxxxxxx".to_vec(), 20),
                    (b"last".to_vec(), 4)
                ],
                "buffer {buf}"
            );
        }
        assert_eq!(lines(b"abcdefgh\r\n", 8, 4), [(b"abcdefgh".to_vec(), 8)]);
        assert_eq!(lines(b"abcdefghij\r\n", 8, 4), [(b"abcdefgh".to_vec(), 10)]);
        assert_eq!(lines(b"\n\n", 8, 4), [(vec![], 0), (vec![], 0)]);
        assert!(lines(b"", 8, 4).is_empty());
    }

    #[test]
    fn a_huge_line_streams_with_a_small_buffer() {
        // 64 MiB in one line, never held: only the 16-byte prefix is kept.
        struct Endless(u64);
        impl Read for Endless {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let n = (out.len() as u64).min(self.0) as usize;
                out[..n].fill(b'y');
                self.0 -= n as u64;
                Ok(n)
            }
        }
        let mut reader = BufReader::new(Endless(64 << 20));
        let mut keep = Vec::new();
        let total = read_capped_line(&mut reader, &mut keep, 16, &Stop::default())
            .unwrap()
            .unwrap();
        assert_eq!(total, 64 << 20);
        assert_eq!(keep, b"yyyyyyyyyyyyyyyy");
        assert!(keep.capacity() < 1024);
    }

    #[test]
    fn counting_and_stopping() {
        let stop = Stop::default();
        let mut r = Cursor::new(b"a\nb\nc".to_vec());
        assert_eq!(count_remaining_lines(&mut r, &stop).unwrap(), 3);
        let mut r = Cursor::new(b"a\nb\n".to_vec());
        assert_eq!(count_remaining_lines(&mut r, &stop).unwrap(), 2);
        let mut r = Cursor::new(Vec::new());
        assert_eq!(count_remaining_lines(&mut r, &stop).unwrap(), 0);
    }

    #[test]
    fn char_boundaries_never_split_characters() {
        assert_eq!(char_boundary(b"abc", 2), Some(2));
        assert_eq!(char_boundary(b"abc", 3), None);
        assert_eq!(char_boundary("éé€x".as_bytes(), 2), Some(4));
        assert_eq!(char_boundary("éé€x".as_bytes(), 3), Some(7));
    }

    #[test]
    fn line_cap_reader_cuts_long_lines_and_keeps_numbering() {
        let text = b"ok\nAAAAAAAAAAAAAAAAAAAAAAAAA\nfine\nBBBBBBBBBB";
        for buf in [1, 2, 5, 64] {
            for out_len in [1, 3, 7, 100] {
                let mut reader =
                    LineCapReader::new(BufReader::with_capacity(buf, Cursor::new(text)), 6);
                let mut result = Vec::new();
                let mut chunk = vec![0; out_len];
                loop {
                    let n = reader.read(&mut chunk).unwrap();
                    if n == 0 {
                        break;
                    }
                    result.extend_from_slice(&chunk[..n]);
                }
                assert_eq!(
                    result, b"ok\nAAAAAA\nfine\nBBBBBB",
                    "buffer {buf}, read {out_len}"
                );
                assert_eq!(reader.cut_lines(), 2);
            }
        }
        let mut reader = LineCapReader::new(Cursor::new(b"abcdef\nabcdefg\nabcdef"), 6);
        let mut result = Vec::new();
        reader.read_to_end(&mut result).unwrap();
        assert_eq!(result, b"abcdef\nabcdef\nabcdef");
        assert_eq!(reader.cut_lines(), 1);
    }
}
