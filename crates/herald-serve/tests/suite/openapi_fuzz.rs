//! The OpenAPI document checked by code we did not write: the schemathesis
//! fuzzer (installed by `.ci/run` into `.ci/venv`) reads `GET
//! /api/openapi.json` from a real `herald serve` on loopback and sends
//! generated requests, valid and not, to every operation with every check
//! (`--checks all`): each answer must have a documented status, content type
//! and body schema, no 5xx, 401 without the token, rejected invalid data
//! and accepted valid data. Without the virtualenv this test fails and says
//! how to make it; it never skips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{Serve, TOKEN};
use herald_testkit::{Reply, Script};

/// Generated requests per operation and phase: enough to cover every
/// operation's shapes, few enough for the whole run to take well under two
/// minutes on two cores (about 40 s).
const MAX_EXAMPLES: &str = "15";

/// The same requests on every run, so a failure reproduces;
/// `HERALD_FUZZ_SEED` tries another.
const DEFAULT_SEED: &str = "20240611";

/// The run is stopped (and the test fails) past this.
const LIMIT: Duration = Duration::from_secs(150);

/// `<workspace>/.ci/venv/bin/schemathesis`.
fn schemathesis() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = root.join(".ci/venv/bin/schemathesis");
    assert!(
        bin.exists(),
        "{} is missing: the OpenAPI fuzz test needs the CI virtualenv. Run .ci/run once \
         (or: python3 -m venv .ci/venv && .ci/venv/bin/pip install schemathesis==4.32.5)",
        bin.display()
    );
    bin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_failure_in_the_openapi_document() {
    let bin = schemathesis();
    // Every turn the fuzzer starts (chat, responses, turns, ops) gets this
    // answer, however many there are.
    let serve = Serve::start(Script::new().responder(|_| Reply::text("fuzzed"))).await;
    // Fuzzed rewinds and compactions reshape conversations on purpose; the
    // invariants are checked by the tests that drive those operations.
    serve
        .upstream
        .skip_invariants("the fuzzer sends arbitrary operations (rewind, compact) to sessions");
    let (status, doc) = serve.get_json("/api/openapi.json").await;
    assert_eq!(status, 200, "{doc}");
    let operations: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    let scratch = tempfile::tempdir().unwrap();
    let seed = std::env::var("HERALD_FUZZ_SEED").unwrap_or_else(|_| DEFAULT_SEED.to_owned());
    let started = Instant::now();
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/schemathesis/schemathesis.toml"
    );
    let run = tokio::process::Command::new(&bin)
        .args(["--config-file", config])
        .arg("run")
        .arg(format!("{}/api/openapi.json", serve.url))
        .args(["--url", &serve.url])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(["--checks", "all"])
        .args(["--max-examples", MAX_EXAMPLES])
        .args(["--seed", &seed])
        .args(["--generation-database", "none"])
        .args(["--workers", "1"])
        .arg("--no-color")
        // Loopback only: no proxy between the fuzzer and the server.
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("all_proxy")
        // Reports and caches go to a scratch directory, not the repository.
        .current_dir(scratch.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(LIMIT, run)
        .await
        .unwrap_or_else(|_| panic!("schemathesis ran longer than {LIMIT:?}"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!(
        "schemathesis (seed {seed}) took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        output.status.success(),
        "schemathesis found failures ({}; rerun with HERALD_FUZZ_SEED={seed}):\n{stdout}\n{stderr}",
        output.status
    );
    // Every operation was tested, but the document's own, which
    // schemathesis leaves out (it is where the schema came from).
    let tested = operations - 1;
    assert!(
        stdout.contains(&format!("Tested: {tested}\n")),
        "schemathesis did not test {tested} operations:\n{stdout}"
    );
    serve.stop().await;
}
