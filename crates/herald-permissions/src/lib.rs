//! Decides whether a tool call runs, asks a human first, or is denied.
//!
//! A [`Policy`] is built once per session from the mode, the user's and the
//! project's rules and a few facts about the machine; [`Policy::check`] is a
//! pure function of a call and the working directory, cheap enough to run on
//! every call (SPEC §14, target < 50 µs for a 200-character command).

mod commands;
mod mode;
mod paths;
mod policy;
mod rules;
mod shell;
mod text;
mod verdict;

pub use mode::{Mode, ParseModeError};
pub use policy::{CallInfo, Policy, PolicyConfig, RuleError};
pub use verdict::{Decision, Verdict};
