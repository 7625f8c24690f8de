//! The extension point around every tool call (see [`herald_tools::intercept`]):
//! hooks, learnings, checkpoint and flush guards implement
//! [`CallInterceptor`]; each agent of a session tree runs the ones its
//! session opened with, for its own calls and for those its scripts make.

pub use herald_tools::intercept::{BeforeCall, CallInterceptor, CallSite, Interception};
