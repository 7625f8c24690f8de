//! Syntax highlighting of code blocks with syntect.
//!
//! syntect's syntax and theme dumps take a noticeable moment to load, so
//! they are loaded once, on the first code block that names a language
//! (never at startup: a session without code never pays for them).
//!
//! Colours: the grammar's scopes are styled by syntect's
//! `base16-ocean.dark` theme, and each of its palette colours is mapped to
//! one of the terminal's 16 ANSI colours (red, green, yellow, blue,
//! magenta, cyan, and bright black for comments); the theme's own
//! foreground and background are dropped, so plain tokens keep the
//! terminal's default colour. The terminal's palette is tuned for its own
//! background, which makes the result readable on dark and light
//! terminals alike, where the theme's RGB values would only suit a dark
//! one. Code in an unknown language gets [`PLAIN_CODE`].

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::highlighting::{
    FontStyle, HighlightIterator, HighlightState, Highlighter, Theme, ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

/// The style of code that is not highlighted (no language, or one syntect
/// does not know), and of inline code in markdown: set apart from prose.
pub const PLAIN_CODE: Style = Style::new().fg(Color::Cyan);

/// The syntect theme whose scope rules pick the colours (see the module
/// documentation for how they reach the terminal).
const THEME: &str = "base16-ocean.dark";

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
static THEME_DATA: OnceLock<Theme> = OnceLock::new();
static HIGHLIGHTER: OnceLock<Highlighter<'static>> = OnceLock::new();

/// Whether syntect's dumps have been loaded: false until the first code
/// block with a language was highlighted (tests check the laziness).
pub fn is_loaded() -> bool {
    SYNTAXES.get().is_some()
}

fn syntaxes() -> &'static SyntaxSet {
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn highlighter() -> &'static Highlighter<'static> {
    HIGHLIGHTER.get_or_init(|| {
        let theme = THEME_DATA.get_or_init(|| {
            ThemeSet::load_defaults()
                .themes
                .remove(THEME)
                .unwrap_or_default()
        });
        Highlighter::new(theme)
    })
}

/// Highlights `code` as `lang`, one output line per input line (lines
/// separated by `\n`; a final newline adds no empty line, so `""` has no
/// line and `"\n"` one empty line). The text is used as it is: sanitise it
/// first.
pub fn highlight(code: &str, lang: &str) -> Vec<Line<'static>> {
    let mut highlighter = CodeHighlighter::new(lang);
    if code.is_empty() {
        return Vec::new();
    }
    let code = code.strip_suffix('\n').unwrap_or(code);
    code.split('\n')
        .map(|line| highlighter.highlight_line(line))
        .collect()
}

/// A highlighter that is fed one line at a time and keeps the grammar's
/// state between lines (a string or comment opened on one line colours the
/// next): a streamed code block is highlighted as its lines arrive, with
/// the same result as highlighting the whole block at once.
#[derive(Clone)]
pub struct CodeHighlighter {
    state: Option<(ParseState, HighlightState)>,
}

impl CodeHighlighter {
    /// A highlighter for `lang` (a fence's info word such as `rust`, `py`,
    /// `sh`; matched by name or file extension, case-insensitively). An
    /// empty or unknown language highlights nothing, and an empty one does
    /// not even load syntect.
    pub fn new(lang: &str) -> Self {
        let state = find_syntax(lang).map(|syntax| {
            let highlight = HighlightState::new(highlighter(), ScopeStack::new());
            (ParseState::new(syntax), highlight)
        });
        CodeHighlighter { state }
    }

    /// Whether this highlighter colours anything (false: every line comes
    /// out in [`PLAIN_CODE`]).
    pub fn is_highlighting(&self) -> bool {
        self.state.is_some()
    }

    /// The next line of the block (without its newline), styled.
    pub fn highlight_line(&mut self, line: &str) -> Line<'static> {
        let Some((parse, highlight)) = &mut self.state else {
            return plain(line);
        };
        let text = format!("{line}\n");
        let ops = match parse.parse_line(&text, syntaxes()) {
            Ok(ops) => ops,
            Err(error) => {
                // A grammar that fails once is not trusted for the rest.
                tracing::debug!(%error, "syntax highlighting failed; showing plain code");
                self.state = None;
                return plain(line);
            }
        };
        let mut spans: Vec<Span<'static>> = Vec::new();
        for (style, piece) in HighlightIterator::new(highlight, &ops, &text, highlighter()) {
            let piece = piece.strip_suffix('\n').unwrap_or(piece);
            if piece.is_empty() {
                continue;
            }
            let style = terminal_style(style);
            match spans.last_mut() {
                Some(last) if last.style == style => last.content.to_mut().push_str(piece),
                _ => spans.push(Span::styled(piece.to_string(), style)),
            }
        }
        Line::from(spans)
    }
}

fn plain(line: &str) -> Line<'static> {
    if line.is_empty() {
        return Line::default();
    }
    Line::from(Span::styled(line.to_string(), PLAIN_CODE))
}

/// The grammar for a fence's language word, loading syntect on first use.
fn find_syntax(lang: &str) -> Option<&'static SyntaxReference> {
    let lang = lang.trim().to_ascii_lowercase();
    if lang.is_empty() {
        return None;
    }
    // Names models use that syntect's default set spells differently or
    // lacks (TypeScript is close enough to JavaScript to colour well).
    let token = match lang.as_str() {
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" => "js",
        "shell" | "zsh" | "console" | "shellsession" | "sh-session" => "sh",
        "jsonc" | "json5" => "json",
        "golang" => "go",
        "py3" | "python3" => "py",
        "c++" => "cpp",
        "objective-c" | "objc" => "m",
        "text" | "txt" | "plain" | "plaintext" | "output" => return None,
        other => other,
    };
    let set = syntaxes();
    let syntax = set.find_syntax_by_token(token)?;
    (syntax.name != "Plain Text").then_some(syntax)
}

/// A syntect style in terminal terms (see the module documentation).
fn terminal_style(style: syntect::highlighting::Style) -> Style {
    let mut out = Style::default();
    if let Some(color) = ansi_color(style.foreground) {
        out = out.fg(color);
    }
    let font = style.font_style;
    if font.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if font.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    if font.contains(FontStyle::UNDERLINE) {
        out = out.add_modifier(Modifier::UNDERLINED);
    }
    out
}

/// base16-ocean's palette and the ANSI colour each entry stands for;
/// `None` keeps the terminal's default foreground.
/// An RGB colour of the theme's palette and the ANSI colour it becomes.
type PaletteEntry = ((u8, u8, u8), Option<Color>);

const PALETTE: &[PaletteEntry] = &[
    ((0x2b, 0x30, 0x3b), None),                  // base00 background
    ((0x34, 0x3d, 0x46), None),                  // base01
    ((0x4f, 0x5b, 0x66), Some(Color::DarkGray)), // base02
    ((0x65, 0x73, 0x7e), Some(Color::DarkGray)), // base03 comments
    ((0xa7, 0xad, 0xba), None),                  // base04
    ((0xc0, 0xc5, 0xce), None),                  // base05 foreground
    ((0xdf, 0xe1, 0xe8), None),                  // base06
    ((0xef, 0xf1, 0xf5), None),                  // base07
    ((0xbf, 0x61, 0x6a), Some(Color::Red)),      // base08 variables, tags
    ((0xd0, 0x87, 0x70), Some(Color::LightRed)), // base09 numbers, constants
    ((0xeb, 0xcb, 0x8b), Some(Color::Yellow)),   // base0A types
    ((0xa3, 0xbe, 0x8c), Some(Color::Green)),    // base0B strings
    ((0x96, 0xb5, 0xb4), Some(Color::Cyan)),     // base0C escapes, regexes
    ((0x8f, 0xa1, 0xb3), Some(Color::Blue)),     // base0D functions
    ((0xb4, 0x8e, 0xad), Some(Color::Magenta)),  // base0E keywords
    ((0xab, 0x79, 0x67), Some(Color::Red)),      // base0F deprecated
];

/// The ANSI colour of the palette entry nearest to `color`.
fn ansi_color(color: syntect::highlighting::Color) -> Option<Color> {
    let distance = |(r, g, b): (u8, u8, u8)| {
        let d = |x: u8, y: u8| (i32::from(x) - i32::from(y)).pow(2);
        d(r, color.r) + d(g, color.g) + d(b, color.b)
    };
    PALETTE
        .iter()
        .min_by_key(|(rgb, _)| distance(*rgb))
        .and_then(|(_, ansi)| *ansi)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn colours(line: &Line<'_>) -> Vec<(String, Option<Color>)> {
        line.spans
            .iter()
            .map(|span| (span.content.to_string(), span.style.fg))
            .collect()
    }

    #[test]
    fn rust_keywords_strings_and_comments_get_ansi_colours() {
        let lines = highlight("fn main() {\n    let s = \"hi\"; // note\n}\n", "rust");
        assert_eq!(lines.len(), 3);
        let first = colours(&lines[0]);
        assert!(
            first.contains(&("fn".to_string(), Some(Color::Magenta))),
            "{first:?}"
        );
        let second = colours(&lines[1]);
        assert!(
            second
                .iter()
                .any(|(text, fg)| text.contains("hi") && *fg == Some(Color::Green)),
            "{second:?}"
        );
        assert!(
            second
                .iter()
                .any(|(text, fg)| text.contains("note") && *fg == Some(Color::DarkGray)),
            "{second:?}"
        );
        for line in &lines {
            for span in &line.spans {
                assert!(!matches!(span.style.fg, Some(Color::Rgb(..))));
                assert!(!span.content.contains('\n'));
            }
        }
        assert_eq!(lines[1].to_string(), "    let s = \"hi\"; // note");
    }

    #[test]
    fn state_carries_across_lines() {
        let mut highlighter = CodeHighlighter::new("rust");
        highlighter.highlight_line("/* a comment");
        let line = highlighter.highlight_line("still comment */");
        assert_eq!(line.spans[0].style.fg, Some(Color::DarkGray));
        // And the line-by-line result equals the whole-block result.
        let code = "let a = r#\"x\ny\"#;\nlet b = 1;";
        let whole = highlight(code, "rs");
        let mut stream = CodeHighlighter::new("rs");
        let lines: Vec<_> = code.split('\n').map(|l| stream.highlight_line(l)).collect();
        assert_eq!(whole, lines);
    }

    #[test]
    fn unknown_and_empty_languages_are_plain_code() {
        for lang in ["", "no-such-language", "text"] {
            let lines = highlight("a = 1\n\nb", lang);
            assert_eq!(lines.len(), 3);
            assert_eq!(lines[0].spans[0].style, PLAIN_CODE);
            assert_eq!(lines[1].to_string(), "");
            assert!(!CodeHighlighter::new(lang).is_highlighting());
        }
        assert!(highlight("", "rust").is_empty());
        assert_eq!(highlight("x\n", "").len(), 1);
    }

    #[test]
    fn aliases_find_a_grammar() {
        for lang in [
            "py", "Python", "ts", "bash", "shell", "json", "C++", "go", "yaml",
        ] {
            assert!(CodeHighlighter::new(lang).is_highlighting(), "{lang}");
        }
    }

    #[test]
    fn palette_maps_to_ansi_and_the_theme_foreground_to_the_default() {
        let c = |r, g, b| syntect::highlighting::Color { r, g, b, a: 0xff };
        assert_eq!(ansi_color(c(0xc0, 0xc5, 0xce)), None);
        assert_eq!(ansi_color(c(0xb4, 0x8e, 0xad)), Some(Color::Magenta));
        assert_eq!(ansi_color(c(0xa0, 0xc0, 0x80)), Some(Color::Green));
    }
}
