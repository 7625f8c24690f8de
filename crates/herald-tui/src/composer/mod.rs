//! The composer: the line editor at the bottom of the TUI where prompts are
//! typed. Pure state and drawing, driven by crossterm key events and paste
//! strings and performing no I/O, so every behaviour is testable.
//!
//! # Keys the composer consumes
//!
//! | Key | Effect |
//! |---|---|
//! | printable characters (also with AltGr) | insert |
//! | Enter | submit ([`ComposerAction::Submit`]); after a `\` a line break instead; with a popup open, its selection |
//! | Shift-Enter, Alt-Enter, Ctrl-Enter, Ctrl-J | line break |
//! | ←/→, Ctrl-B/Ctrl-F | one grapheme (a collapsed paste is one) |
//! | Ctrl-←/→, Alt-←/→, Alt-B/Alt-F | one word (readline words: letters, digits, `_`) |
//! | Home/End, Ctrl-A/Ctrl-E | start/end of the line; Ctrl-Home/Ctrl-End: of the text |
//! | ↑/↓, Ctrl-P/Ctrl-N | previous/next screen row; from the first/last row, the prompt history (a recalled entry not yet edited: always the history); with a popup open, its selection |
//! | Backspace/Ctrl-H, Delete | the grapheme (or whole collapsed paste) before/after the cursor |
//! | Ctrl-D | Delete when there is text (else not consumed) |
//! | Ctrl-W | kill back to the previous space |
//! | Alt-Backspace, Ctrl-Backspace | kill the word before the cursor |
//! | Alt-D, Ctrl-Delete, Alt-Delete | kill the word after the cursor |
//! | Ctrl-U / Ctrl-K | kill to the start / end of the line (at the edge: the line break) |
//! | Ctrl-Y | yank (insert) the last killed text |
//! | Ctrl-R | reverse history search (see below) |
//! | Tab | with a popup open: complete its selection |
//! | Esc | with a popup open: close it |
//!
//! In a Ctrl-R search: characters and Backspace edit the query, Ctrl-R
//! steps to the next older match, Enter/Tab/→ accept the match into the
//! composer (without submitting), Esc/Ctrl-G/Ctrl-C cancel and restore the
//! draft; any other key accepts and then acts as usual.
//!
//! Everything else returns [`ComposerAction::Unhandled`] for the app: Esc
//! without a popup or search, Ctrl-C, Ctrl-D on an empty composer, Ctrl-T,
//! Ctrl-L, Tab/Shift-Tab without a popup, PageUp/PageDown, function keys,
//! other Ctrl/Alt combinations. Key releases are ignored.

mod history;
mod layout;
mod paste;
mod popup;
mod render;
mod search;
mod textarea;

#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::file_finder::FileIndex;
use history::{History, Recall};
use popup::{Items, Popup};
use search::Search;
use textarea::TextArea;

/// The hint of an empty composer and the height cap of its text, for the
/// app's layout and tests.
pub use render::{HINT, MAX_TEXT_ROWS};

/// What the app should do after a key reached the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposerAction {
    /// The composer used the key (or deliberately ignored it); redraw.
    None,
    /// Enter: send this text (collapsed pastes expanded, trailing
    /// whitespace trimmed, never blank). The composer is now empty; call
    /// [`Composer::push_history`] with the text once it is accepted.
    Submit(String),
    /// Not a composer key: the app handles it (Esc, Ctrl-C, Ctrl-D on an
    /// empty composer, Ctrl-T, ...). The composer did not change.
    Unhandled,
}

/// The line editor: text with a cursor, collapsed pastes, prompt history
/// with Ctrl-R search, and the slash and `@path` completion popups.
#[derive(Debug)]
pub struct Composer {
    textarea: TextArea,
    history: History,
    search: Option<Search>,
    popup: Option<Popup>,
    /// Esc closed the popup; it stays closed until the text changes.
    popup_dismissed: bool,
    /// The revision of the text right after a history entry was recalled:
    /// while unchanged, ↑/↓ keep walking the history.
    recalled: Option<u64>,
    file_index: Option<Arc<FileIndex>>,
    /// The session's own slash commands (its MCP prompts).
    extra_commands: Vec<crate::slash::SlashCommand>,
    /// The text width of the last layout, for ↑/↓ over wrapped rows.
    width: Cell<u16>,
    /// The first text row shown when the text is taller than the box.
    scroll: Cell<usize>,
}

impl Composer {
    /// An empty composer whose ↑ walks back through `history` (oldest
    /// first, as [`herald_store::Store::recent_prompts`] returns it).
    pub fn new(history: Vec<String>) -> Self {
        Composer {
            textarea: TextArea::default(),
            history: History::new(history),
            search: None,
            popup: None,
            popup_dismissed: false,
            recalled: None,
            file_index: None,
            extra_commands: Vec::new(),
            width: Cell::new(0),
            scroll: Cell::new(0),
        }
    }

    /// Sets the session's own slash commands (its MCP prompts), offered
    /// after the built-in ones.
    pub fn set_extra_commands(&mut self, commands: Vec<crate::slash::SlashCommand>) {
        self.extra_commands = commands;
        self.refresh_popup();
    }

    /// Gives the composer the paths `@` completes (built off the runtime
    /// with [`FileIndex::build`]); without one there is no `@` popup.
    pub fn set_file_index(&mut self, index: Arc<FileIndex>) {
        self.file_index = Some(index);
        self.refresh_popup();
    }

    /// Whether nothing is typed (a Ctrl-D or a second Ctrl-C means leave).
    pub fn is_empty(&self) -> bool {
        self.textarea.is_empty()
    }

    /// The text as it would be submitted (collapsed pastes expanded).
    pub fn text(&self) -> String {
        self.textarea.expanded()
    }

    /// Empties the composer (Ctrl-C), closing any popup or search and
    /// leaving the history; the kill buffer survives for Ctrl-Y.
    pub fn clear(&mut self) {
        self.textarea.set_text("");
        self.history.reset();
        self.search = None;
        self.popup = None;
        self.popup_dismissed = false;
        self.recalled = None;
        self.scroll.set(0);
    }

    /// Replaces the text (a queued prompt taken back for editing), the
    /// cursor at its end; control characters are removed.
    pub fn set_text(&mut self, text: &str) {
        self.clear();
        self.textarea.set_text(&paste::normalise(text));
        self.refresh_popup();
    }

    /// Records a submitted prompt for ↑ and Ctrl-R (a repeat of the newest
    /// entry is not added). The app stores it with
    /// [`herald_store::Store::add_prompt`] too.
    pub fn push_history(&mut self, text: String) {
        self.history.push(text);
        self.recalled = None;
    }

    /// Whether a completion popup is open (Esc, Tab, ↑/↓ and Enter go to it).
    pub fn has_popup(&self) -> bool {
        self.popup.is_some()
    }

    /// Whether a Ctrl-R search is open.
    pub fn is_searching(&self) -> bool {
        self.search.is_some()
    }

    /// Applies one key; see the module documentation for the key map.
    pub fn handle_key(&mut self, key: KeyEvent) -> ComposerAction {
        if key.kind == KeyEventKind::Release {
            return ComposerAction::None;
        }
        let revision = self.textarea.revision();
        let action = if self.search.is_some() {
            self.search_key(key)
        } else if let Some(action) = self.popup_key(key) {
            action
        } else {
            self.edit_key(key)
        };
        if self.textarea.revision() != revision {
            self.popup_dismissed = false;
        }
        self.refresh_popup();
        action
    }

    /// Inserts pasted text at the cursor as one edit: line endings made
    /// LF, control sequences removed; more than 5 lines or 1,000 characters
    /// show as a `[pasted N lines]` placeholder that stands for the text.
    /// In a Ctrl-R search the paste extends the query instead.
    pub fn handle_paste(&mut self, text: &str) {
        let text = paste::normalise(text);
        if text.is_empty() {
            return;
        }
        if let Some(search) = &mut self.search {
            for c in text.chars() {
                let c = if c.is_whitespace() { ' ' } else { c };
                search.push(c, self.history.entries());
            }
            return;
        }
        if paste::is_large(&text) {
            let area = &self.textarea;
            let label = paste::label(&text, |label| {
                area.elements()
                    .iter()
                    .any(|e| &area.text()[e.range.clone()] == label)
            });
            self.textarea.insert_element(&label, text);
        } else {
            self.textarea.insert_str(&text);
        }
        self.popup_dismissed = false;
        self.refresh_popup();
    }

    /// The width ↑/↓ wrap the text at: the last laid-out width, or no
    /// wrapping before the first layout.
    fn wrap_width(&self) -> usize {
        match self.width.get() {
            0 => usize::MAX,
            width => usize::from(width),
        }
    }

    fn edit_key(&mut self, key: KeyEvent) -> ComposerAction {
        let mods = key.modifiers;
        let ctrl = mods.contains(KeyModifiers::CONTROL);
        let alt = mods.contains(KeyModifiers::ALT);
        let t = &mut self.textarea;
        match key.code {
            KeyCode::Enter if ctrl || alt || mods.contains(KeyModifiers::SHIFT) => {
                t.insert_str("\n")
            }
            KeyCode::Enter => return self.enter(),
            // AltGr arrives as Ctrl+Alt on some platforms: a character.
            KeyCode::Char(c) if ctrl && alt => insert_char(t, c),
            KeyCode::Char(c) if ctrl => match c.to_ascii_lowercase() {
                'a' => t.move_line_start(),
                'e' => t.move_line_end(),
                'b' => t.move_left(),
                'f' => t.move_right(),
                'h' => t.backspace(),
                'd' if t.is_empty() => return ComposerAction::Unhandled,
                'd' => t.delete(),
                'w' => t.kill_space_word_back(),
                'u' => t.kill_to_line_start(),
                'k' => t.kill_to_line_end(),
                'y' => t.yank(),
                'j' => t.insert_str("\n"),
                'r' => self.search = Some(Search::new(t.snapshot())),
                'p' => return self.up(),
                'n' => return self.down(),
                _ => return ComposerAction::Unhandled,
            },
            KeyCode::Char(c) if alt => match c {
                'b' => t.move_word_left(),
                'f' => t.move_word_right(),
                'd' => t.kill_word_forward(),
                _ => return ComposerAction::Unhandled,
            },
            KeyCode::Char(c) => insert_char(t, c),
            KeyCode::Backspace if ctrl || alt => t.kill_word_back(),
            KeyCode::Backspace => t.backspace(),
            KeyCode::Delete if ctrl || alt => t.kill_word_forward(),
            KeyCode::Delete => t.delete(),
            KeyCode::Left if ctrl || alt => t.move_word_left(),
            KeyCode::Left => t.move_left(),
            KeyCode::Right if ctrl || alt => t.move_word_right(),
            KeyCode::Right => t.move_right(),
            KeyCode::Home if ctrl => t.set_cursor(0),
            KeyCode::Home => t.move_line_start(),
            KeyCode::End if ctrl => t.set_cursor(t.text().len()),
            KeyCode::End => t.move_line_end(),
            KeyCode::Up => return self.up(),
            KeyCode::Down => return self.down(),
            _ => return ComposerAction::Unhandled,
        }
        ComposerAction::None
    }

    /// Enter without a popup: a line break after a `\` (which goes), else
    /// submit the text unless it is blank.
    fn enter(&mut self) -> ComposerAction {
        let t = &mut self.textarea;
        let cursor = t.cursor();
        let after_element = t.elements().iter().any(|e| e.range.end == cursor);
        if t.text()[..cursor].ends_with('\\') && !after_element {
            t.replace_range(cursor - 1..cursor, "\n");
            return ComposerAction::None;
        }
        let text = t.expanded();
        if text.trim().is_empty() {
            return ComposerAction::None;
        }
        self.clear();
        ComposerAction::Submit(text.trim_end().to_owned())
    }

    /// Whether the text on screen is a recalled history entry not yet edited.
    fn showing_recalled_entry(&self) -> bool {
        self.history.is_browsing() && self.recalled == Some(self.textarea.revision())
    }

    fn up(&mut self) -> ComposerAction {
        let width = self.wrap_width();
        if !self.showing_recalled_entry() && self.textarea.move_vertical(width, false) {
            return ComposerAction::None;
        }
        let draft = self.textarea.snapshot();
        if let Some(entry) = self.history.older(draft, self.textarea.text()) {
            self.show_entry(&entry);
        } else {
            self.textarea.set_cursor(0);
        }
        ComposerAction::None
    }

    fn down(&mut self) -> ComposerAction {
        let width = self.wrap_width();
        if !self.showing_recalled_entry() && self.textarea.move_vertical(width, true) {
            return ComposerAction::None;
        }
        match self.history.newer() {
            Some(Recall::Entry(entry)) => self.show_entry(&entry),
            Some(Recall::Draft(draft)) => {
                self.textarea.restore(draft);
                self.recalled = None;
            }
            None => {
                let end = self.textarea.text().len();
                self.textarea.set_cursor(end);
            }
        }
        ComposerAction::None
    }

    /// Shows a history entry, the cursor at its end.
    fn show_entry(&mut self, entry: &str) {
        self.textarea.set_text(&paste::normalise(entry));
        self.recalled = Some(self.textarea.revision());
    }

    fn search_key(&mut self, key: KeyEvent) -> ComposerAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let Some(search) = self.search.as_mut() else {
            return ComposerAction::None;
        };
        let entries = self.history.entries();
        match key.code {
            KeyCode::Char('r') if ctrl => search.next_older(entries),
            KeyCode::Char('g' | 'c') if ctrl => self.close_search(false),
            KeyCode::Esc => self.close_search(false),
            KeyCode::Char(c) if !ctrl && !alt && !c.is_control() => search.push(c, entries),
            KeyCode::Backspace if !ctrl && !alt => search.pop(entries),
            KeyCode::Enter | KeyCode::Tab | KeyCode::Right => self.close_search(true),
            _ => {
                self.close_search(true);
                return self.edit_key(key);
            }
        }
        ComposerAction::None
    }

    /// Ends the search: with the match in the composer (`accept`, when there
    /// is one), else with the draft back.
    fn close_search(&mut self, accept: bool) {
        let Some(search) = self.search.take() else {
            return;
        };
        let entry = search
            .found
            .filter(|_| accept)
            .and_then(|i| self.history.entries().get(i))
            .cloned();
        match entry {
            Some(entry) => {
                self.history.reset();
                self.textarea.set_text(&paste::normalise(&entry));
                self.recalled = None;
            }
            None => self.textarea.restore(search.draft),
        }
    }

    /// Keys a popup takes: ↑/↓ (Ctrl-P/N) select, Tab and Enter complete,
    /// Esc closes; `None` lets the key edit as usual.
    fn popup_key(&mut self, key: KeyEvent) -> Option<ComposerAction> {
        let popup = self.popup.as_mut()?;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up if key.modifiers.is_empty() => popup.select_previous(),
            KeyCode::Char('p') if ctrl => popup.select_previous(),
            KeyCode::Down if key.modifiers.is_empty() => popup.select_next(),
            KeyCode::Char('n') if ctrl => popup.select_next(),
            KeyCode::Esc => {
                self.popup = None;
                self.popup_dismissed = true;
            }
            KeyCode::Tab if key.modifiers.is_empty() => return Some(self.complete(false)),
            KeyCode::Enter if key.modifiers.is_empty() => return Some(self.complete(true)),
            _ => return None,
        }
        Some(ComposerAction::None)
    }

    /// Applies the popup's selection. A slash command: Enter submits one
    /// that needs no argument, otherwise (and on Tab) the name is completed
    /// (with a space when it takes an argument). A path replaces the `@`
    /// word, followed by a space unless it is a directory (so completion
    /// can go on inside it).
    fn complete(&mut self, enter: bool) -> ComposerAction {
        let Some(popup) = self.popup.take() else {
            return ComposerAction::None;
        };
        match popup.items {
            Items::Commands(commands) => {
                let Some(command) = commands.get(popup.selected) else {
                    return ComposerAction::None;
                };
                let optional = command.args.is_empty() || command.args.starts_with('[');
                if enter && optional {
                    self.clear();
                    return ComposerAction::Submit(format!("/{}", command.name));
                }
                let space = if command.args.is_empty() { "" } else { " " };
                self.textarea.set_text(&format!("/{}{space}", command.name));
            }
            Items::Paths { token, paths } => {
                let Some(path) = paths.get(popup.selected) else {
                    return ComposerAction::None;
                };
                let space_follows =
                    self.textarea.text()[token.end..].starts_with(char::is_whitespace);
                let dir = path.ends_with('/');
                let space = if dir || space_follows { "" } else { " " };
                self.textarea
                    .replace_range(token, &format!("@{path}{space}"));
                if space_follows && !dir {
                    self.textarea.move_right();
                }
            }
        }
        ComposerAction::None
    }

    /// Opens, updates or closes the popup after a change.
    fn refresh_popup(&mut self) {
        if self.search.is_some() || self.popup_dismissed {
            self.popup = None;
            return;
        }
        let items = Popup::for_text(
            &self.textarea,
            self.file_index.as_deref(),
            &self.extra_commands,
        );
        self.popup = items.map(|items| {
            let selected = match &self.popup {
                Some(old) if old.items == items => old.selected,
                _ => 0,
            };
            Popup { items, selected }
        });
    }
}

/// Inserts a typed character (control characters never enter the text).
fn insert_char(area: &mut TextArea, c: char) {
    if !c.is_control() {
        let mut utf8 = [0; 4];
        area.insert_str(c.encode_utf8(&mut utf8));
    }
}
