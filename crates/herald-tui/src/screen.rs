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

    /// Prints `lines` (each at most the terminal's width) above the pane,
    /// into the scrollback.
    pub fn insert_history(&mut self, lines: &[Line<'_>]) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
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
            bottom - height
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

/// Raw mode, bracketed paste and the keyboard protocol that tells
/// Shift+Enter from Enter, switched on for the TUI's lifetime and off again
/// when dropped (also when the TUI fails).
pub struct TerminalModes {
    active: bool,
}

impl TerminalModes {
    /// Switches the modes on.
    pub fn enable() -> io::Result<Self> {
        crossterm::terminal::enable_raw_mode()?;
        let mut out = io::stdout();
        execute!(out, crossterm::event::EnableBracketedPaste)?;
        // Terminals without the kitty keyboard protocol ignore this.
        execute!(
            out,
            crossterm::event::PushKeyboardEnhancementFlags(
                crossterm::event::KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES
            )
        )?;
        Ok(Self { active: true })
    }

    /// Switches the modes off (also done on drop).
    pub fn disable(&mut self) {
        if !self.active {
            return;
        }
        self.active = false;
        let mut out = io::stdout();
        let _ = execute!(
            out,
            crossterm::event::PopKeyboardEnhancementFlags,
            crossterm::event::DisableBracketedPaste,
            crossterm::cursor::Show
        );
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

impl Drop for TerminalModes {
    fn drop(&mut self) {
        self.disable();
    }
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
