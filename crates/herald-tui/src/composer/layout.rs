//! Where the composer's text goes on screen: soft-wrapping at the box width
//! (at spaces when it can, inside a word when it must) and the mapping
//! between byte offsets and (row, column), for drawing, for the terminal
//! cursor and for ↑/↓ over wrapped rows.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Columns a tab takes (the composer draws it as spaces: a real tab would
/// move the terminal's cursor on its own).
pub(crate) const TAB_WIDTH: usize = 4;

/// One screen row of text: the byte range `start..end` of the text it shows
/// (never including a `\n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    /// Byte offset of the first grapheme shown.
    pub start: usize,
    /// Byte offset just past the last grapheme shown.
    pub end: usize,
    /// The last row of its line (the next row starts after a `\n`, or
    /// there is none); otherwise the next row continues at `end`.
    pub ends_line: bool,
}

/// Display columns of one grapheme.
pub(crate) fn grapheme_width(grapheme: &str) -> usize {
    if grapheme == "\t" {
        TAB_WIDTH
    } else {
        grapheme.width()
    }
}

/// Display columns of `text` (no newlines expected).
pub(crate) fn text_width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

/// Splits `text` into rows of at most `width` columns. A row breaks after
/// the last space that fits, or inside a word longer than the row; a space
/// that would overflow starts the next row. The last row of a line is never
/// full, so a cursor after its end still fits on it: a line that exactly
/// fills its last row gets an empty row after it.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<Row> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut start = 0;
    for line in text.split('\n') {
        wrap_line(text, start, start + line.len(), width, &mut rows);
        start += line.len() + 1;
    }
    rows
}

fn wrap_line(text: &str, start: usize, end: usize, width: usize, rows: &mut Vec<Row>) {
    let mut row_start = start;
    let mut row_width = 0;
    // The position just after the last space of the current row.
    let mut last_break: Option<usize> = None;
    for (offset, grapheme) in text[start..end].grapheme_indices(true) {
        let pos = start + offset;
        let w = grapheme_width(grapheme);
        let space = grapheme.chars().all(char::is_whitespace);
        while row_width + w > width && pos > row_start {
            let at = match last_break {
                Some(at) if !space && at > row_start => at,
                _ => pos,
            };
            rows.push(Row {
                start: row_start,
                end: at,
                ends_line: false,
            });
            row_start = at;
            row_width = text_width(&text[at..pos]);
            last_break = None;
        }
        row_width += w;
        if space {
            last_break = Some(pos + grapheme.len());
        }
    }
    if row_width >= width && row_start < end {
        rows.push(Row {
            start: row_start,
            end,
            ends_line: false,
        });
        row_start = end;
    }
    rows.push(Row {
        start: row_start,
        end,
        ends_line: true,
    });
}

/// The (row, column) where a cursor at byte `pos` is drawn: on the last row
/// that contains it, so the end of a wrapped row shows as the start of the
/// next one.
pub(crate) fn locate(rows: &[Row], text: &str, pos: usize) -> (usize, usize) {
    let row = rows
        .iter()
        .rposition(|r| r.start <= pos && pos <= r.end)
        .unwrap_or(0);
    let col = rows
        .get(row)
        .and_then(|r| text.get(r.start..pos))
        .map_or(0, text_width);
    (row, col)
}

/// The byte position on `row` closest to column `col` without passing it
/// (the start of the grapheme under that column). On a row that continues
/// on the next one, its end is not a choice (it is drawn on the next row).
pub(crate) fn position_at(text: &str, row: Row, col: usize) -> usize {
    let mut x = 0;
    for (offset, grapheme) in text[row.start..row.end].grapheme_indices(true) {
        let w = grapheme_width(grapheme);
        if x + w > col {
            return row.start + offset;
        }
        x += w;
    }
    if row.ends_line {
        row.end
    } else {
        text[row.start..row.end]
            .grapheme_indices(true)
            .next_back()
            .map_or(row.start, |(offset, _)| row.start + offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str, width: usize) -> Vec<&str> {
        wrap(text, width)
            .iter()
            .map(|r| &text[r.start..r.end])
            .collect()
    }

    #[test]
    fn lines_wrap_after_spaces_and_inside_long_words() {
        assert_eq!(shown("hello big world", 10), ["hello big ", "world"]);
        assert_eq!(shown("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
        assert_eq!(shown("one\n\ntwo", 10), ["one", "", "two"]);
        assert_eq!(shown("", 10), [""]);
    }

    #[test]
    fn a_full_last_row_is_followed_by_an_empty_row_for_the_cursor() {
        assert_eq!(shown("abcde", 5), ["abcde", ""]);
        assert_eq!(shown("abcde\nx", 5), ["abcde", "", "x"]);
        assert_eq!(locate(&wrap("abcde", 5), "abcde", 5), (1, 0));
    }

    #[test]
    fn a_space_that_overflows_starts_the_next_row() {
        assert_eq!(shown("hello world and", 11), ["hello world", " and"]);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        // Each ideograph is 2 columns wide: 2 fit in 5 columns.
        assert_eq!(shown("日本語です", 5), ["日本", "語で", "す"]);
        let rows = wrap("日本語です", 5);
        assert_eq!(locate(&rows, "日本語です", "日本語".len()), (1, 2));
        assert_eq!(position_at("日本語です", rows[1], 3), "日本語".len());
    }

    #[test]
    fn the_end_of_a_wrapped_row_is_drawn_at_the_start_of_the_next() {
        let text = "abcdefgh";
        let rows = wrap(text, 5);
        assert_eq!(locate(&rows, text, 5), (1, 0));
        assert_eq!(locate(&rows, text, 4), (0, 4));
        // Column 9 on the first (continued) row stops on its last grapheme.
        assert_eq!(position_at(text, rows[0], 9), 4);
        assert_eq!(position_at(text, rows[1], 9), 8);
    }

    #[test]
    fn tabs_are_four_columns() {
        assert_eq!(text_width("\tx"), 5);
        assert_eq!(shown("a\tb\tc", 6), ["a\tb", "\tc"]);
    }
}
