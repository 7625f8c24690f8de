//! Text that came from outside (model output, tool output, stored titles,
//! imported transcripts) made safe to print on a terminal: escape
//! sequences are removed so stored text can never move the cursor, clear
//! the screen, set the window title or hyperlink, and other control
//! characters become visible placeholders.

use std::borrow::Cow;

/// `text` without terminal control sequences. CSI (`ESC [ … final`), OSC
/// (`ESC ] … BEL|ST`), DCS/SOS/PM/APC strings and two-byte escapes are
/// dropped whole, as are their 8-bit (C1) forms; a carriage return, backspace
/// or any other C0/C1 control becomes `�`, except newline and tab, which are kept.
/// Text with nothing to remove is returned as it is, without a copy.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c != '\n' && c != '\t' && c.is_control())
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // Two-byte escapes (`ESC c` resets the terminal), and a
                // lone ESC at the end.
                Some(_) | None => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Skips a CSI sequence's parameter and intermediate bytes and its final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            // Not a valid CSI byte: the sequence ends here.
            return;
        }
    }
}

/// Skips a string sequence (OSC, DCS, …) up to BEL, ST (`ESC \`) or C1 ST.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

/// `text` on one line: [`terminal_safe`], with newlines and tabs as spaces.
pub fn one_line(text: &str) -> String {
    terminal_safe(text).replace(['\n', '\t'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(
            terminal_safe("héllo\n\tworld"),
            Cow::Borrowed("héllo\n\tworld")
        ));
    }

    #[test]
    fn escape_sequences_are_removed_whole() {
        assert_eq!(terminal_safe("a\u{1b}[2Jb"), "ab");
        assert_eq!(terminal_safe("\u{1b}]0;pwned\u{7}title"), "title");
        assert_eq!(terminal_safe("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(terminal_safe("x\u{1b}[1;31mred\u{1b}[0m"), "xred");
        assert_eq!(terminal_safe("\u{1b}Pq#0\u{1b}\\ok"), "ok");
        assert_eq!(terminal_safe("\u{9b}2Jz"), "z");
        assert_eq!(terminal_safe("reset\u{1b}c"), "reset");
        assert_eq!(terminal_safe("end\u{1b}"), "end");
    }

    #[test]
    fn other_controls_become_visible() {
        assert_eq!(
            terminal_safe("a\rb\u{8}c\u{7}"),
            "a\u{fffd}b\u{fffd}c\u{fffd}"
        );
        assert_eq!(one_line("a\nb\tc"), "a b c");
    }

    #[test]
    fn an_unterminated_string_swallows_only_itself() {
        assert_eq!(terminal_safe("ok\u{1b}]0;never ends"), "ok");
    }
}
