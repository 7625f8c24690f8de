//! Tools the agent can call: one trait for all of them, a registry grouped in
//! toolsets, argument validation that turns bad calls into actionable errors,
//! output limits, and the built-in tools.

mod backend;
pub mod builtin;
mod context;
mod elicit;
mod gate;
mod groups;
pub mod intercept;
mod leftovers;
mod observer;
mod registry;
mod tool;
mod tracker;
mod truncate;
mod validate;

pub use backend::{
    BackendError, CommandBackend, CommandEnd, CommandOutcome, CommandRequest, FileBackend,
    ToolBackends,
};
pub use builtin::{TEMP_FILE_MARKER, remove_stale_temp_files};
pub use context::{AgentState, ToolContext};
pub use elicit::{ElicitAction, ElicitAnswer, Elicitation};
pub use gate::{GateOutcome, PermissionGate};
pub use groups::{GroupGuard, ProcessJournal, kill_tracked_groups, track_group, tracked_groups};
pub use intercept::{BeforeCall, CallInterceptor, CallSite, Interception};
pub use leftovers::remove_dead_process_entries;
pub use observer::{CallObserver, CallProgress, NestedCall};
pub use registry::{ToolRegistry, UnknownToolset};
pub use tool::{Tool, ToolError, ToolResult, TypedTool, typed};
pub use tracker::FileTracker;
pub use truncate::{HeadTail, split_head_tail, truncate_head_tail};
pub use validate::validate_args;
