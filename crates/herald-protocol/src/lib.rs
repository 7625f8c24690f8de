//! Types shared by every part of herald: the conversation model, tool specs,
//! token usage and the event stream that front ends render.

mod display;
mod event;
mod image;
mod message;
mod op;
mod status;
mod usage;

pub use display::{one_line, terminal_safe};
pub use event::{
    Event, EventKind, McpServerStatus, ProviderModel, ResolvedBy, RewoundFiles, RunStatus,
    ToolStatus, now_rfc3339,
};
pub use image::{
    DataUrl, IMAGE_TOKEN_ESTIMATE, ImageData, MAX_IMAGE_BYTES, MAX_RESULT_IMAGE_BYTES,
    MAX_RESULT_IMAGES, admit_images,
};
pub use message::{Message, Reasoning, Role, ToolCall, ToolSpec};
pub use op::{ApprovalDecision, ElicitationAction, Op, RewindScope, SubmissionId};
pub use status::{
    AgentStatus, CatchUp, DeliveryState, ExitReason, FlushReason, FlushStatus, HookEvent,
    HookOutcome, JobRunState, MessageDelivery, Overlap, RunTrigger,
};
/// What herald sends as `User-Agent` on every HTTP request it makes (model
/// providers, MCP servers, probes): some gateways refuse requests without one.
pub const USER_AGENT: &str = concat!("herald/", env!("CARGO_PKG_VERSION"));

pub use usage::{TokenTotals, Usage, UsageTotals, add_cost, cost_serde, round_cost};
