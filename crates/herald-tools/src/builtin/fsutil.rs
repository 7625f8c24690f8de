//! File helpers shared by the file tools: blocking work moved off the async
//! runtime (with a time limit and prompt cancellation), and opening files
//! that can never block on a FIFO, socket or device.

use std::fs::{File, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::{ToolContext, ToolError};

/// Time limit of `read_file`, `write_file` and `patch`.
pub const FILE_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Time limit of `search_files` (it may walk a large tree).
pub const SEARCH_TIMEOUT: Duration = Duration::from_secs(120);

/// Set when the async side stopped waiting (timeout or interrupt); long loops
/// on the worker thread check it and stop early.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Whether the caller has given up on this work.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err` once the caller has given up; for `?` in I/O loops.
    pub fn check(&self) -> std::io::Result<()> {
        if self.is_set() {
            Err(std::io::Error::other("the file tool call was stopped"))
        } else {
            Ok(())
        }
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs blocking filesystem work for the tool `tool` on a dedicated thread
/// and waits at most `limit` for it.
///
/// The call returns as soon as `ctx.cancel` fires or the limit passes, even
/// if the thread is stuck in a system call: the thread is detached (not on
/// tokio's blocking pool, whose shutdown would wait for it), so it can never
/// keep the process from exiting. The work gets a [`Stop`] to end loops early.
pub async fn run_blocking<T, F>(
    ctx: &ToolContext,
    tool: &'static str,
    limit: Duration,
    work: F,
) -> Result<T, ToolError>
where
    F: FnOnce(&Stop) -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    let stop = Stop::default();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let worker_stop = stop.clone();
    run_detached(Box::new(move || {
        let _ = tx.send(work(&worker_stop));
    }))
    .map_err(|e| ToolError::new(format!("{tool} could not start its worker thread: {e}")))?;
    // Whatever happens below, a worker still running is told to stop.
    let _guard = StopOnDrop(stop);
    tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => Err(ToolError::new(format!(
            "interrupted: the user stopped this {tool} call before it finished"
        ))),
        result = rx => result.map_err(|_| {
            ToolError::new(format!("{tool} failed: its worker thread ended without a result"))
        })?,
        () = tokio::time::sleep(limit) => Err(ToolError::new(format!(
            "{tool} timed out after {} s (its time limit): the file system did not answer in time. \
             Try a smaller file, range or directory, or inspect it with terminal.",
            limit.as_secs_f64()
        ))),
    }
}

/// A job for a file worker thread.
type Job = Box<dyn FnOnce() + Send>;

/// How long an idle worker thread waits for work before it ends.
const WORKER_IDLE: Duration = Duration::from_secs(30);

/// Idle worker threads, each waiting on its own channel.
static IDLE_WORKERS: std::sync::Mutex<Vec<std::sync::mpsc::Sender<Job>>> =
    std::sync::Mutex::new(Vec::new());

/// Runs `job` on a detached worker thread: an idle one when there is one,
/// else a new one. Workers are never joined, so one stuck in the kernel
/// cannot hold up the runtime's shutdown (tokio's blocking pool would); they
/// are reused, so a call does not pay for a thread start.
fn run_detached(mut job: Job) -> std::io::Result<()> {
    loop {
        let idle = IDLE_WORKERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let Some(worker) = idle else { break };
        match worker.send(job) {
            Ok(()) => return Ok(()),
            // That worker ended (idle too long): try the next one.
            Err(std::sync::mpsc::SendError(returned)) => job = returned,
        }
    }
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let me = tx.clone();
    let _ = tx.send(job);
    std::thread::Builder::new()
        .name("herald-fs".into())
        .spawn(move || {
            while let Ok(job) = rx.recv_timeout(WORKER_IDLE) {
                job();
                IDLE_WORKERS
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(me.clone());
            }
        })
        .map(|_| ())
}

struct StopOnDrop(Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// What kind of special file `meta` describes, for error messages.
fn special_kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// The error for a path that exists but is not a regular file or directory.
pub fn not_regular(shown: &str, meta: &Metadata) -> ToolError {
    ToolError::new(format!(
        "not a regular file: {shown} is {}; the file tools only read and write regular files \
         (reading it could block forever). Use terminal if you really need to interact with it.",
        special_kind(meta)
    ))
}

/// The error for a path that does not exist or cannot be inspected.
pub fn stat_error(shown: &str, path: &Path, err: &std::io::Error) -> ToolError {
    match err.kind() {
        ErrorKind::NotFound => ToolError::new(format!(
            "file not found: {shown} (resolved to {}). Check the path, or find the file with \
             search_files(target=\"files\", pattern=\"*name*\").",
            path.display()
        )),
        _ => ToolError::new(format!("cannot read {shown}: {err}")),
    }
}

/// Opens a regular file for reading without ever blocking: the path is
/// checked with `stat` first, then opened with `O_NONBLOCK` (a FIFO swapped in
/// meanwhile opens at once instead of waiting for a writer) and checked again
/// with `fstat`. Directories and special files are errors naming the path.
pub fn open_regular(path: &Path, shown: &str) -> Result<(File, Metadata), ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| stat_error(shown, path, &e))?;
    check_regular(shown, &meta)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits() | nix::fcntl::OFlag::O_NOCTTY.bits())
        .open(path)
        .map_err(|e| stat_error(shown, path, &e))?;
    let meta = file
        .metadata()
        .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
    check_regular(shown, &meta)?;
    Ok((file, meta))
}

fn check_regular(shown: &str, meta: &Metadata) -> Result<(), ToolError> {
    if meta.is_dir() {
        return Err(ToolError::new(format!(
            "{shown} is a directory, not a file. List it with terminal (`ls {shown}`) or \
             search_files(target=\"files\", path=\"{shown}\", pattern=\"*\")."
        )));
    }
    if !meta.is_file() {
        return Err(not_regular(shown, meta));
    }
    Ok(())
}

/// Number of lines in `text` (a final line without newline counts).
pub fn line_count(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::net::UnixListener;
    use std::time::Instant;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::AgentState;

    fn ctx(cancel: CancellationToken) -> ToolContext {
        ToolContext::new(AgentState::new(std::env::temp_dir()), cancel)
    }

    #[test]
    fn special_files_are_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let sock = tmp.path().join("sock");
        let _listener = UnixListener::bind(&sock).unwrap();
        let started = Instant::now();
        for (path, kind) in [
            (fifo.as_path(), "FIFO"),
            (sock.as_path(), "socket"),
            (Path::new("/dev/null"), "character device"),
            (Path::new("/dev/zero"), "character device"),
        ] {
            let err = open_regular(path, "p").unwrap_err();
            assert!(err.0.starts_with("not a regular file: p is "), "{err}");
            assert!(err.0.contains(kind), "{err}");
        }
        assert!(started.elapsed() < Duration::from_secs(2));
        let err = open_regular(tmp.path(), "d").unwrap_err();
        assert!(err.0.contains("d is a directory"), "{err}");
        let err = open_regular(&tmp.path().join("none"), "none").unwrap_err();
        assert!(err.0.starts_with("file not found: none"), "{err}");
        std::fs::write(tmp.path().join("f"), "x").unwrap();
        let (_, meta) = open_regular(&tmp.path().join("f"), "f").unwrap();
        assert_eq!(meta.len(), 1);
    }

    #[test]
    fn nonblocking_open_of_a_fifo_returns_at_once() {
        // The race `open_regular` guards against: the path is a FIFO by the
        // time it is opened. A plain open would wait for a writer forever.
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&fifo)
            .unwrap();
        let err = check_regular("pipe", &file.metadata().unwrap()).unwrap_err();
        assert!(err.0.contains("FIFO"), "{err}");
    }

    #[tokio::test]
    async fn results_and_errors_come_back() {
        let ctx = ctx(CancellationToken::new());
        let out = run_blocking(&ctx, "read_file", FILE_TOOL_TIMEOUT, |_| Ok(7))
            .await
            .unwrap();
        assert_eq!(out, 7);
        let err = run_blocking(&ctx, "read_file", FILE_TOOL_TIMEOUT, |_| {
            Err::<(), _>(ToolError::new("boom"))
        })
        .await
        .unwrap_err();
        assert_eq!(err.0, "boom");
    }

    #[tokio::test]
    async fn a_stuck_call_times_out_with_the_limit_named_and_is_told_to_stop() {
        let ctx = ctx(CancellationToken::new());
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let started = Instant::now();
        let err = run_blocking(&ctx, "patch", Duration::from_millis(200), move |stop| {
            while !stop.is_set() {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = seen_tx.send(());
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(err.0.starts_with("patch timed out after 0.2 s"), "{err}");
        seen_rx.recv_timeout(Duration::from_secs(2)).unwrap();
    }

    #[test]
    fn cancel_returns_at_once_and_a_stuck_thread_does_not_hold_the_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let cancel = CancellationToken::new();
        let ctx = ctx(cancel.clone());
        let started = Instant::now();
        let err = runtime
            .block_on(async {
                let trigger = cancel.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    trigger.cancel();
                });
                // Ignores its Stop, like a thread stuck in a system call.
                run_blocking(&ctx, "read_file", FILE_TOOL_TIMEOUT, |_| {
                    std::thread::sleep(Duration::from_secs(30));
                    Ok(())
                })
                .await
            })
            .unwrap_err();
        assert!(err.0.starts_with("interrupted"), "{err}");
        // Dropping the runtime (what happens when herald exits) must not wait
        // for the stuck thread, as it would for tokio's blocking pool.
        drop(runtime);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}
