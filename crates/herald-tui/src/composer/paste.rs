//! Bracketed paste: the pasted text cleaned for the terminal, and the label
//! a large paste is collapsed to (`[pasted 120 lines]`) so a stack trace
//! does not push the conversation off the screen.

use herald_protocol::terminal_safe;

/// A paste with more lines than this is collapsed.
pub(crate) const LARGE_PASTE_LINES: usize = 5;
/// A paste with more characters than this is collapsed.
pub(crate) const LARGE_PASTE_CHARS: usize = 1_000;

/// The pasted text as the composer keeps it: CRLF and CR turned into LF
/// (terminals send CR for Enter), escape sequences and other control
/// characters removed, newlines and tabs kept.
pub(crate) fn normalise(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    terminal_safe(&text).into_owned()
}

/// Whether `text` is shown collapsed to a label.
pub(crate) fn is_large(text: &str) -> bool {
    text.lines().count() > LARGE_PASTE_LINES || text.chars().count() > LARGE_PASTE_CHARS
}

/// The label of a collapsed paste: `[pasted 120 lines]`, or
/// `[pasted 1500 chars]` for a few long lines; numbered (`#2`, `#3`) when
/// the same label is already in the text (`taken`).
pub(crate) fn label(text: &str, taken: impl Fn(&str) -> bool) -> String {
    let lines = text.lines().count();
    let base = if lines > LARGE_PASTE_LINES {
        format!("pasted {lines} lines")
    } else {
        format!("pasted {} chars", text.chars().count())
    };
    let plain = format!("[{base}]");
    if !taken(&plain) {
        return plain;
    }
    (2..)
        .map(|n| format!("[{base} #{n}]"))
        .find(|label| !taken(label))
        .unwrap_or(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_become_lf_and_escapes_go() {
        assert_eq!(normalise("a\r\nb\rc\n\td"), "a\nb\nc\n\td");
        assert_eq!(normalise("red\u{1b}[31m!\u{7}"), "red!\u{fffd}");
    }

    #[test]
    fn only_long_pastes_are_large() {
        assert!(!is_large("1\n2\n3\n4\n5"));
        assert!(is_large("1\n2\n3\n4\n5\n6"));
        assert!(!is_large(&"x".repeat(1_000)));
        assert!(is_large(&"é".repeat(1_001)));
    }

    #[test]
    fn labels_count_lines_or_chars_and_are_numbered_when_repeated() {
        let six = "1\n2\n3\n4\n5\n6\n";
        assert_eq!(label(six, |_| false), "[pasted 6 lines]");
        assert_eq!(label(&"x".repeat(1500), |_| false), "[pasted 1500 chars]");
        let taken = ["[pasted 6 lines]", "[pasted 6 lines #2]"];
        assert_eq!(label(six, |l| taken.contains(&l)), "[pasted 6 lines #3]");
    }
}
