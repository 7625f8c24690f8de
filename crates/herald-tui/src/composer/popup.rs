//! The completion popups under the composer: slash commands while the input
//! is `/name`, and paths from the file index while the word under the
//! cursor starts with `@`. Which popup is open follows from the text; the
//! selection is the only state of its own.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use crate::file_finder::FileIndex;
use crate::slash::{self, SlashCommand};

use super::layout::text_width;
use super::textarea::TextArea;

/// At most this many rows are shown (the list scrolls past them).
pub(crate) const MAX_ROWS: usize = 8;

/// What a popup offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Items {
    /// Slash commands matching the typed prefix.
    Commands(Vec<SlashCommand>),
    /// Paths for the `@` word at `token` (its byte range, `@` included).
    Paths {
        token: Range<usize>,
        paths: Vec<String>,
    },
}

impl Items {
    /// How many rows there are to choose from.
    pub fn len(&self) -> usize {
        match self {
            Items::Commands(commands) => commands.len(),
            Items::Paths { paths, .. } => paths.len(),
        }
    }
}

/// An open popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Popup {
    /// What is offered.
    pub items: Items,
    /// The row ↑/↓ moved to; Tab and Enter apply it.
    pub selected: usize,
}

impl Popup {
    /// The popup the text asks for, if any: the slash list when the whole
    /// input is `/` and a name without spaces, the path list when the word
    /// at the cursor starts with `@` and the index has matches.
    /// `extra` are the session's own commands (its MCP prompts).
    pub fn for_text(
        area: &TextArea,
        index: Option<&FileIndex>,
        extra: &[SlashCommand],
    ) -> Option<Items> {
        let text = area.text();
        if let Some(prefix) = text.strip_prefix('/')
            && !text.contains(char::is_whitespace)
            && area.elements().is_empty()
        {
            let commands = slash::matching(prefix, extra);
            return (!commands.is_empty()).then_some(Items::Commands(commands));
        }
        let index = index?;
        let token = at_word(area)?;
        let paths = index.search(&text[token.start + 1..token.end], MAX_ROWS);
        (!paths.is_empty()).then_some(Items::Paths { token, paths })
    }

    /// ↑: the row above, wrapping to the last.
    pub fn select_previous(&mut self) {
        let len = self.items.len().max(1);
        self.selected = (self.selected + len - 1) % len;
    }

    /// ↓: the row below, wrapping to the first.
    pub fn select_next(&mut self) {
        self.selected = (self.selected + 1) % self.items.len().max(1);
    }

    /// Rows the popup takes.
    pub fn height(&self) -> u16 {
        u16::try_from(self.items.len().min(MAX_ROWS)).unwrap_or(0)
    }

    /// Draws the rows into `area`, the selected one marked and highlighted,
    /// scrolled so it is visible.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let visible = usize::from(area.height).min(MAX_ROWS);
        if visible == 0 || area.width < 4 {
            return;
        }
        let first = (self.selected + 1).saturating_sub(visible);
        let rows = self.rows();
        for (i, (left, right)) in rows.iter().enumerate().skip(first).take(visible) {
            let y = area.y + u16::try_from(i - first).unwrap_or(0);
            let selected = i == self.selected;
            let (marker, style) = if selected {
                (
                    "› ",
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                )
            } else {
                ("  ", Style::new())
            };
            let line_style = if selected {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new()
            };
            buf.set_style(Rect::new(area.x, y, area.width, 1), line_style);
            let width = usize::from(area.width);
            let (x, _) = buf.set_stringn(area.x, y, marker, width, style);
            let used = usize::from(x - area.x);
            let (x, _) = buf.set_stringn(x, y, left, width.saturating_sub(used), style);
            let used = usize::from(x - area.x);
            if !right.is_empty() && used + 2 < width {
                buf.set_stringn(
                    x + 2,
                    y,
                    right,
                    width - used - 2,
                    Style::new().fg(Color::DarkGray),
                );
            }
        }
    }

    /// Each row as (what is completed, a description), the left parts
    /// padded to one column.
    fn rows(&self) -> Vec<(String, String)> {
        match &self.items {
            Items::Commands(commands) => {
                let left: Vec<String> = commands
                    .iter()
                    .map(|c| match c.args.as_ref() {
                        "" => format!("/{}", c.name),
                        args => format!("/{} {args}", c.name),
                    })
                    .collect();
                let width = left.iter().map(|l| text_width(l)).max().unwrap_or(0);
                left.into_iter()
                    .zip(commands)
                    .map(|(l, c)| {
                        let pad = width - text_width(&l);
                        (format!("{l}{}", " ".repeat(pad)), c.description.to_string())
                    })
                    .collect()
            }
            Items::Paths { paths, .. } => paths
                .iter()
                .map(|p| (herald_protocol::one_line(p), String::new()))
                .collect(),
        }
    }
}

/// The byte range of the whitespace-delimited word at the cursor when it
/// starts with `@` and holds no element.
fn at_word(area: &TextArea) -> Option<Range<usize>> {
    let text = area.text();
    let cursor = area.cursor();
    let start = text[..cursor]
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[cursor..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| cursor + i);
    let word = &text[start..end];
    let touches_element = area
        .elements()
        .iter()
        .any(|e| e.range.start < end && start < e.range.end);
    (word.starts_with('@') && !touches_element).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(text: &str, cursor: usize) -> TextArea {
        let mut area = TextArea::default();
        area.set_text(text);
        area.set_cursor(cursor);
        area
    }

    #[test]
    fn the_at_word_is_found_around_the_cursor() {
        assert_eq!(at_word(&area("see @src/ma now", 11)), Some(4..11));
        assert_eq!(at_word(&area("see @src/ma now", 5)), Some(4..11));
        assert_eq!(at_word(&area("see @src/ma now", 3)), None);
        assert_eq!(at_word(&area("mail me@host", 12)), None);
        assert_eq!(at_word(&area("@", 1)), Some(0..1));
    }

    #[test]
    fn the_slash_list_follows_the_typed_prefix() {
        let items = Popup::for_text(&area("/m", 2), None, &[]);
        let Some(Items::Commands(commands)) = items else {
            panic!("{items:?}")
        };
        let names: Vec<_> = commands.iter().map(|c| c.name.as_ref()).collect();
        assert_eq!(names, ["model", "memory", "message"]);
        assert_eq!(Popup::for_text(&area("/model x", 8), None, &[]), None);
        assert_eq!(Popup::for_text(&area("/zz", 3), None, &[]), None);
        assert_eq!(Popup::for_text(&area("a /m", 4), None, &[]), None);
        // The session's MCP prompts are offered after the built-in ones.
        let prompt = herald_core::runtime::McpPrompt {
            server: "ev".into(),
            name: "args-prompt".into(),
            description: "weather".into(),
            arguments: vec![],
        };
        let extra = [SlashCommand::for_prompt(&prompt)];
        let Some(Items::Commands(commands)) = Popup::for_text(&area("/e", 2), None, &extra) else {
            panic!("no popup")
        };
        let names: Vec<_> = commands.iter().map(|c| c.name.as_ref()).collect();
        assert_eq!(names, ["exit", "ev:args-prompt"]);
    }

    #[test]
    fn selection_wraps_around() {
        let mut popup = Popup {
            items: Items::Commands(slash::matching("m", &[])),
            selected: 0,
        };
        popup.select_previous();
        assert_eq!(popup.selected, 2);
        popup.select_next();
        assert_eq!(popup.selected, 0);
    }
}
