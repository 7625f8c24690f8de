//! Styled lines serialised as text with ANSI SGR escape sequences, for
//! output that does not go through a ratatui frame: `herald run` printing
//! rendered markdown to stdout, and the TUI writing finished history into
//! the terminal's scrollback above its viewport.
//!
//! Span text is sanitised again here (`terminal_safe`, and a stray newline
//! or tab becomes a space) so that nothing but the SGR sequences written
//! by this module can reach the terminal, even if a caller built a span
//! from raw text.

use std::fmt::Write as _;

use herald_protocol::terminal_safe;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

/// Appends `line` to `out`: each span's text, and with `color` the SGR
/// sequence of its style (the line's style patched with the span's) before
/// it and a reset (`ESC[0m`) at the end of the line when any style was
/// set. No newline is written. Without `color` only the text is written
/// (for `NO_COLOR` and output that is not a terminal).
pub fn write_line(out: &mut String, line: &Line<'_>, color: bool) {
    let mut current = Style::default();
    let mut styled = false;
    for span in &line.spans {
        let text = terminal_safe(&span.content);
        if text.is_empty() {
            continue;
        }
        if color {
            let style = line.style.patch(span.style);
            if style != current {
                out.push_str("\x1b[0");
                push_sgr_params(out, style);
                out.push('m');
                current = style;
                styled = true;
            }
        }
        for c in text.chars() {
            out.push(if c == '\n' || c == '\t' { ' ' } else { c });
        }
    }
    if styled {
        out.push_str("\x1b[0m");
    }
}

/// `lines` as one string, each line written by [`write_line`] and followed
/// by a newline.
pub fn lines_to_ansi(lines: &[Line<'_>], color: bool) -> String {
    let mut out = String::new();
    for line in lines {
        write_line(&mut out, line, color);
        out.push('\n');
    }
    out
}

/// The SGR parameters of `style`, each preceded by `;` (the caller wrote
/// the leading reset `0`).
fn push_sgr_params(out: &mut String, style: Style) {
    let modifiers = style.add_modifier - style.sub_modifier;
    const CODES: [(Modifier, u8); 9] = [
        (Modifier::BOLD, 1),
        (Modifier::DIM, 2),
        (Modifier::ITALIC, 3),
        (Modifier::UNDERLINED, 4),
        (Modifier::SLOW_BLINK, 5),
        (Modifier::RAPID_BLINK, 6),
        (Modifier::REVERSED, 7),
        (Modifier::HIDDEN, 8),
        (Modifier::CROSSED_OUT, 9),
    ];
    for (modifier, code) in CODES {
        if modifiers.contains(modifier) {
            let _ = write!(out, ";{code}");
        }
    }
    if let Some(fg) = style.fg {
        push_color(out, fg, Layer::Foreground);
    }
    if let Some(bg) = style.bg {
        push_color(out, bg, Layer::Background);
    }
    if let Some(underline) = style.underline_color {
        push_color(out, underline, Layer::Underline);
    }
}

#[derive(Clone, Copy)]
enum Layer {
    Foreground,
    Background,
    Underline,
}

fn push_color(out: &mut String, color: Color, layer: Layer) {
    // The 16 named colours: foreground 30–37 / 90–97, background +10.
    let named = |base: u8| -> Option<u8> {
        match layer {
            Layer::Foreground => Some(base),
            Layer::Background => Some(base + 10),
            Layer::Underline => None,
        }
    };
    let basic = match color {
        Color::Reset => match layer {
            Layer::Foreground => Some(39),
            Layer::Background => Some(49),
            Layer::Underline => Some(59),
        },
        Color::Black => named(30),
        Color::Red => named(31),
        Color::Green => named(32),
        Color::Yellow => named(33),
        Color::Blue => named(34),
        Color::Magenta => named(35),
        Color::Cyan => named(36),
        Color::Gray => named(37),
        Color::DarkGray => named(90),
        Color::LightRed => named(91),
        Color::LightGreen => named(92),
        Color::LightYellow => named(93),
        Color::LightBlue => named(94),
        Color::LightMagenta => named(95),
        Color::LightCyan => named(96),
        Color::White => named(97),
        Color::Indexed(_) | Color::Rgb(..) => None,
    };
    if let Some(code) = basic {
        let _ = write!(out, ";{code}");
        return;
    }
    let lead = match layer {
        Layer::Foreground => 38,
        Layer::Background => 48,
        Layer::Underline => 58,
    };
    let _ = match color {
        Color::Rgb(r, g, b) => write!(out, ";{lead};2;{r};{g};{b}"),
        Color::Indexed(index) => write!(out, ";{lead};5;{index}"),
        // A named colour as an underline colour: its index in the 256 palette.
        other => write!(out, ";{lead};5;{}", named_index(other)),
    };
}

/// The 256-colour palette index of a named colour (0–15).
fn named_index(color: Color) -> u8 {
    match color {
        Color::Black => 0,
        Color::Red => 1,
        Color::Green => 2,
        Color::Yellow => 3,
        Color::Blue => 4,
        Color::Magenta => 5,
        Color::Cyan => 6,
        Color::Gray => 7,
        Color::DarkGray => 8,
        Color::LightRed => 9,
        Color::LightGreen => 10,
        Color::LightYellow => 11,
        Color::LightBlue => 12,
        Color::LightMagenta => 13,
        Color::LightCyan => 14,
        Color::White => 15,
        Color::Reset | Color::Indexed(_) | Color::Rgb(..) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::text::Span;

    #[test]
    fn plain_text_without_colour() {
        let line = Line::from(vec![
            Span::styled("bold", Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(" text"),
        ]);
        assert_eq!(
            lines_to_ansi(&[line.clone(), Line::default()], false),
            "bold text\n\n"
        );
        let mut out = String::new();
        write_line(&mut out, &line, false);
        assert_eq!(out, "bold text");
    }

    #[test]
    fn styles_become_sgr_sequences_and_the_line_ends_reset() {
        let line = Line::from(vec![
            Span::styled(
                "a",
                Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            ),
            Span::raw("b"),
            Span::styled(
                "c",
                Style::default()
                    .fg(Color::Rgb(1, 2, 3))
                    .bg(Color::Indexed(200)),
            ),
            Span::styled(
                "d",
                Style::default()
                    .bg(Color::LightBlue)
                    .add_modifier(Modifier::DIM | Modifier::ITALIC | Modifier::UNDERLINED)
                    .add_modifier(Modifier::CROSSED_OUT | Modifier::REVERSED),
            ),
        ]);
        let mut out = String::new();
        write_line(&mut out, &line, true);
        assert_eq!(
            out,
            "\x1b[0;1;31ma\x1b[0mb\x1b[0;38;2;1;2;3;48;5;200mc\x1b[0;2;3;4;7;9;104md\x1b[0m"
        );
    }

    #[test]
    fn unstyled_lines_carry_no_escape_and_the_line_style_applies() {
        let mut out = String::new();
        write_line(&mut out, &Line::from("plain"), true);
        assert_eq!(out, "plain");
        let line = Line::from(vec![
            Span::raw("x"),
            Span::styled("y", Style::default().fg(Color::Reset)),
        ])
        .style(Style::default().fg(Color::Green));
        let mut out = String::new();
        write_line(&mut out, &line, true);
        assert_eq!(out, "\x1b[0;32mx\x1b[0;39my\x1b[0m");
    }

    #[test]
    fn sub_modifiers_and_underline_colour() {
        let style = Style::default()
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
            .remove_modifier(Modifier::BOLD)
            .underline_color(Color::Red);
        let mut out = String::new();
        write_line(&mut out, &Line::from(Span::styled("u", style)), true);
        assert_eq!(out, "\x1b[0;4;58;5;1mu\x1b[0m");
    }

    #[test]
    fn control_sequences_in_spans_never_reach_the_output() {
        let line = Line::from(vec![
            Span::raw("a\x1b]0;title\x07b\x1b[2Jc"),
            Span::styled("\nd\te\r", Style::default().fg(Color::Red)),
        ]);
        for color in [false, true] {
            let text = lines_to_ansi(std::slice::from_ref(&line), color);
            let body = text.replace("\x1b[0;31m", "").replace("\x1b[0m", "");
            assert_eq!(body, "abc d e\u{fffd}\n", "color={color}");
        }
    }
}
