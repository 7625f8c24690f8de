//! The native API under `/api`: sessions, turns, their event stream, and
//! control of a running session.

pub(crate) mod control;
pub(crate) mod events;
pub(crate) mod messages;
pub(crate) mod ops;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod turns;
pub(crate) mod usage;
