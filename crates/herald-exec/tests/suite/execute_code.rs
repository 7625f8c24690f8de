//! `execute_code` end to end: a real python3, the real socket RPC, real
//! built-in tools. Without python3 each test fails, unless
//! `HERALD_TEST_SKIP_PYTHON=1` is set (then it skips with a note on stderr);
//! the Landlock test fails without python3 even then.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{SPAWN_SLEEPER, assert_gone, config, python, python_for_sandbox, run, spawned_pids};
use herald_testkit::wait_until;
use tokio_util::sync::CancellationToken;

fn work() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test]
async fn success_runs_tools_with_the_agents_state_and_reports_them() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = r#"
from herald_tools import write_file, read_file, terminal
write_file("notes/a.txt", "alpha\nbeta\n")
text = read_file("notes/a.txt")
print("read:", text.count("beta"))
terminal("mkdir -p sub && cd sub")
print("pwd:", terminal("pwd")["output"].strip().endswith("/sub"))
import herald_tools
bg = herald_tools._call("terminal", {"command": "echo fg", "background": True})
print("foreground:", bg["output"].strip(), "process_id" in bg)
"#;
    let r = run(config(py), dir.path(), code, None, CancellationToken::new()).await;
    assert_eq!(r.status(), "success", "{}", r.json);
    assert!(!r.is_error);
    assert_eq!(
        r.output(),
        "read: 1\npwd: True\nforeground: fg False\n",
        "{}",
        r.json
    );
    assert_eq!(r.calls(), 5);
    assert!(r.json.get("error").is_none());
    assert!(r.json["duration_seconds"].as_f64().unwrap() > 0.0);
    let text = std::fs::read_to_string(dir.path().join("notes/a.txt")).unwrap();
    assert_eq!(text, "alpha\nbeta\n");
    let seen = r.seen.0.lock().unwrap().clone();
    let names: Vec<&str> = seen.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "write_file",
            "read_file",
            "terminal",
            "terminal",
            "terminal"
        ]
    );
    assert!(
        seen.iter()
            .all(|(parent, _, failed)| parent == "call_1" && !failed)
    );
}

#[tokio::test]
async fn script_errors_return_the_traceback() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = "print('before')\ndef f():\n    raise ValueError('boom')\nf()\n";
    let r = run(
        config(py.clone()),
        dir.path(),
        code,
        None,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.status(), "error", "{}", r.json);
    assert!(r.is_error);
    assert_eq!(r.output(), "before\n");
    let error = r.error();
    assert!(error.contains("Traceback"), "{error}");
    assert!(error.contains("ValueError: boom"), "{error}");
    assert!(error.contains("File \"script.py\", line 3"), "{error}");

    let r = run(
        config(py),
        dir.path(),
        "print(",
        None,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.status(), "error");
    assert!(r.error().contains("SyntaxError"), "{}", r.error());
}

#[tokio::test]
async fn tool_failures_raise_herald_tool_error_the_script_can_catch() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = r#"
from herald_tools import read_file, HeraldToolError
try:
    read_file("missing.txt")
except HeraldToolError as err:
    print("caught:", "missing.txt" in str(err))
"#;
    let r = run(config(py), dir.path(), code, None, CancellationToken::new()).await;
    assert_eq!(r.status(), "success", "{}", r.json);
    assert_eq!(r.output(), "caught: True\n");
    assert_eq!(r.calls(), 1);
    assert!(
        r.seen.0.lock().unwrap()[0].2,
        "the failed call is reported as failed"
    );
}

#[tokio::test]
async fn a_timeout_stops_the_script_and_keeps_its_output() {
    let Some(py) = python() else { return };
    let dir = work();
    let code =
        format!("{SPAWN_SLEEPER}import time\nprint('started', flush=True)\ntime.sleep(60)\n");
    let r = run(
        config(py),
        dir.path(),
        &code,
        Some(1),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.status(), "timeout", "{}", r.json);
    assert!(r.is_error);
    let pids = spawned_pids(r.output());
    assert_eq!(r.output().lines().nth(1), Some("started"), "{}", r.output());
    assert!(r.error().contains("1 s timeout"), "{}", r.error());
    assert!(r.wall < Duration::from_secs(4), "{:?}", r.wall);
    assert_gone(&pids, "the timed-out script and its child").await;
}

#[tokio::test]
async fn a_script_ignoring_sigterm_is_killed_five_seconds_later() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = r#"
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(os.getpid(), flush=True)
while True:
    time.sleep(0.1)
"#;
    let r = run(
        config(py),
        dir.path(),
        code,
        Some(1),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.status(), "timeout", "{}", r.json);
    assert!(
        r.wall >= Duration::from_millis(5900) && r.wall < Duration::from_secs(9),
        "timeout 1 s + 5 s grace, took {:?}",
        r.wall
    );
    let pid: i32 = r.output().trim().parse().unwrap();
    assert_gone(&[pid], "the script ignoring SIGTERM").await;
}

#[tokio::test]
async fn an_interrupt_kills_the_script_at_once() {
    let Some(py) = python() else { return };
    let dir = work();
    // The script creates `started` once it ignores SIGTERM and its child
    // runs; the interrupt comes then.
    let started = dir.path().join("started");
    let code = format!(
        "{SPAWN_SLEEPER}{}",
        format_args!(
            r#"
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open({:?}, "w").close()
time.sleep(60)
"#,
            started.to_string_lossy()
        )
    );
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let interrupter = tokio::spawn(async move {
        wait_until("the script to start", Duration::from_secs(20), || {
            started.exists()
        })
        .await;
        trigger.cancel();
    });
    let r = run(config(py), dir.path(), &code, None, cancel).await;
    interrupter.await.unwrap();
    assert_eq!(r.status(), "interrupted", "{}", r.json);
    assert!(r.is_error);
    assert!(r.wall < Duration::from_secs(3), "{:?}", r.wall);
    let pids = spawned_pids(r.output());
    assert_gone(&pids, "the interrupted script and its child").await;
}

#[tokio::test]
async fn calls_past_the_cap_fail_and_are_not_run() {
    let Some(py) = python() else { return };
    let dir = work();
    std::fs::write(dir.path().join("f.txt"), "x\n").unwrap();
    let code = r#"
from herald_tools import read_file, HeraldToolError
ok, refused = 0, []
for i in range(55):
    try:
        read_file("f.txt")
        ok += 1
    except HeraldToolError as err:
        refused.append(str(err))
print(ok, len(refused))
print(refused[0])
"#;
    let r = run(config(py), dir.path(), code, None, CancellationToken::new()).await;
    assert_eq!(r.status(), "success", "{}", r.json);
    let mut lines = r.output().lines();
    assert_eq!(lines.next(), Some("50 5"));
    assert!(
        lines
            .next()
            .unwrap()
            .contains("limit of 50 tool calls per execute_code run is reached"),
        "{}",
        r.output()
    );
    assert_eq!(r.calls(), 50);
    assert_eq!(r.seen.0.lock().unwrap().len(), 55);
}

#[tokio::test]
async fn tools_outside_the_allow_list_are_refused_with_the_allowed_set() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = r#"
import herald_tools
print(hasattr(herald_tools, "process"), hasattr(herald_tools, "execute_code"))
for name, args in [("process", {"action": "list"}), ("execute_code", {"code": "1"}), ("no_such_tool", {})]:
    try:
        herald_tools._call(name, args)
        print("ran", name)
    except herald_tools.HeraldToolError as err:
        print(err)
"#;
    let r = run(config(py), dir.path(), code, None, CancellationToken::new()).await;
    assert_eq!(r.status(), "success", "{}", r.json);
    let lines: Vec<&str> = r.output().lines().collect();
    assert_eq!(lines[0], "False False");
    for (line, name) in lines[1..]
        .iter()
        .zip(["process", "execute_code", "no_such_tool"])
    {
        assert_eq!(
            *line,
            format!(
                "tool '{name}' is not available in execute_code. Allowed here: patch, read_file, search_files, terminal, write_file. Call other tools as normal tool calls."
            )
        );
    }
    assert_eq!(r.calls(), 0);
}

#[tokio::test]
async fn requests_with_a_wrong_or_missing_token_are_rejected() {
    let Some(py) = python() else { return };
    let dir = work();
    std::fs::write(dir.path().join("secret.txt"), "s3cret\n").unwrap();
    let code = r#"
import json, os, socket
def ask(request, closes):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["HERALD_RPC_SOCKET"])
    s.sendall((json.dumps(request) + "\n").encode())
    r = s.makefile("rb")
    first = json.loads(r.readline())
    # After a rejection herald closes the connection: the next read is empty.
    return (first, r.readline()) if closes else first
args = {"path": "secret.txt"}
print(ask({"id": 1, "tool": "read_file", "args": args, "token": "0" * 32}, True))
print(ask({"id": 2, "tool": "read_file", "args": args}, True))
good = {"id": 3, "tool": "read_file", "args": args, "token": os.environ["HERALD_RPC_TOKEN"]}
print("good:", "s3cret" in ask(good, False)["result"])
"#;
    let r = run(
        config(py),
        dir.path(),
        code,
        Some(20),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.status(), "success", "{}", r.json);
    let lines: Vec<&str> = r.output().lines().collect();
    for (line, id) in lines[..2].iter().zip([1, 2]) {
        // The answer names the request (wherever the key is in the object).
        assert!(
            line.contains(&format!("'id': {id},")) || line.contains(&format!("'id': {id}}}")),
            "{line}"
        );
        assert!(line.contains("token is missing or wrong"), "{line}");
        assert!(line.ends_with(", b'')"), "connection not closed: {line}");
        assert!(!line.contains("s3cret"), "{line}");
    }
    assert_eq!(lines[2], "good: True");
    assert_eq!(r.calls(), 1, "rejected requests are not calls");
}

#[tokio::test]
async fn large_output_keeps_head_and_tail() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = "for i in range(20000):\n    print('line %05d ' % i + 'x' * 20)\n";
    let r = run(config(py), dir.path(), code, None, CancellationToken::new()).await;
    assert_eq!(r.status(), "success");
    let out = r.output();
    assert!(out.len() < 52 * 1024, "{} bytes", out.len());
    assert!(out.starts_with("line 00000 "));
    assert!(
        out.trim_end()
            .ends_with(&format!("line 19999 {}", "x".repeat(20)))
    );
    assert!(
        out.contains("bytes of stdout omitted; it was 640000 bytes in all"),
        "marker missing"
    );
}

#[tokio::test]
async fn stderr_is_capped_and_kept_apart_on_success() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = "import sys\nsys.stderr.write('w' * 100000 + 'END')\nprint('ok')\n";
    let r = run(config(py), dir.path(), code, None, CancellationToken::new()).await;
    assert_eq!(r.status(), "success");
    assert_eq!(r.output(), "ok\n");
    let stderr = r.json["stderr"].as_str().unwrap();
    assert!(stderr.len() < 11 * 1024, "{}", stderr.len());
    assert!(stderr.ends_with("END"));
}

#[tokio::test]
async fn calls_from_threads_run_concurrently() {
    let Some(py) = python() else { return };
    let dir = work();
    let code = r#"
import time
from concurrent.futures import ThreadPoolExecutor
from herald_tools import terminal
start = time.time()
with ThreadPoolExecutor(8) as pool:
    outs = list(pool.map(lambda i: terminal("sleep 0.5; echo %d" % i)["output"].strip(), range(8)))
print(outs)
print("parallel:", time.time() - start < 2.0)
"#;
    let r = run(config(py), dir.path(), code, None, CancellationToken::new()).await;
    assert_eq!(r.status(), "success", "{}", r.json);
    assert_eq!(
        r.output(),
        "['0', '1', '2', '3', '4', '5', '6', '7']\nparallel: True\n"
    );
    assert_eq!(r.calls(), 8);
}

#[tokio::test]
async fn empty_code_and_zero_timeout_are_errors_without_a_run() {
    let Some(py) = python() else { return };
    let dir = work();
    let r = run(
        config(py.clone()),
        dir.path(),
        "  ",
        None,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.status(), "error");
    assert!(r.error().contains("code is empty"));
    let r = run(
        config(py),
        dir.path(),
        "print(1)",
        Some(0),
        CancellationToken::new(),
    )
    .await;
    assert!(r.error().contains("at least 1 second"), "{}", r.json);
}

#[tokio::test]
async fn landlock_limits_writes_to_the_working_directory_and_temp() {
    // Fails (does not skip) without python3 or, on Linux, without Landlock:
    // a sandbox test that skips proves nothing.
    let py = python_for_sandbox();
    if cfg!(target_os = "linux") {
        assert!(
            matches!(
                herald_exec::landlock_support(),
                herald_exec::LandlockSupport::Available { .. }
            ),
            "this test needs Landlock: {:?}",
            herald_exec::landlock_support()
        );
    }
    let dir = work();
    // Outside the working directory and every temp directory (those stay
    // writable), created where the checkout allows.
    let base = herald_testkit::dir_outside_temp(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")));
    let outside = tempfile::tempdir_in(base).unwrap();
    let mut cfg = config(py);
    cfg.landlock = true;
    let code = format!(
        r#"
import tempfile
from herald_tools import write_file
open("inside.txt", "w").write("ok")
with tempfile.TemporaryFile() as f:
    f.write(b"tmp ok")
try:
    open({outside:?}, "w").write("escaped")
    print("outside: written")
except PermissionError:
    print("outside: denied")
write_file({tool_path:?}, "herald is not confined")
print(open({tool_path:?}).read())
"#,
        outside = outside.path().join("x.txt").display().to_string(),
        tool_path = outside.path().join("via_tool.txt").display().to_string(),
    );
    let r = run(cfg, dir.path(), &code, None, CancellationToken::new()).await;
    match herald_exec::landlock_support() {
        herald_exec::LandlockSupport::Available { .. } => {
            assert_eq!(r.status(), "success", "{}", r.json);
            // Tools run in herald, outside the sandbox, like normal calls.
            assert_eq!(r.output(), "outside: denied\nherald is not confined\n");
            assert!(dir.path().join("inside.txt").exists());
            assert!(!outside.path().join("x.txt").exists());
        }
        herald_exec::LandlockSupport::Unavailable { .. } => {
            assert_eq!(r.status(), "error");
            assert!(r.error().contains("cannot be confined"), "{}", r.error());
        }
    }
}

#[tokio::test]
async fn a_broken_interpreter_or_a_missing_registry_is_an_error_result() {
    let dir = work();
    // `false` is executable but answers nothing: the probe reports it.
    let r = run(
        config("/bin/false".into()),
        dir.path(),
        "print(1)",
        None,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.status(), "error");
    assert!(
        r.error()
            .contains("/bin/false does not work as a Python interpreter"),
        "{}",
        r.error()
    );

    let Some(py) = python() else { return };
    let tool = herald_tools::typed(herald_exec::ExecuteCode::new(config(py)));
    let ctx = herald_tools::ToolContext::new(
        herald_tools::AgentState::new(dir.path().to_owned()),
        CancellationToken::new(),
    );
    let result = tool
        .call(serde_json::json!({"code": "print(1)"}), &ctx)
        .await;
    assert!(result.is_error);
    assert!(
        result.content.contains("runs only inside the agent loop"),
        "{}",
        result.content
    );
}
