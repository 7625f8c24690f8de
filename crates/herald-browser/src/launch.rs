//! Finding and starting the browser: a local Chromium or Chrome, headless,
//! with herald's own profile directory, as the leader of its own process
//! group (tracked, so herald's exit or a signal ends every process of it).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::BrowserError;

/// What to run when `[browser] executable` is empty, in order: names looked
/// up in `PATH`, then fixed install locations.
const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
    "microsoft-edge",
    "/snap/bin/chromium",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
];

/// How to get a browser, for messages and `herald doctor`.
pub const INSTALL_HINT: &str = "install Chromium (Debian and Ubuntu: `apt-get install chromium`; Fedora: `dnf install chromium`; macOS: `brew install --cask chromium`), set `[browser] executable` to a Chrome or Chromium binary, or set `[browser] cdp_url` to a Chrome started with --remote-debugging-port";

/// How long a starting browser may take to print its DevTools address.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines of the browser's stderr kept for error messages.
const STDERR_LINES: usize = 20;

/// The browser executable to run: `configured` (a path, or a name looked
/// up in `PATH`) or the first of the usual names that exists.
pub fn find_executable(configured: &str) -> Result<PathBuf, BrowserError> {
    let configured = configured.trim();
    if !configured.is_empty() {
        return lookup(configured).ok_or_else(|| BrowserError::NotFound {
            searched: format!("`[browser] executable = \"{configured}\"` is not an executable"),
            hint: INSTALL_HINT,
        });
    }
    CANDIDATES
        .iter()
        .find_map(|name| lookup(name))
        .ok_or_else(|| BrowserError::NotFound {
            searched: "looked for chromium, chromium-browser, google-chrome and chrome in PATH"
                .to_owned(),
            hint: INSTALL_HINT,
        })
}

/// `name` itself when it holds a `/`, else the first match in `PATH`;
/// only executable files count.
fn lookup(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let path = PathBuf::from(name);
        return is_executable(&path).then_some(path);
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|path| is_executable(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `executable --version` (at most 10 s) for `herald doctor`.
pub async fn version(executable: &Path) -> Result<String, BrowserError> {
    let launch_err = |reason: String| BrowserError::Launch {
        executable: executable.display().to_string(),
        reason,
    };
    let mut cmd = tokio::process::Command::new(executable);
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(10), cmd.output())
        .await
        .map_err(|_| launch_err("`--version` did not finish within 10 s".to_owned()))?
        .map_err(|err| launch_err(err.to_string()))?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || text.is_empty() {
        return Err(launch_err(format!(
            "`--version` failed ({})",
            output.status
        )));
    }
    Ok(text)
}

/// The profile directory a browser runs with, and the lock that keeps a
/// second herald session from sharing it.
#[derive(Debug)]
pub(crate) struct Profile {
    /// `--user-data-dir`.
    pub dir: PathBuf,
    /// Held while the browser runs; `None` for a temporary profile.
    _lock: Option<Flock<std::fs::File>>,
    /// A temporary profile is removed when the browser closes.
    pub temporary: bool,
}

impl Profile {
    /// Takes `<browser_dir>/profile` (persistent: logins and cookies stay)
    /// when no other session holds it, else a temporary profile under
    /// `<browser_dir>/tmp` named after this process (so the next start
    /// removes one a killed herald left). Blocking.
    pub fn take(browser_dir: &Path) -> Result<Self, BrowserError> {
        let io = |what: &str, path: &Path, err: std::io::Error| {
            BrowserError::Io(format!("could not {what} {}: {err}", path.display()))
        };
        let dir = browser_dir.join("profile");
        std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
        let lock_path = browser_dir.join("profile.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io("open", &lock_path, e))?;
        if let Ok(lock) = Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            return Ok(Self {
                dir,
                _lock: Some(lock),
                temporary: false,
            });
        }
        let tmp = browser_dir.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| io("create", &tmp, e))?;
        herald_tools::remove_dead_process_entries(&tmp, "profile-");
        let dir = tempfile::Builder::new()
            .prefix(&format!("profile-{}-", std::process::id()))
            .tempdir_in(&tmp)
            .map_err(|e| io("create a temporary profile in", &tmp, e))?
            .keep();
        Ok(Self {
            dir,
            _lock: None,
            temporary: true,
        })
    }
}

/// A browser process herald started.
pub(crate) struct Launched {
    pub child: tokio::process::Child,
    pub pid: u32,
    /// The browser-level DevTools WebSocket URL.
    pub ws_url: String,
    pub profile: Profile,
    /// The last lines the browser wrote to stderr.
    pub stderr: Arc<Mutex<VecDeque<String>>>,
    /// Keeps the group in herald's table (a signal that ends herald kills
    /// it) and in the session's process journal (a later start ends it
    /// after a crash).
    _group: herald_tools::GroupGuard,
}

impl std::fmt::Debug for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launched")
            .field("pid", &self.pid)
            .field("ws_url", &self.ws_url)
            .finish_non_exhaustive()
    }
}

impl Launched {
    /// SIGKILLs the browser's whole process group (renderers, GPU and
    /// zygote processes with it).
    pub fn kill_group(&self) {
        if let Ok(raw) = i32::try_from(self.pid)
            && raw > 0
        {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(raw),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // Whatever ended the session, no browser process outlives it.
        self.kill_group();
    }
}

/// How to start the browser.
pub(crate) struct LaunchOptions<'a> {
    pub executable: &'a Path,
    pub headless: bool,
    pub profile: Profile,
    /// Where the browser keeps what it would put under `~/.config` and
    /// `~/.cache` (crash reports): inside herald's browser directory.
    pub browser_dir: &'a Path,
    pub env: &'a herald_sandbox::EnvFilter,
    pub journal: Option<Arc<dyn herald_tools::ProcessJournal>>,
}

/// The arguments herald starts the browser with.
pub(crate) fn arguments(headless: bool, profile: &Path, as_root: bool) -> Vec<String> {
    let mut args = vec![
        "--remote-debugging-port=0".to_owned(),
        format!("--user-data-dir={}", profile.display()),
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        // No traffic the agent did not ask for: update checks, field
        // trials, safe-browsing lookups, sync, metrics.
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-default-apps".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-domain-reliability".to_owned(),
        "--disable-client-side-phishing-detection".to_owned(),
        "--metrics-recording-only".to_owned(),
        "--no-pings".to_owned(),
        "--disable-breakpad".to_owned(),
        "--password-store=basic".to_owned(),
        "--use-mock-keychain".to_owned(),
        // Pages keep running while herald is not looking at them.
        "--disable-background-timer-throttling".to_owned(),
        "--disable-backgrounding-occluded-windows".to_owned(),
        "--disable-renderer-backgrounding".to_owned(),
        // Containers have a small /dev/shm; the browser crashes without this.
        "--disable-dev-shm-usage".to_owned(),
        // Cross-site frames in the page's own process, so the SSRF guard on
        // the page's requests covers them too.
        "--disable-site-isolation-trials".to_owned(),
        "--disable-features=site-per-process,IsolateOrigins,Translate,MediaRouter,OptimizationHints,AutofillServerCommunication".to_owned(),
        "--window-size=1280,800".to_owned(),
    ];
    if headless {
        args.push("--headless=new".to_owned());
        args.push("--hide-scrollbars".to_owned());
        args.push("--mute-audio".to_owned());
    }
    if as_root {
        // Chromium's sandbox refuses to run as root (it needs an
        // unprivileged user to drop to); herald runs as root in containers
        // and CI, where the container is the isolation.
        args.push("--no-sandbox".to_owned());
    }
    args.push("about:blank".to_owned());
    args
}

/// Starts the browser and waits for its DevTools address (the
/// `DevTools listening on ws://…` line it prints to stderr).
pub(crate) async fn launch(options: LaunchOptions<'_>) -> Result<Launched, BrowserError> {
    let executable = options.executable.display().to_string();
    let launch_err = |reason: String| BrowserError::Launch {
        executable: executable.clone(),
        reason,
    };
    let as_root = nix::unistd::geteuid().is_root();
    let mut cmd = tokio::process::Command::new(options.executable);
    cmd.args(arguments(options.headless, &options.profile.dir, as_root))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    options.env.apply(&mut cmd);
    cmd.env("XDG_CONFIG_HOME", options.browser_dir.join("xdg-config"))
        .env("XDG_CACHE_HOME", options.browser_dir.join("xdg-cache"));
    let mut child = cmd.spawn().map_err(|err| launch_err(err.to_string()))?;
    let pid = child.id().unwrap_or_default();
    let group = herald_tools::track_group(pid, false, &executable, None, options.journal);
    let stderr_pipe = child
        .stderr
        .take()
        .ok_or_else(|| launch_err("no stderr pipe".to_owned()))?;
    let tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
    let (found_tx, found_rx) = tokio::sync::oneshot::channel::<String>();
    // Reads stderr for the address, then keeps draining it (a full pipe
    // would block the browser), keeping the last lines for error messages.
    tokio::spawn({
        let tail = Arc::clone(&tail);
        async move {
            let mut lines = BufReader::new(stderr_pipe).lines();
            let mut found = Some(found_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line
                    .strip_prefix("DevTools listening on ")
                    .map(str::trim)
                    .filter(|url| url.starts_with("ws://"))
                    && let Some(found) = found.take()
                {
                    let _ = found.send(url.to_owned());
                    continue;
                }
                let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                if tail.len() == STDERR_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        }
    });
    let launched = |ws_url: String, child: tokio::process::Child| Launched {
        child,
        pid,
        ws_url,
        profile: options.profile,
        stderr: Arc::clone(&tail),
        _group: group,
    };
    tokio::select! {
        found = found_rx => match found {
            Ok(ws_url) => Ok(launched(ws_url, child)),
            Err(_) => {
                // stderr closed without an address: the browser exited.
                let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
                let status = match status {
                    Ok(Ok(status)) => status.to_string(),
                    _ => "still running".to_owned(),
                };
                let doomed = launched(String::new(), child);
                Err(launch_err(format!("it exited ({status}) without a DevTools address{}", last_lines(&doomed.stderr))))
            }
        },
        () = tokio::time::sleep(START_TIMEOUT) => {
            let doomed = launched(String::new(), child);
            Err(launch_err(format!(
                "no DevTools address within {} s{}",
                START_TIMEOUT.as_secs(),
                last_lines(&doomed.stderr)
            )))
        }
    }
}

/// The browser's last stderr lines, for an error message.
pub(crate) fn last_lines(tail: &Mutex<VecDeque<String>>) -> String {
    let tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
    // Chromium logs harmless D-Bus complaints in containers; skip them.
    let useful: Vec<&str> = tail
        .iter()
        .map(String::as_str)
        .filter(|l| !l.contains("dbus") && !l.trim().is_empty())
        .collect();
    if useful.is_empty() {
        String::new()
    } else {
        format!("; its last output:\n{}", useful.join("\n"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn root_gets_no_sandbox_and_headless_the_new_mode() {
        let args = arguments(true, Path::new("/p"), true);
        assert!(args.contains(&"--no-sandbox".to_owned()));
        assert!(args.contains(&"--headless=new".to_owned()));
        assert!(args.contains(&"--user-data-dir=/p".to_owned()));
        let args = arguments(false, Path::new("/p"), false);
        assert!(
            !args
                .iter()
                .any(|a| a == "--no-sandbox" || a.starts_with("--headless"))
        );
        assert_eq!(args.last().unwrap(), "about:blank");
    }

    #[test]
    fn a_configured_path_must_be_executable() {
        let err = find_executable("/nonexistent/chrome").unwrap_err();
        assert!(
            err.to_string().contains("apt-get install chromium"),
            "{err}"
        );
        assert_eq!(
            find_executable("/bin/sh").unwrap(),
            PathBuf::from("/bin/sh")
        );
    }

    #[test]
    fn a_second_profile_user_gets_a_temporary_profile() {
        let dir = tempfile::tempdir().unwrap();
        let first = Profile::take(dir.path()).unwrap();
        assert!(!first.temporary);
        assert_eq!(first.dir, dir.path().join("profile"));
        let second = Profile::take(dir.path()).unwrap();
        assert!(second.temporary);
        assert!(second.dir.starts_with(dir.path().join("tmp")));
        drop(first);
        let third = Profile::take(dir.path()).unwrap();
        assert!(!third.temporary);
    }
}
