//! The editable text of the composer: the string, a cursor (a byte offset,
//! always on a grapheme boundary and never inside an element), atomic
//! elements (collapsed pastes the cursor skips over and Backspace deletes
//! whole), and the kill buffer of Ctrl-W/Ctrl-U/Ctrl-K for Ctrl-Y.
//!
//! Every change goes through [`TextArea::replace_range`], which widens the
//! range to whole elements and moves the later elements along, so no edit
//! can split a placeholder.

use std::ops::Range;

use unicode_segmentation::GraphemeCursor;

use super::layout;

/// A span of the text that stands for something else and is edited as one
/// unit: a collapsed paste, shown as its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Element {
    /// Where its label sits in the text.
    pub range: Range<usize>,
    /// What the span stands for (the pasted text), put in its place on
    /// submit.
    pub payload: String,
}

/// Text and elements taken out by a kill command, for Ctrl-Y.
#[derive(Debug, Clone, Default)]
struct Killed {
    text: String,
    /// Elements inside `text`, ranges relative to it.
    elements: Vec<Element>,
}

/// The text, cursor and elements, saved while browsing history or searching
/// and put back when the user returns to the draft.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    text: String,
    cursor: usize,
    elements: Vec<Element>,
}

/// The composer's buffer.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextArea {
    text: String,
    cursor: usize,
    /// Sorted by start, never overlapping.
    elements: Vec<Element>,
    killed: Option<Killed>,
    /// The column ↑/↓ aim for, kept over a run of vertical moves so passing a
    /// short row does not pull the cursor left for good.
    preferred_col: Option<usize>,
    /// Counts changes of the text (not of the cursor).
    revision: u64,
}

impl TextArea {
    /// The text as shown (elements as their labels).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor, a byte offset into [`TextArea::text`].
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The collapsed pastes, in text order.
    pub fn elements(&self) -> &[Element] {
        &self.elements
    }

    /// Changes whenever the text changes.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Whether there is no text at all.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text with every element replaced by its payload: what is sent.
    pub fn expanded(&self) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut at = 0;
        for element in &self.elements {
            out.push_str(&self.text[at..element.range.start]);
            out.push_str(&element.payload);
            at = element.range.end;
        }
        out.push_str(&self.text[at..]);
        out
    }

    /// The text, cursor and elements, to put back later.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            text: self.text.clone(),
            cursor: self.cursor,
            elements: self.elements.clone(),
        }
    }

    /// Puts back what [`TextArea::snapshot`] saved.
    pub fn restore(&mut self, snapshot: Snapshot) {
        self.text = snapshot.text;
        self.elements = snapshot.elements;
        self.cursor = snapshot.cursor.min(self.text.len());
        self.preferred_col = None;
        self.revision += 1;
    }

    /// Replaces everything with plain `text`, the cursor at its end.
    pub fn set_text(&mut self, text: &str) {
        self.replace_range(0..self.text.len(), text);
        self.elements.clear();
    }

    /// Puts the cursor at `pos`, moved back to a character boundary and
    /// out of any element (to its start).
    pub fn set_cursor(&mut self, pos: usize) {
        let mut pos = pos.min(self.text.len());
        while !self.text.is_char_boundary(pos) {
            pos -= 1;
        }
        if let Some(element) = self.element_around(pos) {
            pos = element.range.start;
        }
        self.cursor = pos;
        self.preferred_col = None;
    }

    /// The element `pos` is strictly inside of.
    fn element_around(&self, pos: usize) -> Option<&Element> {
        self.elements
            .iter()
            .find(|e| e.range.start < pos && pos < e.range.end)
    }

    /// `range` grown to cover every element it touches (an empty range:
    /// the element it falls inside of).
    fn widen(&self, mut range: Range<usize>) -> Range<usize> {
        for e in &self.elements {
            let touches = if range.is_empty() {
                e.range.start < range.start && range.start < e.range.end
            } else {
                e.range.start < range.end && range.start < e.range.end
            };
            if touches {
                range.start = range.start.min(e.range.start);
                range.end = range.end.max(e.range.end);
            }
        }
        range
    }

    /// The one edit primitive: replaces `range` (widened to whole elements)
    /// with `with`, leaving the cursor after the inserted text.
    pub fn replace_range(&mut self, range: Range<usize>, with: &str) {
        let range = self.widen(range.start.min(self.text.len())..range.end.min(self.text.len()));
        let removed = range.len();
        if !range.is_empty() {
            self.elements
                .retain(|e| !(range.start <= e.range.start && e.range.end <= range.end));
        }
        for e in &mut self.elements {
            if e.range.start >= range.end {
                e.range.start = e.range.start - removed + with.len();
                e.range.end = e.range.end - removed + with.len();
            }
        }
        self.text.replace_range(range.clone(), with);
        self.cursor = range.start + with.len();
        self.preferred_col = None;
        self.revision += 1;
    }

    /// Inserts `text` at the cursor.
    pub fn insert_str(&mut self, text: &str) {
        self.replace_range(self.cursor..self.cursor, text);
    }

    /// Inserts `label` at the cursor as one element standing for `payload`.
    pub fn insert_element(&mut self, label: &str, payload: String) {
        let at = self.cursor;
        self.insert_str(label);
        self.add_element(at..at + label.len(), payload);
    }

    fn add_element(&mut self, range: Range<usize>, payload: String) {
        let index = self
            .elements
            .partition_point(|e| e.range.start < range.start);
        self.elements.insert(index, Element { range, payload });
    }

    // ----- motion -------------------------------------------------------

    fn prev_boundary(&self, pos: usize) -> usize {
        if let Some(e) = self.elements.iter().find(|e| e.range.end == pos) {
            return e.range.start;
        }
        let mut cursor = GraphemeCursor::new(pos, self.text.len(), true);
        match cursor.prev_boundary(&self.text, 0) {
            Ok(Some(at)) => at,
            _ => self.text[..pos].char_indices().last().map_or(0, |(i, _)| i),
        }
    }

    fn next_boundary(&self, pos: usize) -> usize {
        if let Some(e) = self.elements.iter().find(|e| e.range.start == pos) {
            return e.range.end;
        }
        let mut cursor = GraphemeCursor::new(pos, self.text.len(), true);
        match cursor.next_boundary(&self.text, 0) {
            Ok(Some(at)) => at,
            _ => self.text[pos..]
                .chars()
                .next()
                .map_or(pos, |c| pos + c.len_utf8()),
        }
    }

    /// ←: one grapheme (or element) back.
    pub fn move_left(&mut self) {
        let pos = self.prev_boundary(self.cursor);
        self.set_cursor(pos);
    }

    /// →: one grapheme (or element) on.
    pub fn move_right(&mut self) {
        let pos = self.next_boundary(self.cursor);
        self.cursor = pos;
        self.preferred_col = None;
    }

    /// Start of the (hard) line the cursor is on.
    pub fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    /// End of the (hard) line the cursor is on.
    pub fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Home / Ctrl-A.
    pub fn move_line_start(&mut self) {
        self.set_cursor(self.line_start());
    }

    /// End / Ctrl-E.
    pub fn move_line_end(&mut self) {
        self.set_cursor(self.line_end());
    }

    /// Where readline's Alt-B goes: back over non-word characters, then
    /// over a word (letters, digits, `_`).
    fn word_start_before(&self, pos: usize) -> usize {
        let before = &self.text[..pos];
        let mut chars = before.char_indices().rev().peekable();
        while chars.next_if(|(_, c)| !is_word_char(*c)).is_some() {}
        while chars.next_if(|(_, c)| is_word_char(*c)).is_some() {}
        let at = chars.peek().map_or(0, |(i, c)| i + c.len_utf8());
        self.element_around(at).map_or(at, |e| e.range.start)
    }

    /// Where readline's Alt-F goes: over non-word characters, then to the
    /// end of the word.
    fn word_end_after(&self, pos: usize) -> usize {
        let after = &self.text[pos..];
        let mut chars = after.char_indices().peekable();
        while chars.next_if(|(_, c)| !is_word_char(*c)).is_some() {}
        while chars.next_if(|(_, c)| is_word_char(*c)).is_some() {}
        let at = chars.peek().map_or(self.text.len(), |(i, _)| pos + i);
        self.element_around(at).map_or(at, |e| e.range.end)
    }

    /// Alt-B / Ctrl-←.
    pub fn move_word_left(&mut self) {
        self.set_cursor(self.word_start_before(self.cursor));
    }

    /// Alt-F / Ctrl-→.
    pub fn move_word_right(&mut self) {
        self.cursor = self.word_end_after(self.cursor);
        self.preferred_col = None;
    }

    /// Moves one screen row up (`down == false`) or down with the text
    /// wrapped at `width`, keeping the column. `false` when there is no
    /// such row (the cursor stays).
    pub fn move_vertical(&mut self, width: usize, down: bool) -> bool {
        let rows = layout::wrap(&self.text, width);
        let (row, col) = layout::locate(&rows, &self.text, self.cursor);
        let target = if down {
            row + 1
        } else {
            match row.checked_sub(1) {
                Some(target) => target,
                None => return false,
            }
        };
        let Some(&target_row) = rows.get(target) else {
            return false;
        };
        let col = self.preferred_col.unwrap_or(col);
        let pos = layout::position_at(&self.text, target_row, col);
        self.set_cursor(pos);
        self.preferred_col = Some(col);
        true
    }

    // ----- deletion -----------------------------------------------------

    /// Backspace: the grapheme (or whole element) before the cursor.
    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            let start = self.prev_boundary(self.cursor);
            self.replace_range(start..self.cursor, "");
        }
    }

    /// Delete: the grapheme (or whole element) after the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            let end = self.next_boundary(self.cursor);
            self.replace_range(self.cursor..end, "");
        }
    }

    /// Removes `range` (widened to whole elements) into the kill buffer.
    fn kill(&mut self, range: Range<usize>) {
        let range = self.widen(range);
        if range.is_empty() {
            return;
        }
        let elements = self
            .elements
            .iter()
            .filter(|e| range.start <= e.range.start && e.range.end <= range.end)
            .map(|e| Element {
                range: e.range.start - range.start..e.range.end - range.start,
                payload: e.payload.clone(),
            })
            .collect();
        self.killed = Some(Killed {
            text: self.text[range.clone()].to_owned(),
            elements,
        });
        self.replace_range(range, "");
    }

    /// Alt-Backspace / Alt-D's mirror: the word before the cursor.
    pub fn kill_word_back(&mut self) {
        self.kill(self.word_start_before(self.cursor)..self.cursor);
    }

    /// Alt-D: to the end of the word after the cursor.
    pub fn kill_word_forward(&mut self) {
        self.kill(self.cursor..self.word_end_after(self.cursor));
    }

    /// Ctrl-W (unix-word-rubout): back over spaces, then to the previous
    /// space, so `src/main.rs` goes as one.
    pub fn kill_space_word_back(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(char::is_whitespace);
        let start = trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        self.kill(start..self.cursor);
    }

    /// Ctrl-U: to the start of the line; at the start, the line break
    /// before it.
    pub fn kill_to_line_start(&mut self) {
        let start = self.line_start();
        if start == self.cursor && self.cursor > 0 {
            self.kill(self.cursor - 1..self.cursor);
        } else {
            self.kill(start..self.cursor);
        }
    }

    /// Ctrl-K: to the end of the line; at the end, the line break after it.
    pub fn kill_to_line_end(&mut self) {
        let end = self.line_end();
        if end == self.cursor && self.cursor < self.text.len() {
            self.kill(self.cursor..self.cursor + 1);
        } else {
            self.kill(self.cursor..end);
        }
    }

    /// Ctrl-Y: inserts the last killed text (with its elements) at the cursor.
    pub fn yank(&mut self) {
        let Some(killed) = self.killed.clone() else {
            return;
        };
        let at = self.cursor;
        self.insert_str(&killed.text);
        for e in killed.elements {
            self.add_element(e.range.start + at..e.range.end + at, e.payload);
        }
    }
}

/// Letters, digits and `_`: what readline's word commands treat as a word.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
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

    /// The text with `|` at the cursor.
    fn shown(area: &TextArea) -> String {
        let mut text = area.text().to_owned();
        text.insert(area.cursor(), '|');
        text
    }

    #[test]
    fn an_element_is_skipped_and_deleted_whole() {
        let mut a = area("ab", 1);
        a.insert_element("[pasted 9 lines]", "1\n2\n3\n4\n5\n6\n7\n8\n9".into());
        assert_eq!(shown(&a), "a[pasted 9 lines]|b");
        a.move_left();
        assert_eq!(shown(&a), "a|[pasted 9 lines]b");
        a.move_right();
        assert_eq!(shown(&a), "a[pasted 9 lines]|b");
        a.set_cursor(5);
        assert_eq!(
            a.cursor(),
            1,
            "a cursor inside an element goes to its start"
        );
        a.move_right();
        a.backspace();
        assert_eq!(shown(&a), "a|b");
        assert!(a.elements().is_empty());
    }

    #[test]
    fn edits_around_an_element_move_it_and_expand_it_on_submit() {
        let mut a = area("xy", 1);
        a.insert_element("[P]", "PASTE".into());
        a.set_cursor(0);
        a.insert_str("123");
        assert_eq!(a.text(), "123x[P]y");
        assert_eq!(a.expanded(), "123xPASTEy");
        a.set_cursor(a.text().len());
        a.insert_str("!");
        assert_eq!(a.expanded(), "123xPASTEy!");
        // Deleting a range that cuts into the element takes all of it.
        a.replace_range(2..5, "");
        assert_eq!(a.expanded(), "12y!");
    }

    #[test]
    fn killed_elements_come_back_whole_with_yank() {
        let mut a = area("go ", 3);
        a.insert_element("[P]", "PASTE".into());
        a.kill_to_line_start();
        assert_eq!(a.text(), "");
        a.insert_str("> ");
        a.yank();
        assert_eq!(a.text(), "> go [P]");
        assert_eq!(a.expanded(), "> go PASTE");
    }

    #[test]
    fn word_motion_follows_readline() {
        let mut a = area("cargo test --release", 20);
        a.move_word_left();
        assert_eq!(shown(&a), "cargo test --|release");
        a.move_word_left();
        assert_eq!(shown(&a), "cargo |test --release");
        a.move_word_right();
        assert_eq!(shown(&a), "cargo test| --release");
        a.move_word_right();
        assert_eq!(shown(&a), "cargo test --release|");
    }

    #[test]
    fn kill_commands_remove_words_and_lines() {
        let mut a = area("open src/main.rs now", 16);
        a.kill_space_word_back();
        assert_eq!(shown(&a), "open | now");
        let mut a = area("open src/main.rs", 16);
        a.kill_word_back();
        assert_eq!(shown(&a), "open src/main.|");
        a.yank();
        assert_eq!(shown(&a), "open src/main.rs|");
        let mut a = area("one two three", 3);
        a.kill_word_forward();
        assert_eq!(shown(&a), "one| three");
        let mut a = area("first\nsecond line", 12);
        a.kill_to_line_end();
        assert_eq!(shown(&a), "first\nsecond|");
        a.kill_to_line_start();
        assert_eq!(shown(&a), "first\n|");
        a.kill_to_line_start();
        assert_eq!(shown(&a), "first|");
        a.set_cursor(2);
        a.kill_to_line_end();
        assert_eq!(shown(&a), "fi|");
    }

    #[test]
    fn graphemes_move_and_delete_as_one() {
        // "e" + combining acute, a family emoji (ZWJ sequence) and a wide char.
        let text = "e\u{301}👨‍👩‍👧日";
        let mut a = area(text, text.len());
        a.move_left();
        assert_eq!(a.cursor(), text.len() - "日".len());
        a.move_left();
        assert_eq!(a.cursor(), "e\u{301}".len());
        a.backspace();
        assert_eq!(a.text(), "👨‍👩‍👧日");
        a.delete();
        assert_eq!(a.text(), "日");
    }

    #[test]
    fn vertical_moves_keep_the_column_over_short_rows() {
        let mut a = area("a long line\nab\nanother long", 9);
        assert!(a.move_vertical(80, true));
        assert_eq!(a.cursor(), "a long line\nab".len());
        assert!(a.move_vertical(80, true));
        assert_eq!(&a.text()[a.cursor()..], "ong");
        assert!(!a.move_vertical(80, true));
        assert!(a.move_vertical(80, false));
        assert!(a.move_vertical(80, false));
        assert_eq!(a.cursor(), 9);
        assert!(!a.move_vertical(80, false));
    }

    #[test]
    fn vertical_moves_follow_soft_wrapped_rows() {
        let mut a = area("abcdefghi", 8);
        assert!(a.move_vertical(5, false));
        assert_eq!(a.cursor(), 3);
        assert!(!a.move_vertical(5, false), "already on the first row");
        assert!(a.move_vertical(5, true));
        assert_eq!(a.cursor(), 8);
        assert!(!a.move_vertical(5, true), "already on the last row");
    }

    #[test]
    fn restoring_a_snapshot_brings_back_elements() {
        let mut a = area("x", 1);
        a.insert_element("[P]", "PASTE".into());
        let saved = a.snapshot();
        a.set_text("other");
        assert_eq!(a.expanded(), "other");
        a.restore(saved);
        assert_eq!(a.expanded(), "xPASTE");
        assert_eq!(a.cursor(), 4);
    }
}
