//! Drawing the composer: a rounded box with the `› ` prompt marker, the
//! text wrapped inside it (scrolled to keep the cursor in view past
//! [`MAX_TEXT_ROWS`] rows), the hint when empty, the Ctrl-R search line in
//! place of the text, and the completion popup under the box.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, BorderType, Widget};
use unicode_segmentation::UnicodeSegmentation;

use super::Composer;
use super::layout::{self, Row};

/// The most text rows the box grows to; longer text scrolls inside it.
pub const MAX_TEXT_ROWS: u16 = 10;

/// Shown in an empty composer.
pub const HINT: &str = "Ask herald to do something · / for commands · @ for files";

const PROMPT: &str = "› ";
const PROMPT_WIDTH: u16 = 2;
/// Columns taken left and right of the text: the borders and the prompt.
const CHROME_WIDTH: u16 = 2 + PROMPT_WIDTH;

/// Columns the text wraps at in a composer `width` columns wide.
fn text_width(width: u16) -> u16 {
    width.saturating_sub(CHROME_WIDTH).max(1)
}

/// What the box shows: the text or the search line, its rows and styles.
struct View {
    text: String,
    rows: Vec<Row>,
    cursor: usize,
    /// Styled byte ranges of `text` (the rest is unstyled).
    styles: Vec<(Range<usize>, Style)>,
}

/// Where each part goes in a given area.
struct Geometry {
    view: View,
    block: Rect,
    text: Rect,
    popup: Rect,
    scroll: usize,
    cursor: Position,
}

impl Composer {
    /// Rows the composer wants at `width` columns: the wrapped text (at
    /// most [`MAX_TEXT_ROWS`]), the box's borders and the popup.
    pub fn desired_height(&self, width: u16) -> u16 {
        let wrap = text_width(width);
        self.width.set(wrap);
        let rows = u16::try_from(self.view(wrap).rows.len()).unwrap_or(u16::MAX);
        let popup = self.popup.as_ref().map_or(0, |p| p.height());
        rows.min(MAX_TEXT_ROWS) + 2 + popup
    }

    /// Where the terminal's cursor goes when the composer is drawn in
    /// `area`; `None` when the area is too small to show it.
    pub fn cursor_position(&self, area: Rect) -> Option<Position> {
        self.geometry(area).map(|g| g.cursor)
    }

    /// Draws the composer into `area` (of [`Composer::desired_height`]
    /// rows; a smaller area drops the popup first, then text rows).
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let Some(g) = self.geometry(area) else {
            return;
        };
        self.width.set(g.text.width);
        self.scroll.set(g.scroll);
        Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(Style::new().fg(Color::DarkGray))
            .render(g.block, buf);
        if g.scroll == 0 {
            buf.set_string(
                g.text.x - PROMPT_WIDTH,
                g.text.y,
                PROMPT,
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            );
        }
        if self.textarea.is_empty() && self.search.is_none() {
            buf.set_stringn(
                g.text.x,
                g.text.y,
                HINT,
                usize::from(g.text.width),
                Style::new().fg(Color::DarkGray),
            );
        } else {
            draw_rows(buf, g.text, &g.view, g.scroll);
        }
        if let Some(popup) = &self.popup {
            popup.render(g.popup, buf);
        }
    }

    fn geometry(&self, area: Rect) -> Option<Geometry> {
        if area.width <= CHROME_WIDTH || area.height < 3 {
            return None;
        }
        let width = text_width(area.width);
        let view = self.view(width);
        let rows = view.rows.len();
        let shown = u16::try_from(rows)
            .unwrap_or(u16::MAX)
            .min(MAX_TEXT_ROWS)
            .min(area.height - 2)
            .max(1);
        let block = Rect::new(area.x, area.y, area.width, shown + 2);
        let text = Rect::new(area.x + 1 + PROMPT_WIDTH, area.y + 1, width, shown);
        let popup_height = area.bottom().saturating_sub(block.bottom());
        let popup = Rect::new(area.x + 1, block.bottom(), area.width - 2, popup_height);
        let (row, col) = layout::locate(&view.rows, &view.text, view.cursor);
        let shown = usize::from(shown);
        let lowest = (row + 1).saturating_sub(shown);
        let highest = row.min(rows.saturating_sub(shown));
        let scroll = self.scroll.get().max(lowest).min(highest);
        let cursor = Position::new(
            text.x + u16::try_from(col).unwrap_or(u16::MAX).min(width - 1),
            text.y + u16::try_from(row - scroll).unwrap_or(0),
        );
        Some(Geometry {
            view,
            block,
            text,
            popup,
            scroll,
            cursor,
        })
    }

    /// The box's content at `width` columns.
    fn view(&self, width: u16) -> View {
        let width = usize::from(width);
        let Some(search) = &self.search else {
            let text = self.textarea.text().to_owned();
            let style = Style::new().fg(Color::Cyan);
            let styles = self
                .textarea
                .elements()
                .iter()
                .map(|e| (e.range.clone(), style))
                .collect();
            return View {
                rows: layout::wrap(&text, width),
                cursor: self.textarea.cursor(),
                text,
                styles,
            };
        };
        let label = if search.failed {
            "(failed reverse-i-search) '"
        } else {
            "(reverse-i-search) '"
        };
        let mut text = String::from(label);
        let dim = Style::new().fg(Color::DarkGray);
        let mut styles = vec![(0..text.len(), dim)];
        let query_start = text.len();
        text.push_str(&herald_protocol::one_line(&search.query));
        let cursor = text.len();
        styles.push((
            query_start..cursor,
            Style::new().add_modifier(Modifier::BOLD),
        ));
        text.push_str("': ");
        styles.push((cursor..text.len(), dim));
        if let Some(entry) = search.found.and_then(|i| self.history.entries().get(i)) {
            let (before, hit, after) = match search.match_range(entry) {
                Some(r) => (&entry[..r.start], &entry[r.clone()], &entry[r.end..]),
                None => (entry.as_str(), "", ""),
            };
            text.push_str(&flatten(before));
            let start = text.len();
            text.push_str(&flatten(hit));
            styles.push((
                start..text.len(),
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ));
            text.push_str(&flatten(after));
        }
        View {
            rows: layout::wrap(&text, width),
            text,
            cursor,
            styles,
        }
    }
}

/// A history entry on the one search line: line breaks shown as `↵`.
fn flatten(text: &str) -> String {
    herald_protocol::terminal_safe(text).replace('\n', "↵")
}

/// Draws the rows of `view` from `scroll` on into `area`, tabs as spaces
/// and any control character as `�`.
fn draw_rows(buf: &mut Buffer, area: Rect, view: &View, scroll: usize) {
    let style_at = |pos: usize| {
        view.styles
            .iter()
            .rev()
            .find(|(range, _)| range.contains(&pos))
            .map_or(Style::new(), |(_, style)| *style)
    };
    for (i, row) in view
        .rows
        .iter()
        .skip(scroll)
        .take(usize::from(area.height))
        .enumerate()
    {
        let y = area.y + u16::try_from(i).unwrap_or(0);
        let mut x = area.x;
        for (offset, grapheme) in view.text[row.start..row.end].grapheme_indices(true) {
            let width = u16::try_from(layout::grapheme_width(grapheme)).unwrap_or(0);
            if x + width > area.right() {
                break;
            }
            let style = style_at(row.start + offset);
            if grapheme == "\t" {
                buf.set_stringn(x, y, "    ", usize::from(width), style);
            } else if grapheme.chars().any(char::is_control) {
                buf.set_stringn(x, y, "\u{fffd}", 1, style);
            } else {
                buf.set_stringn(x, y, grapheme, usize::from(width), style);
            }
            x += width;
        }
    }
}

impl Widget for &Composer {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Composer::render(self, area, buf);
    }
}
