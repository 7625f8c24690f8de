//! Bounded capture of a stream: the first and last bytes are kept, the middle
//! is counted, so a script printing gigabytes costs a fixed amount of memory.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Head and tail of everything written to one stream.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    /// Keeps at most `limit` bytes: `head_share` percent from the start, the
    /// rest from the end.
    pub(crate) fn new(limit: usize, head_share: usize) -> Self {
        let head_cap = limit * head_share.min(100) / 100;
        Self {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: limit - head_cap,
            total: 0,
        }
    }

    /// Appends `data`, dropping the oldest tail bytes beyond the cap.
    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if self.tail_cap == 0 {
            return;
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(data);
    }

    /// Everything written, or head and tail around a marker naming how much
    /// of `stream` was left out. Invalid UTF-8 becomes U+FFFD; a cut never
    /// splits a character.
    pub(crate) fn render(&self, stream: &str) -> String {
        self.render_within(stream, usize::MAX)
    }

    /// Like [`Capture::render`], keeping at most `max_bytes` of the captured
    /// bytes (head and tail in the same proportion).
    pub(crate) fn render_within(&self, stream: &str, max_bytes: usize) -> String {
        // The stream's first bytes followed by its last ones.
        let mut kept = self.head.clone();
        kept.extend(self.tail.iter());
        if kept.len() as u64 == self.total && kept.len() <= max_bytes {
            return String::from_utf8_lossy(&kept).into_owned();
        }
        let (head_len, tail_len) = if kept.len() <= max_bytes {
            (self.head.len(), self.tail.len())
        } else {
            let cap = (self.head_cap + self.tail_cap).max(1) as u64;
            let head_len = (max_bytes as u64 * self.head_cap as u64 / cap) as usize;
            (head_len, max_bytes - head_len)
        };
        let head = &kept[..head_len];
        let tail = &kept[kept.len() - tail_len..];
        let omitted = self.total - (head_len + tail_len) as u64;
        format!(
            "{}\n\n[... {} bytes of {stream} omitted; it was {} bytes in all. Print less: filter or summarise in the script ...]\n\n{}",
            String::from_utf8_lossy(utf8_prefix(head)),
            omitted,
            self.total,
            String::from_utf8_lossy(utf8_suffix(tail))
        )
    }
}

/// `bytes` without a trailing incomplete UTF-8 sequence.
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(err) if err.error_len().is_none() => &bytes[..err.valid_up_to()],
        _ => bytes,
    }
}

/// `bytes` without leading UTF-8 continuation bytes (at most three).
fn utf8_suffix(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
        .count();
    &bytes[skip..]
}

/// Reads `reader` to its end (or first error) into `capture`.
pub(crate) async fn pump(mut reader: impl AsyncRead + Unpin, capture: &mut Capture) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.push(&chunk[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Capture::new(100, 60);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.render("stdout"), "hello world");
    }

    #[test]
    fn large_output_keeps_head_and_tail_with_a_marker() {
        let mut c = Capture::new(100, 60);
        let data: String = (0..10_000u32)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        for piece in data.as_bytes().chunks(7) {
            c.push(piece);
        }
        let text = c.render("stdout");
        assert!(text.starts_with(&data[..60]), "{text}");
        assert!(text.ends_with(&data[9960..]), "{text}");
        assert!(text.contains("9900 bytes of stdout omitted"), "{text}");
    }

    #[test]
    fn render_within_keeps_the_proportion() {
        let mut c = Capture::new(100, 60);
        c.push(&[b'a'; 1000]);
        c.push(&[b'z'; 1000]);
        let text = c.render_within("stdout", 10);
        assert!(text.starts_with("aaaaaa\n"), "{text}");
        assert!(text.ends_with("\nzzzz"), "{text}");
        assert!(text.contains("1990 bytes of stdout omitted"), "{text}");
        assert_eq!(c.render_within("stdout", 5000), c.render("stdout"));
        let mut short = Capture::new(100, 60);
        short.push(b"0123456789");
        let text = short.render_within("stdout", 4);
        assert!(text.starts_with("01\n") && text.ends_with("\n89"), "{text}");
    }

    #[test]
    fn cuts_do_not_split_characters() {
        // 5 head bytes end inside the third char; 7 tail bytes start inside one.
        let mut c = Capture::new(12, 45);
        c.push("éééééééééééééééééééé".as_bytes());
        let text = c.render("stdout");
        assert!(!text.contains('\u{FFFD}'), "{text}");
        assert!(text.starts_with("éé\n"), "{text}");
        assert!(text.ends_with("\nééé"), "{text}");
    }
}
