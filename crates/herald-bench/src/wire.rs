//! The wire floor: what sending a run's request bodies costs any client.
//!
//! `herald-bench turns` charges herald with the CPU of its whole process.
//! On loopback that includes the kernel copying each request body into the
//! socket and, because the server shares the machine, the kernel receiving
//! it for the server (the receive path runs in the sender's system call).
//! Late in a 60-turn run with 13 KB results a body is ~700 KB, so that work
//! grows with the context whatever the harness does.
//!
//! To separate it out, the benchmark replays the request bodies herald sent
//! from a second process that does nothing else: it POSTs each body over the
//! same HTTP stack (reqwest on a current-thread tokio runtime, keep-alive,
//! `TCP_NODELAY`) to a fresh scripted server and reads each reply to its
//! end, timing its own CPU from the first request to the last reply. That
//! per request is the floor no harness change can remove; herald's number
//! minus it is what herald itself adds (its start and exit included).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use herald_testkit::{RecordedRequest, ScriptedServer};

use crate::child::own_cpu;

/// The hidden subcommand the replaying process runs.
pub(crate) const CLIENT_SUBCOMMAND: &str = "wire-client";

/// Writes the bodies of `requests` to `path`, each as its length (8 bytes,
/// little-endian) and the JSON text.
pub(crate) fn save_bodies(requests: &[RecordedRequest], path: &Path) -> Result<()> {
    let mut out = Vec::new();
    for request in requests {
        let body = serde_json::to_vec(&request.body)?;
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
    }
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// Splits what [`save_bodies`] wrote back into bodies.
fn load_bodies(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut bodies = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (len, tail) = rest
            .split_first_chunk::<8>()
            .context("a body's length is cut short")?;
        let len = usize::try_from(u64::from_le_bytes(*len))?;
        if tail.len() < len {
            bail!("a body is cut short: {} of {len} bytes", tail.len());
        }
        let (body, tail) = tail.split_at(len);
        bodies.push(body.to_vec());
        rest = tail;
    }
    Ok(bodies)
}

/// The replaying process's CPU per request, for bodies saved at `bodies`
/// and a server answering as `server` does: the CPU it spent from its
/// first request to its last reply (loading the bodies and starting up
/// are left out, so the floor is the wire's alone).
pub(crate) async fn floor(server: &ScriptedServer, bodies: &Path) -> Result<Duration> {
    let exe = std::env::current_exe().context("cannot locate the benchmark executable")?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.env_clear()
        .arg(CLIENT_SUBCOMMAND)
        .arg(server.openai_base_url())
        .arg(bodies)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    let output = cmd
        .output()
        .await
        .context("cannot start the wire-floor client")?;
    if !output.status.success() {
        bail!("the wire-floor client failed");
    }
    let nanos: u64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .context("the wire-floor client printed no CPU time")?;
    let requests = server.requests().len();
    if requests == 0 {
        bail!("the wire-floor client sent no request");
    }
    server.assert_invariants();
    Ok(Duration::from_nanos(nanos) / requests as u32)
}

/// `herald-bench wire-client BASE_URL BODIES`: POSTs each saved body to
/// `BASE_URL/chat/completions` in turn and reads each reply to its end.
pub(crate) fn client_main(base_url: &str, bodies: &Path) -> Result<()> {
    let bytes =
        std::fs::read(bodies).with_context(|| format!("cannot read {}", bodies.display()))?;
    let bodies = load_bodies(&bytes)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .tls_certs_only(std::iter::empty())
            .build()?;
        let endpoint = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        let started = own_cpu();
        for body in bodies {
            let mut response = http
                .post(&endpoint)
                .header("authorization", "Bearer bench")
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await?;
            if !response.status().is_success() {
                bail!("the server answered {}", response.status());
            }
            while response.chunk().await?.is_some() {}
        }
        println!("{}", own_cpu().saturating_sub(started).as_nanos());
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn saved_bodies_load_back_and_a_cut_file_is_refused() {
        let mut file = Vec::new();
        for body in [&b"{\"a\":1}"[..], b"", b"[1,2,3]"] {
            file.extend_from_slice(&(body.len() as u64).to_le_bytes());
            file.extend_from_slice(body);
        }
        let bodies = load_bodies(&file).unwrap();
        assert_eq!(
            bodies,
            vec![b"{\"a\":1}".to_vec(), vec![], b"[1,2,3]".to_vec()]
        );
        assert!(load_bodies(&file[..file.len() - 1]).is_err());
        assert!(load_bodies(&file[..3]).is_err());
    }
}
