//! The composer driven by key events and pastes as a terminal sends them,
//! and snapshots of how it draws.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::{Position, Rect};

use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn alt(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT)
}

fn with(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

fn press(c: &mut Composer, keys: &[KeyEvent]) {
    for k in keys {
        c.handle_key(*k);
    }
}

fn typed(c: &mut Composer, text: &str) {
    for ch in text.chars() {
        assert_eq!(c.handle_key(key(KeyCode::Char(ch))), ComposerAction::None);
    }
}

/// The composer's text (placeholders as shown) with `|` at the cursor.
fn shown(c: &Composer) -> String {
    let mut text = c.textarea.text().to_owned();
    text.insert(c.textarea.cursor(), '|');
    text
}

fn composer(text: &str) -> Composer {
    let mut c = Composer::new(Vec::new());
    typed(&mut c, text);
    c
}

fn history(entries: &[&str]) -> Composer {
    Composer::new(entries.iter().map(|e| e.to_string()).collect())
}

fn submit(c: &mut Composer) -> ComposerAction {
    c.handle_key(key(KeyCode::Enter))
}

fn files() -> (tempfile::TempDir, Arc<FileIndex>) {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "src/main.rs",
        "src/composer/mod.rs",
        "src/composer/paste.rs",
        "README.md",
        "target/out.bin",
    ] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    let index = Arc::new(FileIndex::build(dir.path()));
    (dir, index)
}

// ----- editing ----------------------------------------------------------

#[test]
fn typing_inserts_unicode_and_arrows_move_by_grapheme() {
    let mut c = composer("héllo 日本 👍🏽");
    assert_eq!(shown(&c), "héllo 日本 👍🏽|");
    press(&mut c, &[key(KeyCode::Left); 2]);
    assert_eq!(
        shown(&c),
        "héllo 日本| 👍🏽",
        "the emoji with its skin tone is one step"
    );
    press(&mut c, &[key(KeyCode::Left), ctrl('b')]);
    assert_eq!(shown(&c), "héllo |日本 👍🏽");
    typed(&mut c, "大");
    assert_eq!(shown(&c), "héllo 大|日本 👍🏽");
    press(&mut c, &[key(KeyCode::Right), ctrl('f')]);
    assert_eq!(shown(&c), "héllo 大日本| 👍🏽");
}

#[test]
fn home_end_and_ctrl_a_ctrl_e_go_to_the_line_edges() {
    let mut c = composer("first");
    press(&mut c, &[ctrl('j')]);
    typed(&mut c, "second line");
    press(&mut c, &[key(KeyCode::Home)]);
    assert_eq!(shown(&c), "first\n|second line");
    press(&mut c, &[ctrl('e')]);
    assert_eq!(shown(&c), "first\nsecond line|");
    press(&mut c, &[ctrl('a')]);
    assert_eq!(shown(&c), "first\n|second line");
    press(&mut c, &[key(KeyCode::End)]);
    assert_eq!(shown(&c), "first\nsecond line|");
    press(&mut c, &[with(KeyCode::Home, KeyModifiers::CONTROL)]);
    assert_eq!(shown(&c), "|first\nsecond line");
    press(&mut c, &[with(KeyCode::End, KeyModifiers::CONTROL)]);
    assert_eq!(shown(&c), "first\nsecond line|");
}

#[test]
fn word_jumps_with_alt_and_ctrl_arrows() {
    let mut c = composer("fix src/main.rs now");
    press(&mut c, &[alt('b')]);
    assert_eq!(shown(&c), "fix src/main.rs |now");
    press(&mut c, &[with(KeyCode::Left, KeyModifiers::CONTROL)]);
    assert_eq!(shown(&c), "fix src/main.|rs now");
    press(&mut c, &[with(KeyCode::Left, KeyModifiers::ALT)]);
    assert_eq!(shown(&c), "fix src/|main.rs now");
    press(&mut c, &[alt('f')]);
    assert_eq!(shown(&c), "fix src/main|.rs now");
    press(&mut c, &[with(KeyCode::Right, KeyModifiers::CONTROL)]);
    assert_eq!(shown(&c), "fix src/main.rs| now");
}

#[test]
fn backspace_delete_and_ctrl_h_remove_one_grapheme() {
    let mut c = composer("abc日");
    press(&mut c, &[key(KeyCode::Backspace)]);
    assert_eq!(shown(&c), "abc|");
    press(&mut c, &[key(KeyCode::Home), key(KeyCode::Delete)]);
    assert_eq!(shown(&c), "|bc");
    press(&mut c, &[key(KeyCode::End), ctrl('h')]);
    assert_eq!(shown(&c), "b|");
    press(&mut c, &[key(KeyCode::Left), ctrl('d')]);
    assert_eq!(shown(&c), "|");
    assert!(c.is_empty());
}

#[test]
fn word_kills_and_yank() {
    let mut c = composer("open src/main.rs please");
    press(&mut c, &[ctrl('w')]);
    assert_eq!(shown(&c), "open src/main.rs |");
    press(&mut c, &[ctrl('w')]);
    assert_eq!(shown(&c), "open |");
    press(&mut c, &[ctrl('y')]);
    assert_eq!(shown(&c), "open src/main.rs |");
    press(&mut c, &[with(KeyCode::Backspace, KeyModifiers::ALT)]);
    assert_eq!(shown(&c), "open src/main.|");
    press(&mut c, &[with(KeyCode::Backspace, KeyModifiers::CONTROL)]);
    assert_eq!(shown(&c), "open src/|");
    press(&mut c, &[ctrl('a'), alt('d')]);
    assert_eq!(shown(&c), "| src/");
    press(&mut c, &[ctrl('e'), ctrl('y')]);
    assert_eq!(shown(&c), " src/open|");
}

#[test]
fn ctrl_u_and_ctrl_k_kill_to_the_line_edges_and_ctrl_y_yanks() {
    let mut c = composer("keep this and drop that");
    press(&mut c, &[alt('b'), alt('b'), alt('b')]);
    assert_eq!(shown(&c), "keep this |and drop that");
    press(&mut c, &[ctrl('k')]);
    assert_eq!(shown(&c), "keep this |");
    press(&mut c, &[ctrl('u')]);
    assert_eq!(shown(&c), "|");
    press(&mut c, &[ctrl('y')]);
    assert_eq!(shown(&c), "keep this |");
}

#[test]
fn up_and_down_move_between_lines_keeping_the_column() {
    let mut c = composer("one line");
    press(&mut c, &[ctrl('j')]);
    typed(&mut c, "2");
    press(&mut c, &[ctrl('j')]);
    typed(&mut c, "third line");
    press(&mut c, &[key(KeyCode::Left); 5]);
    assert_eq!(shown(&c), "one line\n2\nthird| line");
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "one line\n2|\nthird line");
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "one l|ine\n2\nthird line");
    press(&mut c, &[key(KeyCode::Down), key(KeyCode::Down)]);
    assert_eq!(shown(&c), "one line\n2\nthird| line");
    press(&mut c, &[ctrl('p')]);
    assert_eq!(shown(&c), "one line\n2|\nthird line");
}

#[test]
fn up_and_down_follow_soft_wrapped_rows_once_laid_out() {
    let mut c = composer("abcdefghijklmnop");
    // 14 columns wide: 10 for the text after the borders and the prompt.
    c.desired_height(14);
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "abcdef|ghijklmnop");
    press(&mut c, &[key(KeyCode::Down)]);
    assert_eq!(shown(&c), "abcdefghijklmnop|");
}

// ----- submit and line breaks -------------------------------------------

#[test]
fn enter_submits_the_text_and_empties_the_composer() {
    let mut c = composer("hello  ");
    assert_eq!(submit(&mut c), ComposerAction::Submit("hello".into()));
    assert!(c.is_empty());
    typed(&mut c, "   ");
    assert_eq!(
        submit(&mut c),
        ComposerAction::None,
        "blank text is not sent"
    );
    assert_eq!(shown(&c), "   |");
}

#[test]
fn shift_alt_ctrl_enter_and_ctrl_j_insert_a_line_break() {
    let mut c = composer("a");
    press(&mut c, &[with(KeyCode::Enter, KeyModifiers::SHIFT)]);
    press(&mut c, &[with(KeyCode::Enter, KeyModifiers::ALT)]);
    press(&mut c, &[with(KeyCode::Enter, KeyModifiers::CONTROL)]);
    press(&mut c, &[ctrl('j')]);
    typed(&mut c, "b");
    assert_eq!(shown(&c), "a\n\n\n\nb|");
    assert_eq!(submit(&mut c), ComposerAction::Submit("a\n\n\n\nb".into()));
}

#[test]
fn a_backslash_before_the_cursor_turns_enter_into_a_line_break() {
    let mut c = composer("first \\");
    assert_eq!(submit(&mut c), ComposerAction::None);
    assert_eq!(shown(&c), "first \n|");
    typed(&mut c, "second");
    assert_eq!(
        submit(&mut c),
        ComposerAction::Submit("first \nsecond".into())
    );
}

#[test]
fn keys_for_the_app_are_not_consumed() {
    let mut c = Composer::new(Vec::new());
    for k in [
        key(KeyCode::Esc),
        ctrl('c'),
        ctrl('d'),
        ctrl('t'),
        ctrl('l'),
        key(KeyCode::Tab),
        key(KeyCode::BackTab),
        key(KeyCode::PageUp),
        key(KeyCode::F(1)),
        alt('x'),
    ] {
        assert_eq!(c.handle_key(k), ComposerAction::Unhandled, "{k:?}");
    }
    typed(&mut c, "x");
    assert_eq!(c.handle_key(ctrl('c')), ComposerAction::Unhandled);
    assert_eq!(shown(&c), "x|", "Ctrl-C leaves clearing to the app");
    c.clear();
    assert!(c.is_empty());
}

#[test]
fn ctrl_d_deletes_when_there_is_text() {
    let mut c = composer("ab");
    press(&mut c, &[key(KeyCode::Home)]);
    assert_eq!(c.handle_key(ctrl('d')), ComposerAction::None);
    assert_eq!(shown(&c), "|b");
}

#[test]
fn key_releases_are_ignored_and_altgr_characters_typed() {
    let mut c = Composer::new(Vec::new());
    let mut release = key(KeyCode::Char('x'));
    release.kind = KeyEventKind::Release;
    assert_eq!(c.handle_key(release), ComposerAction::None);
    c.handle_key(with(
        KeyCode::Char('@'),
        KeyModifiers::CONTROL | KeyModifiers::ALT,
    ));
    assert_eq!(shown(&c), "@|");
}

// ----- paste ------------------------------------------------------------

#[test]
fn a_small_paste_is_inserted_as_is_with_line_endings_normalised() {
    let mut c = composer("ab");
    press(&mut c, &[key(KeyCode::Left)]);
    c.handle_paste("one\r\ntwo\rthree\u{1b}[2J");
    assert_eq!(shown(&c), "aone\ntwo\nthree|b");
    assert_eq!(
        submit(&mut c),
        ComposerAction::Submit("aone\ntwo\nthreeb".into())
    );
}

#[test]
fn a_large_paste_is_one_placeholder_sent_whole() {
    let trace: String = (1..=120).map(|i| format!("at frame {i}\n")).collect();
    let mut c = composer("why: ");
    c.handle_paste(&trace);
    assert_eq!(shown(&c), "why: [pasted 120 lines]|");
    press(&mut c, &[key(KeyCode::Left)]);
    assert_eq!(shown(&c), "why: |[pasted 120 lines]");
    press(&mut c, &[key(KeyCode::Right)]);
    typed(&mut c, " ok");
    let expected = format!("why: {trace} ok");
    assert_eq!(submit(&mut c), ComposerAction::Submit(expected));
}

#[test]
fn backspace_deletes_a_placeholder_whole_and_repeats_are_numbered() {
    let lines = "1\n2\n3\n4\n5\n6";
    let mut c = Composer::new(Vec::new());
    c.handle_paste(lines);
    c.handle_paste(lines);
    assert_eq!(shown(&c), "[pasted 6 lines][pasted 6 lines #2]|");
    press(&mut c, &[key(KeyCode::Backspace)]);
    assert_eq!(shown(&c), "[pasted 6 lines]|");
    press(&mut c, &[key(KeyCode::Home), key(KeyCode::Delete)]);
    assert!(c.is_empty());
    let long = "x".repeat(1_200);
    c.handle_paste(&long);
    assert_eq!(shown(&c), "[pasted 1200 chars]|");
    assert_eq!(c.text(), long);
}

// ----- history ----------------------------------------------------------

#[test]
fn up_recalls_older_prompts_and_down_returns_to_the_draft() {
    let mut c = history(&["first", "second"]);
    typed(&mut c, "draft");
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "second|");
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "first|");
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "|first", "at the oldest ↑ goes to the start");
    press(&mut c, &[key(KeyCode::Down)]);
    assert_eq!(shown(&c), "second|");
    press(&mut c, &[key(KeyCode::Down)]);
    assert_eq!(shown(&c), "draft|");
    press(&mut c, &[key(KeyCode::Down)]);
    assert_eq!(shown(&c), "draft|");
}

#[test]
fn a_multi_line_entry_is_walked_through_once_edited() {
    let mut c = history(&["old", "two\nlines"]);
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "two\nlines|");
    // Not yet edited: ↑ keeps going through the history.
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "old|");
    press(&mut c, &[key(KeyCode::Down)]);
    typed(&mut c, "!");
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(
        shown(&c),
        "two|\nlines!",
        "an edited entry: ↑ moves up a row first"
    );
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "old|");
}

#[test]
fn submitted_prompts_join_the_history() {
    let mut c = Composer::new(Vec::new());
    typed(&mut c, "ls");
    let ComposerAction::Submit(text) = submit(&mut c) else {
        panic!("not submitted")
    };
    c.push_history(text);
    press(&mut c, &[key(KeyCode::Up)]);
    assert_eq!(shown(&c), "ls|");
}

#[test]
fn ctrl_r_searches_back_and_enter_accepts_without_submitting() {
    let mut c = history(&["cargo build", "ls -la", "cargo test", "git status"]);
    typed(&mut c, "draft");
    press(&mut c, &[ctrl('r')]);
    assert!(c.is_searching());
    typed(&mut c, "cargo");
    assert_eq!(c.search.as_ref().and_then(|s| s.found), Some(2));
    press(&mut c, &[ctrl('r')]);
    assert_eq!(c.search.as_ref().and_then(|s| s.found), Some(0));
    assert_eq!(submit(&mut c), ComposerAction::None);
    assert!(!c.is_searching());
    assert_eq!(shown(&c), "cargo build|");
}

#[test]
fn ctrl_r_cancel_restores_the_draft() {
    for cancel in [key(KeyCode::Esc), ctrl('g'), ctrl('c')] {
        let mut c = history(&["cargo build"]);
        typed(&mut c, "dra");
        press(&mut c, &[key(KeyCode::Left)]);
        press(&mut c, &[ctrl('r')]);
        typed(&mut c, "build");
        assert_eq!(c.handle_key(cancel), ComposerAction::None);
        assert!(!c.is_searching());
        assert_eq!(shown(&c), "dr|a");
    }
}

#[test]
fn other_keys_accept_the_match_and_act() {
    let mut c = history(&["cargo build"]);
    press(&mut c, &[ctrl('r')]);
    typed(&mut c, "bu");
    press(&mut c, &[ctrl('a')]);
    assert_eq!(shown(&c), "|cargo build");
    press(&mut c, &[ctrl('r')]);
    c.handle_paste("car\ngo");
    assert_eq!(c.search.as_ref().map(|s| s.query.as_str()), Some("car go"));
}

// ----- popups -----------------------------------------------------------

#[test]
fn the_at_popup_completes_a_path_from_the_index() {
    let (_dir, index) = files();
    let mut c = Composer::new(Vec::new());
    c.set_file_index(index);
    typed(&mut c, "read @past");
    assert!(c.has_popup());
    press(&mut c, &[key(KeyCode::Tab)]);
    assert_eq!(shown(&c), "read @src/composer/paste.rs |");
    assert!(!c.has_popup());
    typed(&mut c, "and @src/co");
    let Some(popup) = &c.popup else {
        panic!("no popup")
    };
    assert_eq!(popup.selected, 0);
    press(
        &mut c,
        &[key(KeyCode::Down), key(KeyCode::Up), key(KeyCode::Up)],
    );
    let selected = c.popup.as_ref().map(|p| p.selected);
    assert!(selected > Some(0), "↑ from the first row wraps to the last");
    press(&mut c, &[key(KeyCode::Down), key(KeyCode::Enter)]);
    assert_eq!(shown(&c), "read @src/composer/paste.rs and @src/composer/|");
    assert!(c.has_popup(), "a directory keeps completing inside it");
}

#[test]
fn the_at_popup_replaces_the_word_under_the_cursor_and_esc_closes_it() {
    let (_dir, index) = files();
    let mut c = Composer::new(Vec::new());
    c.set_file_index(index);
    typed(&mut c, "see @READ now");
    press(&mut c, &[alt('b'), key(KeyCode::Left), key(KeyCode::Left)]);
    assert!(c.has_popup());
    press(&mut c, &[key(KeyCode::Enter)]);
    assert_eq!(shown(&c), "see @README.md |now");
    press(&mut c, &[key(KeyCode::End)]);
    typed(&mut c, " @ma");
    assert!(c.has_popup());
    assert_eq!(c.handle_key(key(KeyCode::Esc)), ComposerAction::None);
    assert!(!c.has_popup());
    assert_eq!(c.handle_key(key(KeyCode::Esc)), ComposerAction::Unhandled);
    typed(&mut c, "i");
    assert!(c.has_popup(), "typing opens it again");
}

#[test]
fn without_an_index_there_is_no_at_popup() {
    let mut c = composer("@src");
    assert!(!c.has_popup());
    assert_eq!(submit(&mut c), ComposerAction::Submit("@src".into()));
}

#[test]
fn the_slash_popup_completes_and_submits_commands() {
    let mut c = composer("/");
    assert!(c.has_popup());
    typed(&mut c, "mo");
    assert_eq!(submit(&mut c), ComposerAction::Submit("/model".into()));
    let mut c = composer("/st");
    press(&mut c, &[key(KeyCode::Tab)]);
    assert_eq!(shown(&c), "/steer |");
    assert!(!c.has_popup());
    let mut c = composer("/ste");
    assert_eq!(
        submit(&mut c),
        ComposerAction::None,
        "a command with an argument"
    );
    assert_eq!(shown(&c), "/steer |");
    let mut c = composer("/m");
    press(&mut c, &[key(KeyCode::Down)]);
    assert_eq!(submit(&mut c), ComposerAction::Submit("/memory".into()));
    let mut c = composer("/he");
    press(&mut c, &[key(KeyCode::Tab)]);
    assert_eq!(shown(&c), "/help|");
}

#[test]
fn an_unknown_slash_command_is_submitted_for_the_app_to_refuse() {
    let mut c = composer("/foo");
    assert!(!c.has_popup());
    assert_eq!(submit(&mut c), ComposerAction::Submit("/foo".into()));
}

// ----- layout -----------------------------------------------------------

#[test]
fn the_height_follows_the_text_up_to_the_cap_and_the_cursor_stays_visible() {
    let mut c = Composer::new(Vec::new());
    assert_eq!(c.desired_height(40), 3);
    c.handle_paste("1\n2\n3");
    assert_eq!(c.desired_height(40), 5);
    for _ in 0..12 {
        press(&mut c, &[ctrl('j')]);
        typed(&mut c, "x");
    }
    assert_eq!(c.desired_height(40), MAX_TEXT_ROWS + 2);
    let area = Rect::new(0, 0, 40, MAX_TEXT_ROWS + 2);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    c.render(area, &mut buf);
    assert_eq!(
        c.cursor_position(area),
        Some(Position::new(4, MAX_TEXT_ROWS))
    );
    press(&mut c, &[with(KeyCode::Home, KeyModifiers::CONTROL)]);
    c.render(area, &mut buf);
    assert_eq!(c.cursor_position(area), Some(Position::new(3, 1)));
}

#[test]
fn the_popup_adds_its_rows() {
    let c = composer("/m");
    assert_eq!(c.desired_height(60), 3 + 3);
}

// ----- snapshots --------------------------------------------------------

/// The composer drawn at `width` columns and its desired height, with the
/// terminal cursor's position.
fn draw(c: &Composer, width: u16) -> String {
    let height = c.desired_height(width);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut cursor = None;
    terminal
        .draw(|frame| {
            let area = frame.area();
            frame.render_widget(c, area);
            cursor = c.cursor_position(area);
        })
        .unwrap();
    format!("{}cursor: {cursor:?}", terminal.backend())
}

#[test]
fn snapshot_empty_with_hint() {
    insta::assert_snapshot!(draw(&Composer::new(Vec::new()), 70));
}

#[test]
fn snapshot_multi_line_text_with_cursor() {
    let mut c = composer("Refactor the parser so that errors carry their span");
    press(&mut c, &[ctrl('j')]);
    typed(&mut c, "and");
    c.handle_paste("\t");
    typed(&mut c, "test it");
    press(&mut c, &[alt('b'), alt('b')]);
    insta::assert_snapshot!(draw(&c, 40));
}

#[test]
fn snapshot_collapsed_paste() {
    let mut c = composer("what does this mean? ");
    let trace: String = (1..=120).map(|i| format!("frame {i}\n")).collect();
    c.handle_paste(&trace);
    typed(&mut c, " thanks");
    insta::assert_snapshot!(draw(&c, 60));
}

#[test]
fn snapshot_slash_popup() {
    let mut c = composer("/s");
    press(&mut c, &[key(KeyCode::Down)]);
    insta::assert_snapshot!(draw(&c, 70));
}

#[test]
fn snapshot_at_popup() {
    let (_dir, index) = files();
    let mut c = Composer::new(Vec::new());
    c.set_file_index(index);
    typed(&mut c, "look at @src/");
    insta::assert_snapshot!(draw(&c, 50));
}

#[test]
fn snapshot_search_line() {
    let mut c = history(&["cargo build --release", "fix the test\nthen run cargo test"]);
    typed(&mut c, "draft");
    press(&mut c, &[ctrl('r')]);
    typed(&mut c, "test");
    insta::assert_snapshot!(draw(&c, 60));
}
