//! Removal of ANSI escape sequences (colours, cursor moves, titles) from
//! command output, so the model sees plain text.

/// Returns `text` without ANSI escape sequences: CSI (`ESC [ ... final`), OSC
/// (`ESC ] ... BEL` or `ESC ] ... ESC \`), other two-byte escapes, and the
/// 8-bit CSI introducer. A `\r\n` pair becomes `\n`.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | '_' | '^' | 'X') => skip_string(&mut chars),
                // Two-byte escapes such as `ESC (B` take one more char.
                Some('(' | ')' | '*' | '+' | '#' | '%') => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\r' if chars.peek() == Some(&'\n') => {}
            _ => out.push(c),
        }
    }
    out
}

/// Skips CSI parameters and intermediates up to and including the final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// Skips an OSC/DCS-style string up to BEL or the `ESC \` terminator.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn strips_colours_and_cursor_sequences() {
        assert_eq!(strip_ansi("\u{1b}[1;31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(strip_ansi("a\u{1b}[2Kb\u{1b}[?25lc"), "abc");
    }

    #[test]
    fn strips_osc_titles_and_charset_switches() {
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(strip_ansi("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(strip_ansi("\u{1b}(Bok"), "ok");
    }

    #[test]
    fn normalises_crlf_and_keeps_unicode() {
        assert_eq!(strip_ansi("é\r\nü\rx"), "é\nü\rx");
    }
}
