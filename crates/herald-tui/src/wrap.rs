//! Word wrapping of styled lines for a terminal of a given width.
//!
//! Everything herald prints into the scrollback is wrapped here before it
//! reaches the terminal, so a line never relies on the terminal's own
//! wrapping (which breaks words and loses hanging indents). Widths are
//! display columns (`unicode-width` of each grapheme cluster), so wide
//! CJK characters and emoji take two columns and combining marks none.
//!
//! Rules: lines break at whitespace; the whitespace at a break is dropped;
//! leading whitespace of the first line is kept (indentation), of a
//! continuation line dropped; a word longer than the width is broken
//! between grapheme clusters; a wide character that does not fit in the
//! last column moves to the next line. Span styles and the line's own
//! style and alignment are kept. A width of 0 is treated as 1.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Wraps `line` at word boundaries to `width` columns.
pub fn wrap_line(line: &Line<'_>, width: u16) -> Vec<Line<'static>> {
    wrap_with_prefix(line, width, &[], &[])
}

/// Wraps plain `text` (which may hold newlines: each starts a new line; an
/// empty line stays an empty line) to `width` columns in one `style`. Tabs
/// become four spaces.
pub fn wrap_text(text: &str, width: u16, style: Style) -> Vec<Line<'static>> {
    text.split('\n')
        .flat_map(|piece| {
            let piece = piece
                .strip_suffix('\r')
                .unwrap_or(piece)
                .replace('\t', "    ");
            wrap_line(&Line::from(Span::styled(piece, style)), width)
        })
        .collect()
}

/// Wraps `line` to `width` columns with `first_prefix` in front of the first
/// output line and `rest_prefix` in front of every continuation line: the
/// hanging indent of a list item (`• ` then `  `) or the bar of a quote
/// (`│ ` on every line). The prefixes count towards the width; when they
/// leave less than one column, the text still gets one column per line.
/// Always returns at least one line (the prefix alone for empty input).
pub fn wrap_with_prefix(
    line: &Line<'_>,
    width: u16,
    first_prefix: &[Span<'static>],
    rest_prefix: &[Span<'static>],
) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let first_avail = width.saturating_sub(spans_width(first_prefix)).max(1);
    let rest_avail = width.saturating_sub(spans_width(rest_prefix)).max(1);
    let mut builder = Builder {
        line_style: line.style,
        alignment: line.alignment,
        first_prefix,
        rest_prefix,
        first_avail,
        rest_avail,
        out: Vec::new(),
        current: Vec::new(),
        current_width: 0,
        pending_space: Vec::new(),
        pending_space_width: 0,
    };
    for token in tokens(line) {
        builder.push(token);
    }
    builder.finish()
}

/// Breaks `line` into pieces of at most `width` columns between grapheme
/// clusters, ignoring word boundaries and keeping every character
/// (whitespace included): the wrapping of code, where re-flowing words
/// would change the text. `first_prefix`/`rest_prefix` as in
/// [`wrap_with_prefix`]. Always returns at least one line.
pub fn hard_wrap_with_prefix(
    line: &Line<'_>,
    width: u16,
    first_prefix: &[Span<'static>],
    rest_prefix: &[Span<'static>],
) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let first_avail = width.saturating_sub(spans_width(first_prefix)).max(1);
    let rest_avail = width.saturating_sub(spans_width(rest_prefix)).max(1);
    let mut out = Vec::new();
    let mut current: Vec<(Style, String)> = Vec::new();
    let mut used = 0;
    for span in &line.spans {
        for grapheme in span.content.graphemes(true) {
            let (text, w) = display_grapheme(grapheme);
            let avail = if out.is_empty() {
                first_avail
            } else {
                rest_avail
            };
            if used + w > avail && used > 0 {
                let prefix = if out.is_empty() {
                    first_prefix
                } else {
                    rest_prefix
                };
                out.push(assemble(prefix, std::mem::take(&mut current), line));
                used = 0;
            }
            push_fragment(&mut current, span.style, text);
            used += w;
        }
    }
    let prefix = if out.is_empty() {
        first_prefix
    } else {
        rest_prefix
    };
    out.push(assemble(prefix, current, line));
    out
}

/// `line` cut to at most `width` columns, ending in `…` when something was
/// cut: for table cells and one-line summaries that must not wrap.
pub fn truncate_line(line: &Line<'_>, width: u16) -> Line<'static> {
    let width = usize::from(width);
    let mut out = Line {
        style: line.style,
        alignment: line.alignment,
        spans: Vec::new(),
    };
    if line.width() <= width {
        out.spans = line
            .spans
            .iter()
            .map(|span| Span::styled(span.content.to_string(), span.style))
            .collect();
        return out;
    }
    let budget = width.saturating_sub(1);
    let mut used = 0;
    let mut fragments: Vec<(Style, String)> = Vec::new();
    let mut last_style = Style::default();
    'spans: for span in &line.spans {
        last_style = span.style;
        for grapheme in span.content.graphemes(true) {
            let (text, w) = display_grapheme(grapheme);
            if used + w > budget {
                break 'spans;
            }
            push_fragment(&mut fragments, span.style, text);
            used += w;
        }
    }
    if width > 0 {
        let style = fragments.last().map_or(last_style, |(style, _)| *style);
        push_fragment(&mut fragments, style, "…");
    }
    out.spans = fragments
        .into_iter()
        .map(|(style, text)| Span::styled(text, style))
        .collect();
    out
}

/// Display width of `spans` in columns.
pub fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|span| span.content.width()).sum()
}

/// A grapheme as it is printed and its width: controls (a tab or newline
/// that reached a span) print as one space, so the width is never a guess.
fn display_grapheme(grapheme: &str) -> (&str, usize) {
    if grapheme.chars().any(char::is_control) {
        (" ", 1)
    } else {
        (grapheme, grapheme.width())
    }
}

/// Whitespace at which a line may break. No-break spaces are not.
fn is_break_space(grapheme: &str) -> bool {
    grapheme
        .chars()
        .all(|c| c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}'))
}

/// A run of non-space or of space graphemes, with the style of each piece.
struct Token {
    space: bool,
    pieces: Vec<(Style, String)>,
    width: usize,
}

/// Splits a line into alternating word and space tokens; a word may span
/// several styled spans (`**bold**ly` is one word).
fn tokens(line: &Line<'_>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    for span in &line.spans {
        for grapheme in span.content.graphemes(true) {
            let space = is_break_space(grapheme);
            let (text, w) = display_grapheme(grapheme);
            match out.last_mut() {
                Some(token) if token.space == space => {
                    push_fragment(&mut token.pieces, span.style, text);
                    token.width += w;
                }
                _ => out.push(Token {
                    space,
                    pieces: vec![(span.style, text.to_string())],
                    width: w,
                }),
            }
        }
    }
    out
}

/// Appends `text` to the last fragment when it has the same style.
fn push_fragment(fragments: &mut Vec<(Style, String)>, style: Style, text: &str) {
    match fragments.last_mut() {
        Some((last, content)) if *last == style => content.push_str(text),
        _ => fragments.push((style, text.to_string())),
    }
}

fn assemble(
    prefix: &[Span<'static>],
    fragments: Vec<(Style, String)>,
    like: &Line<'_>,
) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = prefix.to_vec();
    spans.extend(
        fragments
            .into_iter()
            .map(|(style, text)| Span::styled(text, style)),
    );
    Line {
        style: like.style,
        alignment: like.alignment,
        spans,
    }
}

/// The greedy line filler behind [`wrap_with_prefix`].
struct Builder<'p> {
    line_style: Style,
    alignment: Option<ratatui::layout::Alignment>,
    first_prefix: &'p [Span<'static>],
    rest_prefix: &'p [Span<'static>],
    first_avail: usize,
    rest_avail: usize,
    out: Vec<Line<'static>>,
    current: Vec<(Style, String)>,
    current_width: usize,
    pending_space: Vec<(Style, String)>,
    pending_space_width: usize,
}

impl Builder<'_> {
    fn avail(&self) -> usize {
        if self.out.is_empty() {
            self.first_avail
        } else {
            self.rest_avail
        }
    }

    fn push(&mut self, token: Token) {
        if token.space {
            if self.out.is_empty() && self.current.is_empty() {
                // Indentation of the first line is kept; it is still
                // whitespace to break at if it alone fills the line.
                self.pending_space.extend(token.pieces);
                self.pending_space_width += token.width;
            } else if !self.current.is_empty() {
                self.pending_space.extend(token.pieces);
                self.pending_space_width += token.width;
            }
            return;
        }
        let needed = self.current_width + self.pending_space_width + token.width;
        if needed <= self.avail() {
            self.take_space();
            for (style, text) in token.pieces {
                push_fragment(&mut self.current, style, &text);
            }
            self.current_width += token.width;
            return;
        }
        if !self.current.is_empty() {
            self.break_line();
        } else if self.out.is_empty() && self.pending_space_width > 0 {
            // Only indentation on the first line: keep what fits of it.
            let room = self.avail();
            if self.pending_space_width + token.width <= room {
                self.take_space();
            } else {
                self.pending_space.clear();
                self.pending_space_width = 0;
            }
        }
        if token.width <= self.avail() - self.current_width {
            for (style, text) in token.pieces {
                push_fragment(&mut self.current, style, &text);
            }
            self.current_width += token.width;
            return;
        }
        // A word longer than a line: break it between graphemes.
        for (style, text) in token.pieces {
            for grapheme in text.graphemes(true) {
                let w = grapheme.width();
                if self.current_width + w > self.avail() && self.current_width > 0 {
                    self.break_line();
                }
                push_fragment(&mut self.current, style, grapheme);
                self.current_width += w;
            }
        }
    }

    fn take_space(&mut self) {
        for (style, text) in std::mem::take(&mut self.pending_space) {
            push_fragment(&mut self.current, style, &text);
        }
        self.current_width += self.pending_space_width;
        self.pending_space_width = 0;
    }

    fn break_line(&mut self) {
        let prefix = if self.out.is_empty() {
            self.first_prefix
        } else {
            self.rest_prefix
        };
        let line = Line {
            style: self.line_style,
            alignment: self.alignment,
            spans: Vec::new(),
        };
        self.out
            .push(assemble(prefix, std::mem::take(&mut self.current), &line));
        self.current_width = 0;
        self.pending_space.clear();
        self.pending_space_width = 0;
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if !self.current.is_empty() || self.out.is_empty() {
            self.break_line();
        }
        self.out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn wraps_at_word_boundaries_and_drops_the_space_at_the_break() {
        let lines = wrap_text("the quick brown fox jumps over", 10, Style::default());
        assert_eq!(texts(&lines), ["the quick", "brown fox", "jumps over"]);
    }

    #[test]
    fn a_word_longer_than_the_width_is_broken() {
        let lines = wrap_text("ab abcdefghijkl cd", 5, Style::default());
        assert_eq!(texts(&lines), ["ab", "abcde", "fghij", "kl cd"]);
    }

    #[test]
    fn wide_characters_count_two_columns_and_never_straddle_the_edge() {
        let lines = wrap_text("日本語のテキスト", 5, Style::default());
        assert_eq!(texts(&lines), ["日本", "語の", "テキ", "スト"]);
        for line in &lines {
            assert!(line.width() <= 5);
        }
    }

    #[test]
    fn combining_marks_stay_with_their_letter() {
        let text = "e\u{301}e\u{301}e\u{301}e\u{301}";
        let lines = wrap_text(text, 2, Style::default());
        assert_eq!(texts(&lines), ["e\u{301}e\u{301}", "e\u{301}e\u{301}"]);
    }

    #[test]
    fn span_styles_survive_wrapping_even_inside_a_word() {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let line = Line::from(vec![
            Span::raw("plain "),
            Span::styled("bold", bold),
            Span::raw("ly said"),
        ]);
        let lines = wrap_line(&line, 8);
        assert_eq!(texts(&lines), ["plain", "boldly", "said"]);
        assert_eq!(lines[1].spans[0].style, bold);
        assert_eq!(lines[1].spans[0].content, "bold");
        assert_eq!(lines[1].spans[1].content, "ly");
    }

    #[test]
    fn the_line_style_and_alignment_are_kept() {
        let line = Line::from("aaa bbb")
            .style(Style::default().fg(Color::Red))
            .centered();
        let lines = wrap_line(&line, 3);
        assert_eq!(lines.len(), 2);
        for out in &lines {
            assert_eq!(out.style.fg, Some(Color::Red));
            assert_eq!(out.alignment, Some(ratatui::layout::Alignment::Center));
        }
    }

    #[test]
    fn prefixes_give_a_hanging_indent() {
        let line = Line::from("one two three four");
        let lines = wrap_with_prefix(&line, 10, &[Span::raw("• ")], &[Span::raw("  ")]);
        assert_eq!(texts(&lines), ["• one two", "  three", "  four"]);
    }

    #[test]
    fn empty_input_gives_one_line_and_newlines_split() {
        assert_eq!(texts(&wrap_text("", 10, Style::default())), [""]);
        assert_eq!(
            texts(&wrap_text("a\n\nb", 10, Style::default())),
            ["a", "", "b"]
        );
        let lines = wrap_with_prefix(&Line::default(), 10, &[Span::raw("│ ")], &[]);
        assert_eq!(texts(&lines), ["│ "]);
    }

    #[test]
    fn indentation_of_the_first_line_is_kept_and_continuations_are_not_indented() {
        let lines = wrap_text("  alpha beta", 8, Style::default());
        assert_eq!(texts(&lines), ["  alpha", "beta"]);
    }

    #[test]
    fn width_zero_is_one_column() {
        let lines = wrap_text("ab", 0, Style::default());
        assert_eq!(texts(&lines), ["a", "b"]);
    }

    #[test]
    fn tabs_and_stray_controls_print_as_spaces() {
        let lines = wrap_text("a\tb", 20, Style::default());
        assert_eq!(texts(&lines), ["a    b"]);
        let lines = wrap_line(&Line::from(Span::raw("x\ny")), 20);
        assert_eq!(texts(&lines), ["x y"]);
    }

    #[test]
    fn hard_wrap_keeps_every_character() {
        let line = Line::from("    let x =  1;");
        let lines = hard_wrap_with_prefix(&line, 6, &[], &[]);
        assert_eq!(texts(&lines), ["    le", "t x = ", " 1;"]);
        let lines = hard_wrap_with_prefix(&Line::from("ab"), 10, &[Span::raw("> ")], &[]);
        assert_eq!(texts(&lines), ["> ab"]);
    }

    #[test]
    fn truncation_ends_in_an_ellipsis_only_when_something_was_cut() {
        assert_eq!(truncate_line(&Line::from("abcdef"), 4).to_string(), "abc…");
        assert_eq!(truncate_line(&Line::from("abcd"), 4).to_string(), "abcd");
        assert_eq!(truncate_line(&Line::from("日本語"), 4).to_string(), "日…");
        assert_eq!(truncate_line(&Line::from("abc"), 0).to_string(), "");
    }
}
