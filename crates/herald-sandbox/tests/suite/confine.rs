//! Real confinement on this kernel: Landlock limits writes, the seccomp
//! filter blocks every socket family but Unix. On Linux these tests fail
//! (not skip) when the kernel cannot confine, so a broken sandbox is seen.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Output};

use herald_sandbox::{LandlockSupport, SandboxPolicy, SeccompSupport, sandbox_support};

/// Two directories outside `/tmp`: the writable root and a place outside it.
fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    let base = herald_testkit::dir_outside_temp(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let root = tempfile::tempdir_in(&base).unwrap();
    let outside = tempfile::tempdir_in(&base).unwrap();
    (root, outside)
}

fn require_support() {
    let support = sandbox_support();
    assert!(
        matches!(support.landlock, LandlockSupport::Available { .. }),
        "Landlock is needed for these tests: {:?}",
        support.landlock
    );
    assert_eq!(support.seccomp, SeccompSupport::Available);
    assert!(support.can_confine(false));
}

fn confined(policy: &SandboxPolicy, cwd: &Path, script: &str) -> Output {
    let prepared = policy.prepare(&[]).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).current_dir(cwd);
    prepared.apply_std(&mut cmd);
    cmd.output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn writes_outside_the_roots_are_denied_and_inside_allowed() {
    require_support();
    let (root, outside) = dirs();
    let policy = SandboxPolicy {
        writable_roots: vec![root.path().to_owned()],
        network: true,
    };
    let target = outside.path().join("file");
    let out = confined(
        &policy,
        root.path(),
        &format!("echo x > {}", target.display()),
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Permission denied"), "{}", text(&out));
    assert!(!target.exists());
    let out = confined(&policy, outside.path(), "mkdir sub");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!outside.path().join("sub").exists());

    let out = confined(
        &policy,
        root.path(),
        "echo x > inside && mkdir -p a/b && mv inside a/b/moved && \
         t=$(mktemp) && echo y > \"$t\" && rm \"$t\" && echo z > /dev/null && cat a/b/moved",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "x\n");
    assert!(root.path().join("a/b/moved").exists());
    // Reads are not restricted.
    std::fs::write(outside.path().join("readable"), "read me").unwrap();
    let out = confined(
        &policy,
        root.path(),
        &format!("cat {}/readable", outside.path().display()),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "read me");
}

#[test]
fn extra_writable_paths_are_writable() {
    require_support();
    let (root, extra) = dirs();
    let policy = SandboxPolicy {
        writable_roots: vec![root.path().to_owned()],
        network: true,
    };
    let prepared = policy.prepare(&[extra.path()]).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg("echo ok > extra.txt")
        .current_dir(extra.path());
    prepared.apply_std(&mut cmd);
    assert!(cmd.status().unwrap().success());
    assert!(extra.path().join("extra.txt").exists());
    assert!(
        prepared
            .describe()
            .contains(&extra.path().display().to_string())
    );
}

#[test]
fn the_network_is_blocked_unless_allowed_but_unix_sockets_work() {
    require_support();
    let (root, _outside) = dirs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let blocked = SandboxPolicy {
        writable_roots: vec![root.path().to_owned()],
        network: false,
    };
    let out = confined(&blocked, root.path(), &connect);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Operation not permitted"),
        "{}",
        text(&out)
    );
    let prepared = blocked.prepare(&[]).unwrap();
    assert!(prepared.denial_note(&text(&out)).is_some());
    assert!(prepared.describe().ends_with("network blocked"));

    // Unix sockets (execute_code's RPC, local daemons) still work.
    let socket = root.path().join("s.sock");
    let unix = UnixListener::bind(&socket).unwrap();
    let out = confined(
        &blocked,
        root.path(),
        &format!(
            "python3 -c 'import socket,sys; a,b=socket.socketpair(); a.sendall(b\"p\"); assert b.recv(1)==b\"p\"; \
             s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b\"unix ok\")' {}",
            socket.display()
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    let (mut stream, _) = unix.accept().unwrap();
    let mut got = String::new();
    stream.read_to_string(&mut got).unwrap();
    assert_eq!(got, "unix ok");
    // IPv6 and raw families are blocked too.
    let out = confined(
        &blocked,
        root.path(),
        "python3 -c 'import socket; socket.socket(socket.AF_INET6)'",
    );
    assert!(
        text(&out).contains("Operation not permitted"),
        "{}",
        text(&out)
    );

    let allowed = SandboxPolicy {
        writable_roots: vec![root.path().to_owned()],
        network: true,
    };
    let out = confined(&allowed, root.path(), &connect);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "connected\n");
    assert!(listener.accept().is_ok());
}

#[tokio::test]
async fn tokio_commands_are_confined_too() {
    require_support();
    let (root, outside) = dirs();
    let policy = SandboxPolicy {
        writable_roots: vec![root.path().to_owned()],
        network: false,
    };
    let prepared = policy.prepare(&[]).unwrap();
    let target = outside.path().join("f");
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c").arg(format!("echo x > {}", target.display()));
    prepared.apply(&mut cmd);
    drop(prepared);
    let out = cmd.output().await.unwrap();
    assert!(!out.status.success());
    assert!(!target.exists());
}
