//! The live block at the bottom of a terminal's stderr: the running
//! subagents and the spinner, redrawn in place. It only ever erases the
//! lines it drew itself: each line is cut to fit the terminal's width (so
//! none wraps into a second row), the block is drawn only at the start of
//! a line, and it is erased before anything else is printed.

use std::io::Write;
use std::time::Duration;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::style::Palette;

/// Braille spinner frames, one per tenth of a second.
const FRAMES: [&str; 10] = [
    "\u{280b}", "\u{2819}", "\u{2839}", "\u{2838}", "\u{283c}", "\u{2834}", "\u{2826}", "\u{2827}",
    "\u{2807}", "\u{280f}",
];

/// How many rows the block occupies now.
#[derive(Debug, Default)]
pub(crate) struct LiveRegion {
    drawn: usize,
}

impl LiveRegion {
    /// Erases the block: back to the start of its first row, then clear
    /// to the end of the screen. The cursor is left where the block began.
    /// (The caller flushes.)
    pub(crate) fn clear(&mut self, out: &mut impl Write) {
        match self.drawn {
            0 => return,
            1 => {
                let _ = out.write_all(b"\r\x1b[2K");
            }
            n => {
                let _ = write!(out, "\r\x1b[{}A\x1b[J", n - 1);
            }
        }
        self.drawn = 0;
    }

    /// Draws `lines` (already cut to the width by [`fit`]), the cursor
    /// staying at the end of the last one: no newline follows, so erasing
    /// needs no knowledge of what scrolled.
    pub(crate) fn draw(&mut self, out: &mut impl Write, lines: &[String]) {
        self.clear(out);
        if lines.is_empty() {
            return;
        }
        let _ = out.write_all(lines.join("\n").as_bytes());
        self.drawn = lines.len();
    }
}

/// `text` cut to at most `width - 1` terminal columns (the last column is
/// left free so the cursor never wraps), with an ellipsis when cut.
pub(crate) fn fit(text: &str, width: usize) -> String {
    let max = width.saturating_sub(1).max(1);
    if text.width() <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('\u{2026}');
    out
}

/// The spinner row: a frame chosen by the elapsed time, what is being
/// waited for, and for how long (`⠹ thinking · 3.2 s`), cut to `width`.
pub(crate) fn spinner_line(
    label: &str,
    elapsed: Duration,
    width: usize,
    palette: Palette,
) -> String {
    let tenths = elapsed.as_millis() / 100;
    let frame = FRAMES[(tenths % FRAMES.len() as u128) as usize];
    let time = format!(" \u{b7} {:.1} s", elapsed.as_secs_f64());
    // Frame, space, label, time: the label gives way first.
    let room = width.saturating_sub(2 + time.width());
    let label = fit(label, room);
    format!("{} {label}{}", palette.cyan(frame), palette.dim(&time))
}

/// What the spinner says is awaited: the model, one running tool with its
/// key argument, or several tools.
pub(crate) fn activity_label(running: &[(String, Option<String>)]) -> String {
    match running {
        [] => "thinking".to_owned(),
        [(name, Some(key))] => format!("{name}  {key}"),
        [(name, None)] => name.clone(),
        [(name, _), rest @ ..] => format!("{name} and {} more", rest.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Palette = Palette { color: false };

    #[test]
    fn the_block_erases_exactly_its_own_rows() {
        let mut region = LiveRegion::default();
        let mut out = Vec::new();
        region.clear(&mut out);
        assert!(out.is_empty(), "nothing drawn, nothing erased");
        region.draw(&mut out, &["a".into(), "b".into(), "c".into()]);
        assert_eq!(out, b"a\nb\nc");
        out.clear();
        region.clear(&mut out);
        assert_eq!(out, b"\r\x1b[2A\x1b[J");
        out.clear();
        region.clear(&mut out);
        assert!(out.is_empty(), "erased once only");
        region.draw(&mut out, &["spin".into()]);
        region.clear(&mut out);
        assert_eq!(out, b"spin\r\x1b[2K");
    }

    #[test]
    fn lines_fit_the_width_without_touching_the_last_column() {
        assert_eq!(fit("short", 80), "short");
        assert_eq!(fit("abcdefghij", 6), "abcd\u{2026}");
        // Wide characters count two columns.
        assert_eq!(
            fit("\u{4f60}\u{597d}\u{4f60}\u{597d}", 6),
            "\u{4f60}\u{597d}\u{2026}"
        );
        assert_eq!(fit("abc", 0), "\u{2026}");
    }

    #[test]
    fn the_spinner_shows_what_is_awaited_and_for_how_long() {
        let line = spinner_line("thinking", Duration::from_millis(3_240), 80, PLAIN);
        assert_eq!(line, "\u{2839} thinking \u{b7} 3.2 s");
        let narrow = spinner_line(
            "terminal  cargo test --workspace --all-features",
            Duration::from_millis(100),
            30,
            PLAIN,
        );
        assert!(narrow.width() < 30, "{narrow}");
        assert!(narrow.ends_with(" \u{b7} 0.1 s"), "{narrow}");
        assert_eq!(activity_label(&[]), "thinking");
        assert_eq!(
            activity_label(&[("terminal".into(), Some("ls".into()))]),
            "terminal  ls"
        );
        assert_eq!(
            activity_label(&[("read_file".into(), None), ("read_file".into(), None)]),
            "read_file and 1 more"
        );
    }
}
