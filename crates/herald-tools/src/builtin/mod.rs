//! The built-in tools of SPEC §7.

mod process;

pub use process::ProcessTable;

use crate::ToolRegistry;

/// A registry holding every built-in tool.
pub fn default_registry(output_limit_chars: usize) -> ToolRegistry {
    ToolRegistry::new(output_limit_chars)
}
