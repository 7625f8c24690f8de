//! `execute_code` under `ctx.sandbox`: the interpreter can write only below
//! the roots (and its run directory and temp), has no network but its Unix
//! socket RPC, and the calls it makes run under the same sandbox. Fails (does
//! not skip) on Linux when the kernel cannot confine, and without python3.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::net::TcpListener;

use common::{config, python_for_sandbox, run_confined};
use herald_sandbox::{LandlockSupport, SandboxPolicy, landlock_support};
use tokio_util::sync::CancellationToken;

/// The writable root and a directory outside it, neither under a temp dir.
fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    assert!(
        matches!(landlock_support(), LandlockSupport::Available { .. }),
        "these tests need Landlock: {:?}",
        landlock_support()
    );
    let base = herald_testkit::dir_outside_temp(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")));
    (
        tempfile::tempdir_in(&base).unwrap(),
        tempfile::tempdir_in(&base).unwrap(),
    )
}

fn policy(root: &std::path::Path) -> SandboxPolicy {
    SandboxPolicy {
        writable_roots: vec![root.to_owned()],
        network: false,
    }
}

#[tokio::test]
async fn a_confined_script_writes_only_inside_and_its_tool_calls_are_confined_too() {
    let py = python_for_sandbox();
    let (root, outside) = dirs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        r#"
import socket
from herald_tools import terminal
open("inside.txt", "w").write("ok")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5)
    print("network: open")
except PermissionError:
    print("network: blocked")
r = terminal("echo x > {outside}/via_terminal")
print("terminal:", r["exit_code"], r.get("sandbox", "")[:8])
open("{outside}/direct", "w").write("escaped")
"#,
        outside = outside.path().display()
    );
    let r = run_confined(
        config(py),
        root.path(),
        &code,
        None,
        CancellationToken::new(),
        Some(policy(root.path())),
    )
    .await;
    assert_eq!(r.status(), "error", "{}", r.json);
    assert_eq!(
        r.output(),
        "network: blocked\nterminal: 1 sandbox:\n",
        "{}",
        r.json
    );
    assert!(r.error().contains("PermissionError"), "{}", r.error());
    let note = r
        .sandbox_note
        .as_deref()
        .unwrap_or_else(|| panic!("no note: {}", r.json));
    assert!(
        note.starts_with("sandbox: the script ran confined"),
        "{note}"
    );
    assert!(note.contains("network blocked"), "{note}");
    assert!(root.path().join("inside.txt").exists());
    assert!(!outside.path().join("direct").exists());
    assert!(!outside.path().join("via_terminal").exists());
}

#[tokio::test]
async fn a_confined_script_that_succeeds_has_no_note_and_no_keys() {
    let py = python_for_sandbox();
    let (root, _outside) = dirs();
    let code = r#"
import os, tempfile
from herald_tools import terminal
with tempfile.NamedTemporaryFile() as f:
    f.write(b"temp is writable")
print(terminal("echo hi")["output"].strip())
"#;
    let r = run_confined(
        config(py),
        root.path(),
        code,
        None,
        CancellationToken::new(),
        Some(policy(root.path())),
    )
    .await;
    assert_eq!(r.status(), "success", "{}", r.json);
    assert_eq!(r.output(), "hi\n");
    assert!(r.sandbox_note.is_none());
}
