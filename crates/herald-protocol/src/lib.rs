//! Types shared by every part of herald: the conversation model, tool specs,
//! token usage and the event stream that front ends render.

mod event;
mod message;
mod usage;

pub use event::{Event, EventKind, RunStatus, ToolStatus, now_rfc3339};
pub use message::{Message, Role, ToolCall, ToolSpec};
pub use usage::{TokenTotals, Usage};
