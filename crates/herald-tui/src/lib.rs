//! herald's terminal interface: a front
//! end of the session runtime. The conversation is printed into the
//! terminal's own scrollback (native scrolling, search and copy keep
//! working); a bottom pane holds the composer, popups and the status line.

pub mod ansi;
mod app;
pub mod cells;
mod commands;
pub mod composer;
pub mod file_finder;
pub mod format;
pub mod highlight;
pub mod live;
pub mod markdown;
pub mod overlay;
pub mod replay;
pub mod screen;
pub mod slash;
pub mod status;
pub mod tool_view;
pub mod wrap;

pub use app::{BoxFuture, Opened, SessionHost, TuiError, TuiOutcome, TuiSetup, run};
