//! Types shared by every part of herald: the conversation model, tool specs,
//! token usage and the event stream that front ends render.

mod display;
mod event;
mod image;
mod json_text;
mod json_writer;
mod message;
mod usage;

pub use display::{one_line, terminal_safe};
pub use event::{Event, EventKind, ProviderModel, RunStatus, ToolStatus, now_rfc3339};
pub use image::{
    DataUrl, IMAGE_TOKEN_ESTIMATE, ImageData, MAX_IMAGE_BYTES, MAX_RESULT_IMAGE_BYTES,
    MAX_RESULT_IMAGES, admit_images,
};
pub use json_text::push_json_str;
pub use json_writer::{to_json_string, write_json};
pub use message::{Message, Reasoning, Role, ToolCall, ToolSpec};
pub use usage::{TokenTotals, Usage, UsageTotals, add_cost, cost_serde, round_cost};
