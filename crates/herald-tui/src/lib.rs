//! herald's terminal interface (SPEC §2: `herald` on a terminal): a front
//! end of the session runtime. The conversation is printed into the
//! terminal's own scrollback (native scrolling, search and copy keep
//! working); a bottom pane holds the composer, popups and the status line.

pub mod ansi;
pub mod composer;
pub mod file_finder;
pub mod highlight;
pub mod markdown;
pub mod slash;
pub mod wrap;
