//! One browser per session tree: started on the first browser call
//! (launched, or attached to `[browser] cdp_url`), restarted when it died,
//! closed with the session ([`Browser::close`]) — and killed with its whole
//! process group when herald exits any other way.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herald_web::AddressPolicy;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::BrowserError;
use crate::cdp::Connection;
use crate::launch::{self, LaunchOptions, Launched, Profile};
use crate::tabs::{Guard, Shared};

/// How long a command to the browser itself may take.
pub(crate) const CALL_LIMIT: Duration = Duration::from_secs(15);

/// What a session's browser is started with.
#[derive(Debug, Clone)]
pub struct BrowserSetup {
    /// `[browser] executable`: a path or a name in `PATH`; empty = look
    /// for Chromium or Chrome.
    pub executable: String,
    /// `[browser] cdp_url`: attach to this browser instead of launching
    /// one (`http://127.0.0.1:9222` or a `ws://…/devtools/browser/…` URL).
    pub cdp_url: String,
    /// `[browser] headless`.
    pub headless: bool,
    /// The SSRF guard's policy (`[web] allow_private` and `allow_hosts`).
    pub policy: AddressPolicy,
    /// herald's browser directory (`$HERALD_HOME/browser`): the profile,
    /// its lock, temporary profiles.
    pub dir: PathBuf,
    /// Where whole snapshots too large for a result are saved.
    pub spill_dir: PathBuf,
    /// How long a navigation may take before the result says the page is
    /// still loading.
    pub navigation_timeout: Duration,
    /// The permission rules for the page's own navigations (links, forms,
    /// scripts): `browser_navigate(domain:…)` deny and ask rules hold
    /// there too. `None` judges by the address guard alone.
    pub navigation_rule: Option<crate::NavigationRule>,
}

/// The session's browser, started when a browser tool first needs it.
pub struct Browser {
    setup: BrowserSetup,
    running: tokio::sync::Mutex<Option<Arc<Running>>>,
    /// One browser action at a time (tools of one reply may run at once).
    pub(crate) ops: tokio::sync::Mutex<()>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser")
            .field("setup", &self.setup)
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A started browser and herald's connection to it.
pub(crate) struct Running {
    pub conn: Arc<Connection>,
    pub shared: Arc<Shared>,
    /// The process herald launched (`None` when attached).
    process: Mutex<Option<Launched>>,
    events: tokio::task::AbortHandle,
    /// Said once, in the first result after the start.
    note: Mutex<Option<String>>,
}

impl Browser {
    /// A browser that starts on first use.
    pub fn new(setup: BrowserSetup) -> Arc<Self> {
        Arc::new(Self {
            setup,
            running: tokio::sync::Mutex::new(None),
            ops: tokio::sync::Mutex::new(()),
            closed: AtomicBool::new(false),
        })
    }

    /// What the browser was set up with.
    pub fn setup(&self) -> &BrowserSetup {
        &self.setup
    }

    /// Whether a browser runs now (started and not closed).
    pub async fn is_running(&self) -> bool {
        self.running
            .lock()
            .await
            .as_ref()
            .is_some_and(|r| !r.conn.is_closed())
    }

    /// The process id of the browser herald launched, if one runs.
    pub async fn pid(&self) -> Option<u32> {
        let running = self.running.lock().await;
        let running = running.as_ref()?;
        let process = running
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        process.as_ref().map(|p| p.pid)
    }

    /// The running browser, started (or restarted) if need be. The second
    /// value is a note for the model about the start.
    pub(crate) async fn running(
        &self,
        ctx: &herald_tools::ToolContext,
    ) -> Result<(Arc<Running>, Option<String>), BrowserError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(BrowserError::usage(
                "the browser was closed with the session",
            ));
        }
        let mut slot = self.running.lock().await;
        let mut restarted = false;
        if let Some(running) = slot.as_ref() {
            if !running.conn.is_closed() {
                let note = running
                    .note
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                return Ok((Arc::clone(running), note));
            }
            if let Some(dead) = slot.take() {
                dead.shutdown().await;
            }
            restarted = true;
        }
        let running = Arc::new(Running::start(&self.setup, ctx).await?);
        let mut note = running
            .note
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if restarted {
            let restart = "The browser had exited (crashed or was closed); a new one was started, so earlier tabs are gone.";
            note = Some(match note {
                Some(n) => format!("{restart} {n}"),
                None => restart.to_owned(),
            });
        }
        *slot = Some(Arc::clone(&running));
        Ok((running, note))
    }

    /// Closes the browser for good: a launched one is asked to quit (so
    /// the profile is written out), then its process group is killed; an
    /// attached one only loses the tabs herald opened. Later calls fail.
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let running = self.running.lock().await.take();
        if let Some(running) = running {
            running.shutdown().await;
        }
    }
}

impl Running {
    async fn start(
        setup: &BrowserSetup,
        ctx: &herald_tools::ToolContext,
    ) -> Result<Self, BrowserError> {
        let guard = (!setup.policy.allow_private || setup.navigation_rule.is_some()).then(|| {
            Arc::new(Guard::new(setup.policy.clone()).with_rule(setup.navigation_rule.clone()))
        });
        let mut note = None;
        let (ws_url, process) = if setup.cdp_url.trim().is_empty() {
            let executable = launch::find_executable(&setup.executable)?;
            let dir = setup.dir.clone();
            let profile = tokio::task::spawn_blocking(move || Profile::take(&dir))
                .await
                .map_err(|e| BrowserError::Io(format!("preparing the profile failed: {e}")))??;
            if profile.temporary {
                note = Some(format!(
                    "Another herald session is using the browser profile in {}, so this session's browser uses a temporary profile: saved logins and cookies are not available, and nothing it stores is kept.",
                    setup.dir.join("profile").display()
                ));
            }
            let launched = launch::launch(LaunchOptions {
                executable: &executable,
                headless: setup.headless,
                profile,
                browser_dir: &setup.dir,
                env: &ctx.env,
                journal: ctx.state.process_journal(),
            })
            .await?;
            (launched.ws_url.clone(), Some(launched))
        } else {
            (resolve_ws_url(setup.cdp_url.trim()).await?, None)
        };
        let own_all = process.is_some();
        let (conn, events) = Connection::connect(&ws_url).await?;
        let conn = Arc::new(conn);
        let shared = Shared::new(guard, own_all);
        let events = tokio::spawn(crate::tabs::run_events(
            Arc::clone(&shared),
            Arc::clone(&conn),
            events,
        ))
        .abort_handle();
        let running = Self {
            conn,
            shared,
            process: Mutex::new(process),
            events,
            note: Mutex::new(note),
        };
        running
            .call(
                "Target.setDiscoverTargets",
                json!({ "discover": true }),
                None,
            )
            .await?;
        if own_all {
            // Every tab, frame and worker waits for herald on creation, so
            // the guard is in place before it loads anything.
            running
                .call(
                    "Target.setAutoAttach",
                    json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
                    None,
                )
                .await?;
        }
        Ok(running)
    }

    /// Sends a command (to `session`, or the browser) with the default limit.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, BrowserError> {
        self.conn.call(method, params, session, CALL_LIMIT).await
    }

    /// Ends this browser (see [`Browser::close`]).
    async fn shutdown(&self) {
        let process = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match process {
            Some(mut process) => {
                if !self.conn.is_closed() {
                    let _ = self
                        .conn
                        .call("Browser.close", json!({}), None, Duration::from_secs(3))
                        .await;
                }
                let _ = tokio::time::timeout(Duration::from_secs(5), process.child.wait()).await;
                // Whatever is left of the group (helpers that ignored the quit).
                process.kill_group();
                let _ = tokio::time::timeout(Duration::from_secs(2), process.child.wait()).await;
                if process.profile.temporary {
                    let dir = process.profile.dir.clone();
                    let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
                }
            }
            None => {
                let ours: Vec<String> = self.shared.tabs().ours.iter().cloned().collect();
                for target in ours {
                    let _ = self
                        .conn
                        .call(
                            "Target.closeTarget",
                            json!({ "targetId": target }),
                            None,
                            Duration::from_secs(2),
                        )
                        .await;
                }
            }
        }
        self.conn.shutdown();
        self.events.abort();
    }

    /// The launched browser's last stderr lines, for an error message.
    pub fn stderr_tail(&self) -> String {
        let process = self.process.lock().unwrap_or_else(PoisonError::into_inner);
        process
            .as_ref()
            .map(|p| launch::last_lines(&p.stderr))
            .unwrap_or_default()
    }
}

/// The browser WebSocket URL of `cdp_url`: a `ws://` URL as it is, an
/// `http://host:port` endpoint through its `/json/version`.
async fn resolve_ws_url(cdp_url: &str) -> Result<String, BrowserError> {
    let connect_err = |reason: String| BrowserError::Connect {
        url: cdp_url.to_owned(),
        reason,
    };
    if cdp_url.starts_with("ws://") {
        return Ok(cdp_url.to_owned());
    }
    let url = url::Url::parse(cdp_url).map_err(|e| connect_err(e.to_string()))?;
    if url.scheme() != "http" {
        return Err(connect_err(
            "use an http://host:port or ws:// URL (the browser's remote debugging address)"
                .to_owned(),
        ));
    }
    let host = url.host_str().unwrap_or("127.0.0.1").to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let body = tokio::time::timeout(Duration::from_secs(5), async {
        let mut stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        let request = format!(
            "GET /json/version HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await?;
        // Read up to the end of the body its Content-Length announces (the
        // browser may keep the connection open).
        let mut response = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            response.extend_from_slice(&chunk[..n]);
            if response.len() > 1024 * 1024 || complete(&response) {
                break;
            }
        }
        Ok::<_, std::io::Error>(response)
    })
    .await
    .map_err(|_| connect_err("no answer within 5 s".to_owned()))?
    .map_err(|e| connect_err(e.to_string()))?;
    let text = String::from_utf8_lossy(&body);
    let json_start = text.find("\r\n\r\n").map_or(0, |i| i + 4);
    let version: Value = serde_json::from_str(text[json_start..].trim())
        .map_err(|_| connect_err("/json/version did not answer JSON".to_owned()))?;
    version
        .get("webSocketDebuggerUrl")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| connect_err("/json/version names no webSocketDebuggerUrl".to_owned()))
}

/// Whether `response` holds its headers and the whole body they announce.
fn complete(response: &[u8]) -> bool {
    let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    length.is_some_and(|length| response.len() >= end + 4 + length)
}

/// Checks that a browser can be used as `setup` says, without starting a
/// session's browser: for `herald doctor`. Returns what was found.
pub async fn probe(setup: &BrowserSetup) -> Result<String, BrowserError> {
    if !setup.cdp_url.trim().is_empty() {
        let ws = resolve_ws_url(setup.cdp_url.trim()).await?;
        return Ok(format!("attaching to {} ({ws})", setup.cdp_url.trim()));
    }
    let executable = launch::find_executable(&setup.executable)?;
    let version = launch::version(&executable).await?;
    Ok(format!("{version} at {}", executable.display()))
}

/// Where the whole text of an over-budget snapshot goes: a new file in
/// `dir`. Blocking.
pub(crate) fn spill(dir: &Path, text: &str) -> Result<PathBuf, BrowserError> {
    let io = |e: std::io::Error| {
        BrowserError::Io(format!(
            "could not save the snapshot in {}: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let file = tempfile::Builder::new()
        .prefix("snapshot-")
        .suffix(".txt")
        .tempfile_in(dir)
        .map_err(io)?;
    std::fs::write(file.path(), text).map_err(io)?;
    let (_, path) = file.keep().map_err(|e| io(e.error))?;
    Ok(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cdp_endpoint_is_found_through_json_version() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = socket.read(&mut buf).await.unwrap();
            let body = r#"{"Browser":"Chrome/1","webSocketDebuggerUrl":"ws://127.0.0.1:1/devtools/browser/x"}"#;
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
        });
        let ws = resolve_ws_url(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap();
        assert_eq!(ws, "ws://127.0.0.1:1/devtools/browser/x");
        assert_eq!(resolve_ws_url("ws://h:1/x").await.unwrap(), "ws://h:1/x");
        assert!(resolve_ws_url("file:///x").await.is_err());
    }
}
