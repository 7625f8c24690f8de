//! A program under a pseudo-terminal, for end-to-end tests of what a person
//! sees: [`PtySession`] runs a command with a new pseudo-terminal as its
//! controlling terminal (stdin, stdout and stderr), renders everything it
//! writes with a `vt100` terminal emulator (screen plus scrollback), answers
//! the terminal queries a TUI library sends at start-up, and lets the test
//! type, paste and resize.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use herald_testkit::pty::{PtySession, keys};
//!
//! let mut cmd = Command::new("bash");
//! cmd.args(["--norc", "-i"]);
//! let session = PtySession::spawn(cmd, 24, 80).unwrap();
//! session.send_str("echo hello");
//! session.send(keys::ENTER);
//! session
//!     .wait_for(|text| text.contains("hello\n"), Duration::from_secs(5))
//!     .unwrap();
//! // Dropping the session kills the program's whole session and reaps it.
//! ```

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::pty::{Winsize, openpty};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Lines kept above the screen, as a terminal's scrollback would.
pub const SCROLLBACK_LINES: usize = 2_000;

/// How often [`PtySession::wait_for`] looks at the screen again.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Byte sequences of common keys, as a terminal in its default modes
/// (normal cursor keys, no kitty keyboard protocol) sends them.
pub mod keys {
    /// Enter (carriage return, as a terminal sends it).
    pub const ENTER: &[u8] = b"\r";
    /// Escape.
    pub const ESC: &[u8] = b"\x1b";
    /// Tab.
    pub const TAB: &[u8] = b"\t";
    /// Backspace (DEL, as xterm sends it).
    pub const BACKSPACE: &[u8] = b"\x7f";
    /// Ctrl-C.
    pub const CTRL_C: &[u8] = b"\x03";
    /// Ctrl-D.
    pub const CTRL_D: &[u8] = b"\x04";
    /// Ctrl-J (a line feed: a newline in many line editors).
    pub const CTRL_J: &[u8] = b"\n";
    /// Ctrl-R.
    pub const CTRL_R: &[u8] = b"\x12";
    /// Up arrow.
    pub const UP: &[u8] = b"\x1b[A";
    /// Down arrow.
    pub const DOWN: &[u8] = b"\x1b[B";
    /// Right arrow.
    pub const RIGHT: &[u8] = b"\x1b[C";
    /// Left arrow.
    pub const LEFT: &[u8] = b"\x1b[D";
    /// Home.
    pub const HOME: &[u8] = b"\x1b[H";
    /// End.
    pub const END: &[u8] = b"\x1b[F";
    /// Alt+Left (word left in most editors).
    pub const ALT_LEFT: &[u8] = b"\x1b[1;3D";
    /// Alt+Right (word right in most editors).
    pub const ALT_RIGHT: &[u8] = b"\x1b[1;3C";

    /// Ctrl plus a letter (`ctrl('a')` is `\x01`); other characters give
    /// their own byte.
    pub fn ctrl(letter: char) -> Vec<u8> {
        let lower = letter.to_ascii_lowercase();
        if lower.is_ascii_lowercase() {
            vec![lower as u8 - b'a' + 1]
        } else {
            letter.to_string().into_bytes()
        }
    }
}

/// The terminal's answers to queries: written back to the program from
/// inside the parser, so a cursor position report gives the position right
/// after the bytes that came before the query.
struct Replies {
    writer: Arc<Mutex<File>>,
}

impl Replies {
    fn reply(&self, bytes: &[u8]) {
        let mut writer = lock(&self.writer);
        let _ = writer.write_all(bytes);
        let _ = writer.flush();
    }
}

impl vt100::Callbacks for Replies {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        _i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied();
        match (i1, c, first) {
            // Cursor position report (DSR 6): 1-based row and column.
            (None, 'n', Some(6)) => {
                let (row, col) = screen.cursor_position();
                self.reply(format!("\x1b[{};{}R", row + 1, col + 1).as_bytes());
            }
            // Device status (DSR 5): "OK".
            (None, 'n', Some(5)) => self.reply(b"\x1b[0n"),
            // Primary device attributes: a VT100 with advanced video.
            (None, 'c', None | Some(0)) => self.reply(b"\x1b[?1;2c"),
            // The kitty keyboard query (`CSI ? u`) stays unanswered: a
            // program then takes the keyboard protocol as unsupported once
            // the device attributes answer arrives.
            _ => {}
        }
    }
}

/// What the reader thread keeps: the emulated terminal and every byte read.
struct Term {
    parser: vt100::Parser<Replies>,
    raw: Vec<u8>,
}

/// A command running under a pseudo-terminal of its own (see the module
/// documentation). Every method takes `&self`, so a test can share it with
/// helper threads.
pub struct PtySession {
    child: Mutex<Child>,
    pid: i32,
    /// The master side, for resizing.
    master: OwnedFd,
    /// Where typed bytes and query answers go (a duplicate of the master).
    writer: Arc<Mutex<File>>,
    term: Arc<Mutex<Term>>,
    stop: Arc<AtomicBool>,
    /// Set by the reader when the program's side is closed and everything
    /// it wrote has been read.
    drained: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl PtySession {
    /// Starts `command` under a new pseudo-terminal of `rows` × `cols`: the
    /// slave side becomes its stdin, stdout and stderr and its controlling
    /// terminal (in a session of its own, `setsid`), and `TERM` is
    /// `xterm-256color` unless the command sets `TERM` itself.
    ///
    /// # Errors
    /// When the pseudo-terminal cannot be opened or the command cannot start.
    pub fn spawn(mut command: Command, rows: u16, cols: u16) -> io::Result<Self> {
        let (rows, cols) = (rows.max(1), cols.max(1));
        let size = winsize(rows, cols);
        let pty = openpty(&size, None).map_err(io::Error::from)?;
        set_cloexec(&pty.master)?;
        set_cloexec(&pty.slave)?;
        if !command.get_envs().any(|(key, _)| key == "TERM") {
            command.env("TERM", "xterm-256color");
        }
        command
            .stdin(Stdio::from(pty.slave.try_clone()?))
            .stdout(Stdio::from(pty.slave.try_clone()?))
            .stderr(Stdio::from(pty.slave));
        // SAFETY: between fork and exec only async-signal-safe calls are
        // made (setsid, ioctl), and nothing is allocated.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        // The parent keeps no slave descriptor: when the program's side is
        // all closed, the reader sees the end.
        drop(command);
        let pid = i32::try_from(child.id()).map_err(io::Error::other)?;
        let writer = Arc::new(Mutex::new(File::from(pty.master.try_clone()?)));
        let replies = Replies {
            writer: Arc::clone(&writer),
        };
        let parser = vt100::Parser::new_with_callbacks(
            non_zero(rows),
            non_zero(cols),
            SCROLLBACK_LINES,
            replies,
        );
        let term = Arc::new(Mutex::new(Term {
            parser,
            raw: Vec::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let drained = Arc::new(AtomicBool::new(false));
        let reader = {
            let source = File::from(pty.master.try_clone()?);
            let term = Arc::clone(&term);
            let stop = Arc::clone(&stop);
            let drained = Arc::clone(&drained);
            std::thread::Builder::new()
                .name(format!("pty-reader-{pid}"))
                .spawn(move || {
                    read_loop(source, &term, &stop);
                    drained.store(true, Ordering::Release);
                })?
        };
        Ok(Self {
            child: Mutex::new(child),
            pid,
            master: pty.master,
            writer,
            term,
            stop,
            drained,
            reader: Some(reader),
        })
    }

    /// The program's process id (also its session and process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Types `bytes` as the terminal's keyboard would send them.
    ///
    /// # Panics
    /// When the pseudo-terminal cannot be written (the test cannot go on).
    pub fn send(&self, bytes: &[u8]) {
        let mut writer = lock(&self.writer);
        if let Err(err) = writer.write_all(bytes).and_then(|()| writer.flush()) {
            panic!("cannot type into the pseudo-terminal: {err}");
        }
    }

    /// Types `text`.
    ///
    /// # Panics
    /// As [`PtySession::send`].
    pub fn send_str(&self, text: &str) {
        self.send(text.as_bytes());
    }

    /// Pastes `text` as a terminal in bracketed-paste mode does: between
    /// `ESC[200~` and `ESC[201~`, newlines as carriage returns.
    ///
    /// # Panics
    /// As [`PtySession::send`].
    pub fn paste(&self, text: &str) {
        let mut bytes = b"\x1b[200~".to_vec();
        bytes.extend(text.replace("\r\n", "\r").replace('\n', "\r").bytes());
        bytes.extend_from_slice(b"\x1b[201~");
        self.send(&bytes);
    }

    /// The visible screen: one line per row (every row, so line `i` is
    /// screen row `i`), trailing spaces trimmed, joined by `\n`.
    pub fn screen(&self) -> String {
        let term = lock(&self.term);
        let screen = term.parser.screen();
        let (_, cols) = screen.size();
        join_rows(screen.rows(0, cols.get()))
    }

    /// Everything that scrolled off the top (at most
    /// [`SCROLLBACK_LINES`]), followed by the visible screen, in the format
    /// of [`PtySession::screen`].
    pub fn scrollback_and_screen(&self) -> String {
        let mut term = lock(&self.term);
        let screen = term.parser.screen_mut();
        let (rows, cols) = screen.size();
        let (rows, cols) = (usize::from(rows.get()), cols.get());
        let above = screen.scrollback_len();
        let mut lines = Vec::with_capacity(above + rows);
        // At offset `o` the view starts `o` lines up into the scrollback.
        let mut taken = 0;
        while taken < above {
            screen.set_scrollback(above - taken);
            let chunk = (above - taken).min(rows);
            lines.extend(screen.rows(0, cols).take(chunk));
            taken += chunk;
        }
        screen.set_scrollback(0);
        lines.extend(screen.rows(0, cols));
        join_rows(lines.into_iter())
    }

    /// The cursor's position, 0-based (row, column).
    pub fn cursor(&self) -> (u16, u16) {
        lock(&self.term).parser.screen().cursor_position()
    }

    /// Every byte the program wrote so far, escape sequences included.
    pub fn raw(&self) -> Vec<u8> {
        lock(&self.term).raw.clone()
    }

    /// Waits until `what` holds for [`PtySession::scrollback_and_screen`]
    /// and returns that text.
    ///
    /// # Errors
    /// After `timeout`: a message with the screen and the scrollback, for the
    /// test's failure report.
    pub fn wait_for(
        &self,
        what: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let started = Instant::now();
        loop {
            let text = self.scrollback_and_screen();
            if what(&text) {
                return Ok(text);
            }
            if started.elapsed() >= timeout {
                let exited = self
                    .try_status()
                    .map_or_else(|| "still running".to_owned(), |s| format!("exited: {s}"));
                return Err(format!(
                    "timed out after {timeout:?} ({exited}); scrollback and screen:\n{text}\n--- visible screen ---\n{}",
                    self.screen()
                ));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Changes the terminal's size: the kernel sends SIGWINCH to the
    /// program's foreground process group, and the emulated screen follows.
    ///
    /// # Errors
    /// When the size cannot be set on the pseudo-terminal.
    pub fn resize(&self, rows: u16, cols: u16) -> io::Result<()> {
        let (rows, cols) = (rows.max(1), cols.max(1));
        let size = winsize(rows, cols);
        // SAFETY: TIOCSWINSZ reads one `winsize` from the pointer, which
        // outlives the call.
        let done = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        if done < 0 {
            return Err(io::Error::last_os_error());
        }
        lock(&self.term)
            .parser
            .screen_mut()
            .set_size(non_zero(rows), non_zero(cols));
        Ok(())
    }

    /// Waits at most `timeout` for the program to exit; `None` if it still
    /// runs. After an exit it also waits (within the same `timeout`) until
    /// everything written to the terminal has been read, so the screen is
    /// final — unless a process the program left behind keeps the terminal
    /// open.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.try_status() {
                break status;
            }
            if started.elapsed() >= timeout {
                return None;
            }
            std::thread::sleep(POLL_INTERVAL);
        };
        while !self.drained.load(Ordering::Acquire) && started.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(5));
        }
        Some(status)
    }

    /// The exit status if the program has ended.
    fn try_status(&self) -> Option<ExitStatus> {
        lock(&self.child).try_wait().ok().flatten()
    }
}

impl Drop for PtySession {
    /// Kills every process still in the program's session (its process
    /// group and any other group it made), reaps the program and stops the
    /// reader.
    fn drop(&mut self) {
        kill_session(self.pid);
        {
            let mut child = lock(&self.child);
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Reads the program's output into the terminal until the program's side
/// is closed or the session is dropped.
fn read_loop(mut source: File, term: &Mutex<Term>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(source.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(50u16)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        match source.read(&mut buf) {
            // EIO: every slave descriptor is closed (the program ended).
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut term = lock(term);
                term.raw.extend_from_slice(&buf[..n]);
                term.parser.process(&buf[..n]);
            }
        }
    }
}

/// Sends SIGKILL to every process whose session is `sid` (the program and
/// whatever it started without leaving its session), and to its group.
fn kill_session(sid: i32) {
    let _ = kill(Pid::from_raw(-sid), Signal::SIGKILL);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        if session_of(pid) == Some(sid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// The session id of `pid` from `/proc/PID/stat` (the fourth field after
/// the parenthesised command name).
fn session_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(3)?.parse().ok()
}

fn join_rows(rows: impl Iterator<Item = String>) -> String {
    rows.map(|row| row.trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn winsize(rows: u16, cols: u16) -> Winsize {
    Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

fn non_zero(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

fn set_cloexec(fd: &OwnedFd) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io::Error::from)?;
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
