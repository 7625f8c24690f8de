//! A harness whose scheduler reads a clock file (`HERALD_CLOCK_FILE`)
//! the test moves forward, and long-running herald processes (`herald
//! daemon`, `herald serve`) whose stderr is read line by line.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use herald_testkit::Script;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use super::{Harness, Wire, stderr};

/// 2026-11-30 08:00 UTC, a Monday.
pub const T0: i64 = 1_796_025_600_000;
pub const MINUTE: i64 = 60_000;

/// A harness with a clock file, set to [`T0`] at the start.
pub struct Clocked {
    pub h: Harness,
    pub clock: PathBuf,
}

impl Clocked {
    pub async fn new(script: Script) -> Self {
        Self::with(Harness::new(script).await)
    }

    pub fn with(h: Harness) -> Self {
        let clock = h.home.path().join("clock");
        let clocked = Clocked { h, clock };
        clocked.set_clock(T0);
        clocked
    }

    /// Moves the clock to `ms` (atomically: a reader never sees half).
    pub fn set_clock(&self, ms: i64) {
        let tmp = self.clock.with_extension("tmp");
        std::fs::write(&tmp, ms.to_string()).unwrap();
        std::fs::rename(&tmp, &self.clock).unwrap();
    }

    /// `herald` with the provider variables and the clock file.
    pub fn command(&self) -> tokio::process::Command {
        let mut cmd = self.h.command(Wire::OpenAi);
        cmd.env("HERALD_CLOCK_FILE", &self.clock);
        cmd
    }

    pub async fn herald(&self, args: &[&str]) -> std::process::Output {
        self.command().args(args).output().await.unwrap()
    }

    /// `herald ARGS` that must succeed, its stdout as JSON.
    pub async fn json(&self, args: &[&str]) -> Value {
        let output = self.herald(args).await;
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// Starts `herald daemon`.
    pub fn daemon(&self) -> Logged {
        let mut cmd = self.command();
        cmd.arg("daemon");
        Logged::spawn(cmd)
    }
}

/// A herald process whose stderr is read line by line.
pub struct Logged {
    pub child: tokio::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Logged {
    /// Starts `cmd`, reading its stderr.
    pub fn spawn(mut cmd: tokio::process::Command) -> Logged {
        cmd.stderr(Stdio::piped()).stdout(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = tx.send(line);
            }
        });
        Logged { child, lines: rx }
    }

    /// Waits for a stderr line containing `text`; panics on one containing
    /// any of `never` before it.
    pub async fn said(&mut self, text: &str, never: &[&str]) -> String {
        let wait = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = self.lines.recv().await {
                for bad in never {
                    assert!(!line.contains(bad), "unexpected {line:?} before {text:?}");
                }
                if line.contains(text) {
                    return line;
                }
            }
            panic!("the process ended without saying {text:?}");
        });
        wait.await
            .unwrap_or_else(|_| panic!("the process did not say {text:?}"))
    }

    /// The lines said so far.
    pub fn drain(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.try_recv() {
            lines.push(line);
        }
        lines
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = self.child.id().unwrap();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
    }

    pub fn kill_9(&mut self) {
        self.signal(nix::sys::signal::Signal::SIGKILL);
    }

    /// SIGTERM, then waits (at most 20 s) for it to exit.
    pub async fn stop(mut self) {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("it stops on SIGTERM")
            .unwrap();
        assert!(status.code().is_some(), "{status:?}");
    }
}
