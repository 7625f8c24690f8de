//! `execute_code`: the model writes a Python script that calls
//! herald's tools, so a multi-step task costs one model round trip instead of
//! one per tool call, and intermediate results stay out of the context.
//!
//! Each run gets a private directory holding the script, a generated
//! `herald_tools` module (one function per allowed tool) and a Unix socket.
//! `python3` runs in the agent's working directory with a scrubbed
//! environment; the module sends newline-delimited JSON requests over the
//! socket, and herald dispatches them through the agent's own registry (same
//! validation, output limits and terminal state as normal calls).
//!
//! Modules, one job each: [`allow`](SANDBOX_TOOLS) (which tools a script may
//! call), `stubs` (the Python module), `env` (the child's environment),
//! `workspace` (private directory and socket), `token`, `rpc` (the socket
//! server), `child` (process, limits, timeout and interrupt), `capture`
//! (bounded output), `outcome` (the result JSON), `python` (finding the
//! interpreter). Confinement (Landlock, the network filter) and the
//! environment filter come from `herald-sandbox`.

mod allow;
mod capture;
mod child;
mod env;
mod outcome;
mod python;
mod rpc;
mod stubs;
mod token;
mod tool;
mod workspace;

pub use allow::{SANDBOX_TOOLS, allowed_tools};
pub use env::{looks_secret, scrubbed_env};
pub use herald_sandbox::{
    LandlockSupport, SandboxSupport, SeccompSupport, landlock_support, sandbox_support,
};
pub use python::{PythonError, PythonInfo, find_python, probe_python};
pub use stubs::generate_stubs;
pub use tool::{ExecConfig, ExecuteCode, ExecuteCodeArgs};
pub use workspace::remove_stale_run_dirs;
