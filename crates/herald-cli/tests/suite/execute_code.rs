//! `execute_code` through the real binary: the scripted model sends a Python
//! script that calls `write_file` and `read_file`; the inner calls show up as
//! `sandbox.call` events and stored records, never in the model's context.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, assert_gone, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

const SCRIPT: &str = r#"
import os
from herald_tools import write_file, read_file
write_file("out/result.txt", "alpha\nbeta\n")
text = read_file("out/result.txt")
print("lines with beta:", sum("beta" in line for line in text.splitlines()))
print("key visible:", "OPENAI_API_KEY" in os.environ)
"#;

/// Whether Python 3 is there. Without it the test fails, unless
/// `HERALD_TEST_SKIP_PYTHON=1` is set: then it prints that it was skipped and
/// this returns `false`.
fn have_python() -> bool {
    let Err(err) = herald_exec::find_python("") else {
        return true;
    };
    assert!(
        std::env::var("HERALD_TEST_SKIP_PYTHON").is_ok_and(|v| v == "1"),
        "execute_code tests need Python 3 on PATH: {err}. \
         Install python3, or set HERALD_TEST_SKIP_PYTHON=1 to skip these tests."
    );
    eprintln!("SKIPPED (python3 missing, HERALD_TEST_SKIP_PYTHON=1): {err}");
    false
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_script_and_its_children_are_gone_when_the_run_ends() {
    if !have_python() {
        return;
    }
    let code = "import os, subprocess, time\n\
        sleeper = subprocess.Popen(['sleep', '1000'])\n\
        print(os.getpid(), sleeper.pid, flush=True)\n\
        time.sleep(60)\n";
    let script = Script::new().conversation(
        "time out",
        vec![
            Reply::tool("execute_code", json!({ "code": code, "timeout": 1 })),
            Reply::text("It timed out."),
        ],
    );
    let h = Harness::new(script).await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "time out in code").await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "It timed out.");
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1].body);
    let result: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(result["status"], "timeout", "{result}");
    let pids: Vec<i32> = result["output"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{result}");
    assert_gone(&pids, "the timed-out script and its child").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn inner_calls_are_events_and_records_but_not_context() {
    if !have_python() {
        return;
    }
    let script = Script::new().conversation(
        "crunch",
        vec![
            Reply::tool("execute_code", json!({ "code": SCRIPT })),
            Reply::text("Done."),
        ],
    );
    let h = Harness::new(script).await;
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "crunch the numbers in code")
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "Done.");

    // The outer call and its result.
    let started = of_type(&events, "tool.started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["name"], "execute_code");
    let call_id = started[0]["call_id"].as_str().unwrap();
    let completed = of_type(&events, "tool.completed");
    assert_eq!(completed[0]["status"], "ok", "{completed:?}");

    // One sandbox.call event per inner call, tied to the outer call.
    let inner = of_type(&events, "sandbox.call");
    let names: Vec<&str> = inner.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["write_file", "read_file"]);
    for e in &inner {
        assert_eq!(e["parent_call_id"], call_id);
        assert_eq!(e["status"], "ok");
        assert!(e["args_bytes"].as_u64().unwrap() > 0);
        assert!(e["output_bytes"].as_u64().unwrap() > 0);
        assert_eq!(e["agent_id"], "root");
    }

    // The next request carries only the execute_code result.
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let body = &requests[1].body;
    let results = tool_results(body);
    assert_eq!(results.len(), 1, "{results:?}");
    let result: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(result["output"], "lines with beta: 1\nkey visible: False\n");
    assert_eq!(result["tool_calls_made"], 2);
    let called: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(called, ["execute_code"]);
    assert!(
        !body.to_string().contains("1|alpha"),
        "read_file output leaked"
    );
    assert_eq!(
        std::fs::read_to_string(h.work_path().join("out/result.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    h.server.assert_invariants();

    // The inner calls are stored with the session.
    let session_id = last(&events)["session_id"].as_str().unwrap().to_owned();
    let store = herald_store::Store::open(h.home.path().join("state.db")).unwrap();
    let stored = store.load_events(&session_id).unwrap();
    let stored: Vec<Value> = stored
        .iter()
        .filter(|e| e.kind == "sandbox.call")
        .map(|e| serde_json::from_str(&e.payload).unwrap())
        .collect();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0]["name"], "write_file");
    assert_eq!(stored[0]["parent_call_id"], call_id);
    assert!(
        stored[0]["arguments"]
            .as_str()
            .unwrap()
            .contains("out/result.txt")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scripts_tool_calls_meet_the_same_permission_checks_as_the_models() {
    if !have_python() {
        return;
    }
    const GUARDED: &str = r#"
from herald_tools import terminal, write_file
for name, call in [
    ("rm", lambda: terminal(command="rm -rf victim_dir")),
    ("ls", lambda: terminal(command="ls")),
]:
    try:
        print(name, "->", str(call())[:200].replace("\n", " "))
    except Exception as err:
        print(name, "raised", str(err)[:200].replace("\n", " "))
"#;
    let script = Script::new()
        .conversation(
            "guarded script",
            vec![
                Reply::tool("execute_code", json!({ "code": GUARDED })),
                Reply::text("Done."),
            ],
        )
        .conversation(
            "read-only script",
            vec![
                Reply::tool("execute_code", json!({ "code": "print(1)" })),
                Reply::text("Done."),
            ],
        );
    let h = Harness::new(script).await;
    let work = h.work_path();
    std::fs::create_dir(work.join("victim_dir")).unwrap();
    let (output, _) = h
        .run_json(Wire::OpenAi, &[], "run the guarded script")
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        work.join("victim_dir").exists(),
        "the script's rm -rf ran unasked"
    );
    let results = tool_results(&h.requests_of("guarded script")[1].body);
    let result: Value =
        serde_json::from_str(results[0].split("\nsandbox: ").next().unwrap()).unwrap();
    let printed = result["output"].as_str().unwrap();
    let rm = printed.lines().find(|l| l.starts_with("rm ")).unwrap();
    assert!(rm.contains("denied:"), "{printed}");
    let ls = printed.lines().find(|l| l.starts_with("ls ")).unwrap();
    assert!(
        ls.contains("victim_dir") && !ls.contains("denied:"),
        "{printed}"
    );

    // In read-only mode execute_code itself asks, so headless it is denied.
    let (output, _) = h
        .run_json(
            Wire::OpenAi,
            &["--mode", "read-only"],
            "run the read-only script",
        )
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let results = tool_results(&h.requests_of("read-only script")[1].body);
    assert!(results[0].starts_with("denied:"), "{}", results[0]);
}
