//! The queue over TLS: a PostgreSQL that takes only TLS connections (a
//! certificate signed by a test CA made with the `openssl` CLI), a job
//! enqueued and run by one `herald worker` with `sslmode=require` and
//! with `sslmode=verify-full` against the CA, and a wrong CA refused with
//! a message that says what to pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

use crate::common::pg::Postgres;
use crate::common::{Harness, Wire, stderr};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|err| {
            panic!("the TLS queue test needs the openssl CLI (.ci/run installs it): {err}")
        });
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA named `name`: `name.crt` and `name.key` in `dir`.
fn ca(dir: &Path, name: &str) -> PathBuf {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
    dir.join(format!("{name}.crt"))
}

/// A server certificate for 127.0.0.1 signed by CA `ca`: (cert, key).
fn server_cert(dir: &Path, ca: &str) -> (PathBuf, PathBuf) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
    );
    (dir.join("server.crt"), dir.join("server.key"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_runs_over_tls_and_a_wrong_ca_is_refused() {
    let certs = tempfile::tempdir().unwrap();
    let good_ca = ca(certs.path(), "test-ca");
    let wrong_ca = ca(certs.path(), "other-ca");
    let (cert, key) = server_cert(certs.path(), "test-ca");
    let pg = Postgres::start_tls(&cert, &key);
    let base = pg.base_url();
    let h = Harness::new(Script::new().responder(|view| {
        let prompt = view
            .messages
            .iter()
            .find(|m| m.role == "user")
            .map(|m| m.text.clone())
            .unwrap_or_default();
        Reply::text(format!("over tls: {prompt}"))
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("secure.jsonl");
    std::fs::write(&tasks, "\"first\"\n\"second\"\n").unwrap();

    // The server takes nothing in plain text.
    let plain = format!("{base}?sslmode=disable");
    let out = h
        .bare_command()
        .args(["batch", "status", "--queue", &plain])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));

    // A CA that did not sign the server's certificate is refused, and
    // nothing is enqueued.
    let wrong = format!(
        "{base}?sslmode=verify-full&sslrootcert={}",
        wrong_ca.display()
    );
    let out = h
        .command(Wire::OpenAi)
        .args(["batch", "run", tasks.to_str().unwrap(), "--queue", &wrong])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("cannot connect to PostgreSQL"), "{err}");
    assert!(err.contains("not trusted by sslrootcert="), "{err}");
    assert!(err.contains("pass the CA that signed it"), "{err}");
    let wrong_require = format!("{base}?sslmode=require&sslrootcert={}", wrong_ca.display());
    let out = h
        .bare_command()
        .args(["batch", "status", "--queue", &wrong_require])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Without a root file verify-full checks against the system's roots,
    // which do not know the test CA.
    let system = format!("{base}?sslmode=verify-full");
    let out = h
        .bare_command()
        .args(["batch", "status", "--queue", &system])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pass its CA with sslrootcert=FILE"),
        "{}",
        stderr(&out)
    );
    let missing = format!("{base}?sslmode=verify-full&sslrootcert=/no/such/ca.pem");
    let out = h
        .bare_command()
        .args(["batch", "status", "--queue", &missing])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot read sslrootcert=/no/such/ca.pem"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_tables WHERE tablename = 'herald_batch_items'"),
        "0",
        "refused connections created nothing"
    );

    // sslmode=require: encrypted, enqueued.
    let require = format!("{base}?sslmode=require");
    let out = h
        .command(Wire::OpenAi)
        .args([
            "batch",
            "run",
            tasks.to_str().unwrap(),
            "--queue",
            &require,
            "--json",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let enq: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(enq, json!({"job": "secure", "added": 2, "kept": 0}));
    // verify-full against the right CA: one worker runs the job.
    let full = format!(
        "{base}?sslmode=verify-full&sslrootcert={}",
        good_ca.display()
    );
    let out = h
        .command(Wire::OpenAi)
        .args(["worker", "--queue", &full, "--drain", "--concurrency", "1"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("2 items done"), "{}", stderr(&out));
    let fetched = dir.path().join("fetched");
    let out = h
        .bare_command()
        .args([
            "batch",
            "fetch",
            "--queue",
            &full,
            "--job",
            "secure",
            "--out",
            fetched.to_str().unwrap(),
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let answers: Vec<String> = std::fs::read_to_string(fetched.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["final_answer"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(answers, ["over tls: first", "over tls: second"]);
    // Every connection the server had was TLS (pg_hba allows no other).
    assert_eq!(
        pg.sql("SELECT bool_and(ssl) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE backend_type = 'client backend'"),
        "t"
    );
}
