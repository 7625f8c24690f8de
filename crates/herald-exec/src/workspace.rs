//! The private directory of one run: mode 0700, holding the script, the
//! generated `herald_tools` module (both 0600) and the RPC socket (0600).
//! Everything is removed when the run ends.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

/// Longest socket path we create; `sun_path` holds 108 bytes on Linux and
/// 104 on macOS, including the terminating NUL.
const MAX_SOCKET_PATH: usize = 100;

/// A run's directory with its files written and its socket listening.
#[derive(Debug)]
pub(crate) struct Workspace {
    dir: tempfile::TempDir,
    /// The script file the interpreter runs.
    pub script: PathBuf,
    /// Where the listener is bound.
    pub socket: PathBuf,
}

impl Workspace {
    /// Creates the directory, writes `code` and `stubs`, and binds the socket.
    pub(crate) fn create(code: &str, stubs: &str) -> Result<(Self, UnixListener), String> {
        let mut base = std::env::temp_dir();
        // "herald-exec-" + pid (up to 10 digits) + "-" + 6 random chars + "/rpc.sock"
        if base.as_os_str().len() + 39 > MAX_SOCKET_PATH {
            base = PathBuf::from("/tmp");
        }
        let dir = tempfile::Builder::new()
            .prefix(&run_dir_prefix(std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&base)
            .map_err(|err| {
                format!(
                    "cannot create a private directory in {}: {err}; check TMPDIR",
                    base.display()
                )
            })?;
        let script = dir.path().join("script.py");
        write_private(&script, code)?;
        write_private(&dir.path().join("herald_tools.py"), stubs)?;
        let socket = dir.path().join("rpc.sock");
        let listener = UnixListener::bind(&socket)
            .map_err(|err| format!("cannot listen on {}: {err}", socket.display()))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|err| format!("cannot restrict {}: {err}", socket.display()))?;
        Ok((
            Self {
                dir,
                script,
                socket,
            },
            listener,
        ))
    }

    /// The directory itself (also the stub module's import path).
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Start of a run directory's name: `herald-exec-<pid>-`, so the
/// directories of herald processes that died mid-run can be found.
fn run_dir_prefix(pid: u32) -> String {
    format!("herald-exec-{pid}-")
}

/// Deletes the run directories in `dir` (the temp directory) that herald
/// processes no longer running left behind. Returns how many were removed.
/// Blocking.
pub fn remove_stale_run_dirs(dir: &Path) -> usize {
    herald_tools::remove_dead_process_entries(dir, "herald-exec-")
}

/// Writes `text` to a new file only the owner can read.
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn run_dirs_of_dead_processes_are_removed_and_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = tmp
            .path()
            .join(format!("{}abc123", super::run_dir_prefix(dead)));
        let live = tmp.path().join(format!(
            "{}abc123",
            super::run_dir_prefix(std::process::id())
        ));
        for dir in [&stale, &live] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("script.py"), "x").unwrap();
        }
        std::fs::create_dir(tmp.path().join("herald-exec-notapid")).unwrap();
        assert_eq!(super::remove_stale_run_dirs(tmp.path()), 1);
        assert!(!stale.exists());
        assert!(live.exists());
    }

    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[tokio::test]
    async fn files_and_socket_are_private_and_removed() {
        let (ws, listener) = Workspace::create("print(1)\n", "# stubs\n").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(ws.dir()), 0o700);
        assert_eq!(mode(&ws.script), 0o600);
        assert_eq!(mode(&ws.dir().join("herald_tools.py")), 0o600);
        assert_eq!(mode(&ws.socket), 0o600);
        assert_eq!(std::fs::read_to_string(&ws.script).unwrap(), "print(1)\n");
        let dir = ws.dir().to_owned();
        drop(listener);
        drop(ws);
        assert!(!dir.exists());
    }
}
