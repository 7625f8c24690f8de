//! Confinement and secret hygiene for the processes herald's tools start.
//!
//! - [`SandboxPolicy`]: where a confined command may write and whether it may
//!   use the network. [`SandboxPolicy::prepare`] builds, in herald, the
//!   Landlock ruleset and the seccomp network filter; [`Prepared::apply`]
//!   makes a child install them right before `exec` (raw system calls only).
//! - [`EnvFilter`]: which environment variables a tool process inherits
//!   (never the ones named like keys, secrets, tokens or passwords).
//! - [`Redactor`]: known secret values and common token shapes, removed from
//!   tool output before the model or the store sees it.
//! - [`sandbox_support`]: what the running kernel offers, for `herald doctor`.
//! - [`OWNER_VAR`]: the mark naming the herald process that started a tool
//!   process, and [`kill_orphans_of`], which finds and kills the processes
//!   of dead herald processes by it.

mod confine;
mod denial;
mod env;
mod owner;
mod redact;
mod support;

use std::path::PathBuf;

pub use confine::Prepared;
pub use denial::looks_denied;
pub use env::{looks_secret, secret_env_values};
pub use owner::{
    KilledProcess, OWNER_VAR, Owner, Sweep, kill_orphans_of, mark_command, mark_command_std,
};
pub use redact::Redactor;
pub use support::{
    LandlockSupport, SandboxSupport, SeccompSupport, landlock_support, sandbox_support,
    seccomp_support,
};

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
///
/// Names are compared exactly (case-sensitive); a name ending in `*` matches
/// every variable starting with what precedes it (`AWS_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFilter {
    /// Names kept although they look secret (exact, case-sensitive).
    pub keep: Vec<String>,
    /// Names dropped in addition to the secret-looking ones.
    pub exclude: Vec<String>,
}

/// Why a policy cannot be enforced; the command must then not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The kernel lacks Landlock (or it is disabled).
    #[error("Landlock: {0}")]
    Landlock(String),
    /// The kernel cannot install the seccomp network filter.
    #[error("seccomp network filter: {0}")]
    Seccomp(String),
}
