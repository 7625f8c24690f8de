//! The terminal as the TUI uses it: the conversation goes into the
//! terminal's own scrollback, and a bottom pane (composer, live activity,
//! popups, status line) is redrawn in place below it.
//!
//! History lines are written above the pane inside a scroll region that
//! ends where the pane starts, so the lines that scroll off the top enter
//! the scrollback like any program's output: native scrolling, search and
//! copy keep working, and the pane is never disturbed. The pane itself is a
//! ratatui [`Viewport::Fixed`] area whose height follows its content: it
//! sits right below the last history line until it reaches the bottom of
//! the screen, and stays there.

use std::io::{self, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::MoveTo;
use crossterm::terminal::{Clear, ClearType};
use crossterm::{QueueableCommand, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Rect, Size};
use ratatui::text::Line;
use ratatui::{Frame, Terminal, TerminalOptions, Viewport};

/// The terminal: printed history above, the pane below.
pub struct Screen<W: Write> {
    terminal: Terminal<CrosstermBackend<W>>,
    /// The row below the last history line (the next one goes there).
    history_end: u16,
    /// Where the pane is now.
    pane: Rect,
    size: Size,
    /// Reused for the escape sequences of history lines.
    scratch: String,
}

impl<W: Write> Screen<W> {
    /// A screen of `size` writing to `out`, whose cursor is on row
    /// `cursor_row` (history starts there; the shell's output above stays).
    pub fn new(out: W, size: Size, cursor_row: u16) -> io::Result<Self> {
        let history_end = cursor_row.min(size.height.saturating_sub(1));
        let pane = Rect::new(0, history_end, size.width, 1);
        let terminal = Terminal::with_options(
            CrosstermBackend::new(out),
            TerminalOptions {
                viewport: Viewport::Fixed(pane),
            },
        )?;
        Ok(Self {
            terminal,
            history_end,
            pane,
            size,
            scratch: String::new(),
        })
    }

    /// The terminal's width.
    pub fn width(&self) -> u16 {
        self.size.width
    }

    /// The terminal's size.
    pub fn size(&self) -> Size {
        self.size
    }

    /// Where the pane is.
    pub fn pane(&self) -> Rect {
        self.pane
    }

    /// The tallest pane this terminal holds (one row stays for history).
    pub fn max_pane_height(&self) -> u16 {
        self.size.height.saturating_sub(1).max(1)
    }

    /// Prints `lines` above the pane, into the scrollback. A line wider
    /// than the terminal (built for a width it had before a resize, or
    /// cut by characters where some are two columns wide) is broken into
    /// rows here: the terminal must never wrap one, or the rows counted
    /// here would no longer be the rows on screen.
    pub fn insert_history(&mut self, lines: &[Line<'_>]) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let width = self.size.width;
        let wrapped: Vec<Line<'_>>;
        let lines = if lines.iter().any(|line| line.width() > usize::from(width)) {
            wrapped = lines
                .iter()
                .flat_map(|line| {
                    if line.width() > usize::from(width) {
                        crate::wrap::hard_wrap_with_prefix(line, width, &[], &[])
                    } else {
                        vec![line.clone()]
                    }
                })
                .collect();
            &wrapped[..]
        } else {
            lines
        };
        // A pane that has not reached the bottom moves down first: history
        // fills the screen before anything scrolls.
        let wanted = self.history_end.saturating_add(lines.len() as u16);
        let lowest = self.size.height.saturating_sub(self.pane.height);
        let top = wanted.min(lowest).max(self.pane.y);
        if top != self.pane.y {
            let out = self.terminal.backend_mut();
            out.queue(MoveTo(0, self.pane.y))?;
            out.queue(Clear(ClearType::FromCursorDown))?;
            self.pane.y = top;
            self.terminal.resize(self.pane)?;
        }
        // The region history may use: everything above the pane.
        let region = self.pane.y;
        if region == 0 {
            return Ok(());
        }
        for chunk in lines.chunks(usize::from(region)) {
            let count = chunk.len() as u16;
            let room = region.saturating_sub(self.history_end);
            if count > room {
                self.scroll_up(region, count - room)?;
                self.history_end = region - count;
            }
            for line in chunk {
                self.write_row(self.history_end, line)?;
                self.history_end += 1;
            }
        }
        self.terminal.backend_mut().flush()
    }

    /// Draws the pane with `height` rows (clamped to the screen).
    pub fn draw(&mut self, height: u16, render: impl FnOnce(&mut Frame<'_>)) -> io::Result<()> {
        self.place_pane(height)?;
        self.terminal.draw(render)?;
        Ok(())
    }

    /// The terminal changed size: history already printed stays as the
    /// terminal reflowed it; the pane is cleared and drawn again.
    pub fn resize(&mut self, size: Size) -> io::Result<()> {
        let top = self.pane.y.min(size.height.saturating_sub(1));
        self.size = size;
        self.history_end = self.history_end.min(top);
        let out = self.terminal.backend_mut();
        out.queue(MoveTo(0, top))?;
        out.queue(Clear(ClearType::FromCursorDown))?;
        out.flush()?;
        self.pane = Rect::new(0, top, size.width, 1);
        self.terminal.resize(self.pane)
    }

    /// Clears the pane and leaves the cursor below the history, for the
    /// shell (or a line printed after the TUI) to continue there.
    pub fn leave(&mut self) -> io::Result<()> {
        let top = self.pane.y;
        let out = self.terminal.backend_mut();
        out.queue(MoveTo(0, top))?;
        out.queue(Clear(ClearType::FromCursorDown))?;
        out.flush()?;
        self.terminal.show_cursor()
    }

    /// Moves the pane so it holds `height` rows: right below the history,
    /// or at the bottom of the screen once history reaches it (history then
    /// scrolls up into the scrollback to make room).
    fn place_pane(&mut self, height: u16) -> io::Result<()> {
        let height = height.clamp(1, self.max_pane_height());
        let bottom = self.size.height;
        let top = if self.history_end + height <= bottom {
            self.history_end
        } else {
            // A terminal of no rows (some report 0 before their size is
            // set) gets the pane at the top.
            bottom.saturating_sub(height)
        };
        if self.history_end > top {
            self.scroll_up(self.history_end, self.history_end - top)?;
            self.history_end = top;
        }
        let area = Rect::new(0, top, self.size.width, height);
        if area != self.pane {
            // Rows the pane leaves behind must not keep its old drawing.
            let from = top.min(self.pane.y);
            let out = self.terminal.backend_mut();
            out.queue(MoveTo(0, from))?;
            out.queue(Clear(ClearType::FromCursorDown))?;
            self.pane = area;
            self.terminal.resize(area)?;
        }
        Ok(())
    }

    /// Scrolls rows `0..region` up by `count` (their top lines enter the
    /// scrollback) without touching anything below `region`.
    fn scroll_up(&mut self, region: u16, count: u16) -> io::Result<()> {
        if region == 0 || count == 0 {
            return Ok(());
        }
        let out = self.terminal.backend_mut();
        // DECSTBM is 1-based and inclusive.
        write!(out, "\x1b[1;{region}r")?;
        out.queue(MoveTo(0, region - 1))?;
        for _ in 0..count {
            out.write_all(b"\n")?;
        }
        // Resetting the region homes the cursor; every write below moves it.
        out.write_all(b"\x1b[r")?;
        Ok(())
    }

    fn write_row(&mut self, row: u16, line: &Line<'_>) -> io::Result<()> {
        self.scratch.clear();
        crate::ansi::write_line(&mut self.scratch, line, true);
        let out = self.terminal.backend_mut();
        out.queue(MoveTo(0, row))?;
        out.queue(Clear(ClearType::CurrentLine))?;
        out.write_all(self.scratch.as_bytes())?;
        Ok(())
    }
}

/// Whether the modes are on: a panic switches them off first (release
/// builds abort on panic, so no destructor would run).
static MODES_ON: AtomicBool = AtomicBool::new(false);

/// Raw mode, bracketed paste and the keyboard protocol that tells
/// Shift+Enter from Enter, switched on for the TUI's lifetime and off again
/// when dropped (also when the TUI fails) or when the process panics.
pub struct TerminalModes {
    active: bool,
}

impl TerminalModes {
    /// Switches the modes on.
    pub fn enable() -> io::Result<Self> {
        install_panic_hook(restore_modes);
        crossterm::terminal::enable_raw_mode()?;
        MODES_ON.store(true, Ordering::SeqCst);
        // Dropped on an error below: raw mode goes off again.
        let modes = Self { active: true };
        let mut out = io::stdout();
        execute!(out, crossterm::event::EnableBracketedPaste)?;
        // Terminals without the kitty keyboard protocol ignore this.
        execute!(
            out,
            crossterm::event::PushKeyboardEnhancementFlags(
                crossterm::event::KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES
            )
        )?;
        Ok(modes)
    }

    /// Switches the modes off (also done on drop).
    pub fn disable(&mut self) {
        if !self.active {
            return;
        }
        self.active = false;
        if MODES_ON.swap(false, Ordering::SeqCst) {
            restore_modes();
        }
    }
}

impl Drop for TerminalModes {
    fn drop(&mut self) {
        self.disable();
    }
}

/// Gives the terminal back as the shell had it.
fn restore_modes() {
    let mut out = io::stdout();
    let _ = execute!(
        out,
        crossterm::event::PopKeyboardEnhancementFlags,
        crossterm::event::DisableBracketedPaste,
        crossterm::cursor::Show
    );
    let _ = crossterm::terminal::disable_raw_mode();
}

/// Makes a panic run `restore` (once, while the modes are on) before the
/// usual report, so the message is readable and the shell usable after it.
fn install_panic_hook(restore: fn()) {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if MODES_ON.swap(false, Ordering::SeqCst) {
                restore();
            }
            previous(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ratatui::widgets::Paragraph;

    use super::*;

    /// A writer whose bytes the test can read back.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn screen(rows: u16, cursor_row: u16) -> Screen<Shared> {
        screen_with(Shared::default(), rows, cursor_row)
    }

    fn screen_with(out: Shared, rows: u16, cursor_row: u16) -> Screen<Shared> {
        Screen::new(out, Size::new(20, rows), cursor_row).unwrap()
    }

    fn output(out: &Shared) -> Vec<u8> {
        out.0.lock().unwrap().clone()
    }

    #[test]
    fn the_pane_follows_history_until_the_bottom_then_stays() {
        let mut s = screen(10, 2);
        s.draw(3, |f| f.render_widget(Paragraph::new("pane"), f.area()))
            .unwrap();
        assert_eq!(s.pane(), Rect::new(0, 2, 20, 3));
        s.insert_history(&[Line::from("a"), Line::from("b")])
            .unwrap();
        s.draw(3, |_| {}).unwrap();
        assert_eq!(s.pane(), Rect::new(0, 4, 20, 3));
        let many: Vec<Line> = (0..10).map(|i| Line::from(i.to_string())).collect();
        s.insert_history(&many).unwrap();
        s.draw(3, |_| {}).unwrap();
        assert_eq!(s.pane(), Rect::new(0, 7, 20, 3));
        // A taller pane pushes history up instead of covering it.
        s.draw(6, |_| {}).unwrap();
        assert_eq!(s.pane(), Rect::new(0, 4, 20, 6));
        assert_eq!(s.history_end, 4);
        // The pane never takes the whole screen.
        s.draw(40, |_| {}).unwrap();
        assert_eq!(s.pane().height, 9);
    }

    #[test]
    fn a_line_wider_than_the_terminal_is_written_as_rows_of_its_width() {
        let out = Shared::default();
        let mut s = screen_with(out.clone(), 10, 0);
        s.draw(2, |_| {}).unwrap();
        // Built for 30 columns (a resize since, or wide characters cut by
        // count): the terminal would wrap it into a row nobody counted.
        s.insert_history(&[Line::from("a".repeat(30)), Line::from("next")])
            .unwrap();
        assert_eq!(s.history_end, 3);
        s.draw(2, |_| {}).unwrap();
        assert_eq!(s.pane(), Rect::new(0, 3, 20, 2));
        let written = String::from_utf8_lossy(&output(&out)).into_owned();
        assert!(written.contains(&"a".repeat(20)), "{written:?}");
        assert!(!written.contains(&"a".repeat(21)), "{written:?}");
    }

    #[test]
    fn a_terminal_without_rows_does_not_panic() {
        let mut s = screen(0, 0);
        s.draw(3, |f| f.render_widget(Paragraph::new("pane"), f.area()))
            .unwrap();
        s.insert_history(&[Line::from("a")]).unwrap();
        s.resize(Size::new(20, 0)).unwrap();
        s.draw(5, |_| {}).unwrap();
        assert_eq!(s.pane().y, 0);
        s.resize(Size::new(20, 8)).unwrap();
        s.draw(3, |_| {}).unwrap();
        assert_eq!(s.pane(), Rect::new(0, 0, 20, 3));
    }

    static RESTORED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn count_restore() {
        RESTORED.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn a_panic_while_the_modes_are_on_restores_the_terminal_first() {
        install_panic_hook(count_restore);
        MODES_ON.store(true, Ordering::SeqCst);
        let result = std::panic::catch_unwind(|| panic!("a bug in the TUI"));
        assert!(result.is_err());
        assert_eq!(RESTORED.load(Ordering::SeqCst), 1);
        assert!(!MODES_ON.load(Ordering::SeqCst));
        // Restored once: a later panic has nothing to restore.
        let _ = std::panic::catch_unwind(|| panic!("another one"));
        assert_eq!(RESTORED.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn history_scrolls_inside_a_region_that_ends_above_the_pane() {
        let out = Shared::default();
        let mut s = screen_with(out.clone(), 6, 5);
        s.draw(2, |_| {}).unwrap();
        assert_eq!(s.pane(), Rect::new(0, 4, 20, 2));
        let out_before = output(&out).len();
        s.insert_history(&[Line::from("x")]).unwrap();
        let written = String::from_utf8_lossy(&output(&out)[out_before..]).into_owned();
        assert!(written.contains("\x1b[1;4r"), "{written:?}");
        assert!(written.contains('x'), "{written:?}");
        assert_eq!(s.history_end, 4);
    }
}
