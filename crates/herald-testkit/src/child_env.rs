//! Tests that need variables in the process environment, in a test binary
//! whose other tests run on other threads: setting a variable while another
//! thread reads the environment is a data race. The test runs again in a
//! child process of the same binary with the variables set from the start.

use std::process::Command;

/// Set in the child to the name of the test it runs.
const CHILD_TEST: &str = "HERALD_TESTKIT_CHILD_TEST";

/// Runs the ignored test `name` (its full path in this binary, e.g.
/// `suite::terminal_env::secrets_in_child`) in a child process with `vars`
/// set, and panics with its output if it fails or did not run.
pub fn rerun_with_env(name: &str, vars: &[(&str, &str)]) {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => panic!("cannot locate the test binary: {err}"),
    };
    let output = Command::new(exe)
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_TEST, name)
        .envs(vars.iter().copied())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(err) => panic!("cannot run {name} in a child process: {err}"),
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{name} failed in its child process:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "{name} did not run in its child process (is the name its full path?):\n{text}"
    );
}

/// Whether this process is the child [`rerun_with_env`] started for `name`;
/// an ignored test run any other way (`cargo test -- --ignored`) returns
/// early when this is false.
pub fn in_child(name: &str) -> bool {
    std::env::var(CHILD_TEST).is_ok_and(|running| running == name)
}
