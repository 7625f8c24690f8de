//! Where the file tools read and write and where the `terminal` tool runs a
//! command, when that is not herald's own process. An editor driving herald
//! (over the Agent Client Protocol) can offer its own file system, so that
//! herald reads the unsaved buffers the user sees and its writes land in
//! the editor's undo history, and its own terminals, so that the user
//! watches a command run. A session without such an offer uses the local
//! file system and shell ([`ToolBackends::default`]).
//!
//! The backends sit behind the permission layer: a call reaches them only
//! after the gate allowed it, exactly as a local read or write would.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// Why a backend could not do what was asked; the message is shown to the
/// model as the tool's error, so it says what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct BackendError(pub String);

/// Text files read and written by someone else than this process (the
/// editor that drives the session).
pub trait FileBackend: Send + Sync + std::fmt::Debug {
    /// The whole current text of `path` (an absolute path): for an editor,
    /// the buffer with its unsaved changes.
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, BackendError>>;

    /// Replaces the text of `path` (an absolute path) with `content`,
    /// creating the file when it does not exist.
    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<(), BackendError>>;
}

/// One foreground command for a [`CommandBackend`].
#[derive(Debug, Clone)]
pub struct CommandRequest {
    /// The bash command line.
    pub command: String,
    /// The absolute directory it runs in.
    pub cwd: PathBuf,
    /// Seconds before it is killed.
    pub timeout_secs: u64,
    /// Bytes of output kept (the newest, when it writes more).
    pub output_limit: usize,
    /// The tool call the command belongs to, so the front end can show its
    /// terminal in that call.
    pub call_id: String,
}

/// How a command run by a [`CommandBackend`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandEnd {
    /// It exited with this code (`None` when a signal ended it).
    Exited(Option<i32>),
    /// It ran past its timeout and was killed.
    TimedOut,
    /// The call was cancelled and the command killed.
    Cancelled,
}

/// What a command run by a [`CommandBackend`] left.
#[derive(Debug, Clone)]
pub struct CommandOutcome {
    /// stdout and stderr as the terminal showed them.
    pub output: String,
    /// Whether older output was dropped to keep within the limit.
    pub truncated: bool,
    /// How it ended.
    pub end: CommandEnd,
}

/// Foreground commands run somewhere the user watches (an editor's
/// terminal panel) instead of in a pipe of this process.
pub trait CommandBackend: Send + Sync + std::fmt::Debug {
    /// Runs `request` to its end, killing it when `cancel` fires or its
    /// timeout passes.
    fn run<'a>(
        &'a self,
        request: CommandRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<CommandOutcome, BackendError>>;
}

/// The backends one agent's tools use; `None` means herald's own (the
/// default).
#[derive(Debug, Clone, Default)]
pub struct ToolBackends {
    /// Where `read_file`, `write_file` and `patch` read and write.
    pub files: Option<Arc<dyn FileBackend>>,
    /// Where `terminal` runs foreground commands that are not sandboxed.
    pub commands: Option<Arc<dyn CommandBackend>>,
}

/// Writes `content` to `path` through `files`, telling the session's file
/// tracker before and after (as a local write does), so the change the
/// editor makes on disk is known as herald's own and is not reported back
/// to the model as someone else's edit.
pub(crate) async fn write_through(
    state: &crate::AgentState,
    files: &dyn FileBackend,
    path: &Path,
    content: &str,
) -> Result<(), BackendError> {
    let tracker = state.file_tracker();
    if let Some(tracker) = &tracker {
        tracker.writing(path, content.as_bytes());
    }
    let written = files.write_text(path, content).await;
    if let Some(tracker) = &tracker {
        tracker.written(path, written.is_ok());
    }
    written
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use futures_util::FutureExt;
    use herald_protocol::ToolCall;
    use serde_json::{Value, json};

    use super::*;
    use crate::builtin::default_registry;
    use crate::{AgentState, ToolContext};

    /// An editor's buffers: reads come from them (or fail), writes go into
    /// them; every request is recorded.
    #[derive(Debug, Default)]
    struct Buffers {
        text: Mutex<HashMap<PathBuf, String>>,
        log: Mutex<Vec<String>>,
        refuse_writes: bool,
    }

    impl FileBackend for Buffers {
        fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, BackendError>> {
            async move {
                self.log
                    .lock()
                    .unwrap()
                    .push(format!("read {}", path.display()));
                self.text
                    .lock()
                    .unwrap()
                    .get(path)
                    .cloned()
                    .ok_or_else(|| BackendError("no such buffer".into()))
            }
            .boxed()
        }

        fn write_text<'a>(
            &'a self,
            path: &'a Path,
            content: &'a str,
        ) -> BoxFuture<'a, Result<(), BackendError>> {
            async move {
                self.log
                    .lock()
                    .unwrap()
                    .push(format!("write {}", path.display()));
                if self.refuse_writes {
                    return Err(BackendError("the buffer is read-only".into()));
                }
                self.text
                    .lock()
                    .unwrap()
                    .insert(path.to_path_buf(), content.to_owned());
                Ok(())
            }
            .boxed()
        }
    }

    /// A terminal that answers every command with a fixed outcome.
    #[derive(Debug)]
    struct Watched {
        end: CommandEnd,
        seen: Mutex<Vec<CommandRequest>>,
    }

    impl CommandBackend for Watched {
        fn run<'a>(
            &'a self,
            request: CommandRequest,
            _cancel: &'a CancellationToken,
        ) -> BoxFuture<'a, Result<CommandOutcome, BackendError>> {
            async move {
                let output = format!("ran {}", request.command);
                self.seen.lock().unwrap().push(request);
                Ok(CommandOutcome {
                    output,
                    truncated: false,
                    end: self.end.clone(),
                })
            }
            .boxed()
        }
    }

    async fn call(ctx: &ToolContext, name: &str, arguments: Value) -> (String, bool) {
        let call = ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: arguments.to_string(),
        };
        let result = default_registry(10_000).execute(&call, ctx).await;
        (result.content, result.is_error)
    }

    fn with_files(dir: &Path, files: Arc<Buffers>) -> ToolContext {
        let state = AgentState::new(dir.to_path_buf());
        state.set_backends(ToolBackends {
            files: Some(files),
            commands: None,
        });
        ToolContext::new(state, CancellationToken::new())
    }

    #[tokio::test]
    async fn the_file_tools_read_and_write_through_the_backend_not_the_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.txt");
        std::fs::write(&path, "on disk\n").unwrap();
        let buffers = Arc::new(Buffers::default());
        buffers
            .text
            .lock()
            .unwrap()
            .insert(path.clone(), "unsaved one\nunsaved two\n".into());
        let ctx = with_files(tmp.path(), Arc::clone(&buffers));

        let (read, failed) = call(&ctx, "read_file", json!({"path": "a.txt", "offset": 2})).await;
        assert!(!failed, "{read}");
        assert_eq!(read, "2|unsaved two\n[lines 2-2 of 2; end of file]");
        let (patched, failed) = call(
            &ctx,
            "patch",
            json!({"path": "a.txt", "old_string": "unsaved two", "new_string": "edited"}),
        )
        .await;
        assert!(
            !failed && patched.starts_with("Patched a.txt: 1 replacement"),
            "{patched}"
        );
        let (wrote, failed) = call(
            &ctx,
            "write_file",
            json!({"path": "new/b.txt", "content": "b\n"}),
        )
        .await;
        assert!(!failed, "{wrote}");
        assert_eq!(wrote, "Wrote new/b.txt: 2 bytes, 1 lines");

        let text = buffers.text.lock().unwrap().clone();
        assert_eq!(text[&path], "unsaved one\nedited\n");
        assert_eq!(text[&tmp.path().join("new/b.txt")], "b\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "on disk\n");
        assert!(!tmp.path().join("new").exists());
    }

    /// A tracker that records what it is told, in order.
    #[derive(Debug, Default)]
    struct Told(Mutex<Vec<String>>);

    impl crate::FileTracker for Told {
        fn read(&self, path: &Path, _: Option<&[u8]>, _: Option<&std::fs::Metadata>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("read {}", path.display()));
        }
        fn writing(&self, path: &Path, content: &[u8]) {
            self.0.lock().unwrap().push(format!(
                "writing {} {}",
                path.display(),
                String::from_utf8_lossy(content).trim()
            ));
        }
        fn written(&self, path: &Path, ok: bool) {
            self.0
                .lock()
                .unwrap()
                .push(format!("written {} {ok}", path.display()));
        }
    }

    #[tokio::test]
    async fn writes_through_the_editor_are_announced_to_the_file_tracker() {
        let tmp = tempfile::tempdir().unwrap();
        let buffers = Arc::new(Buffers::default());
        let ctx = with_files(tmp.path(), Arc::clone(&buffers));
        let told = Arc::new(Told::default());
        ctx.state
            .set_file_tracker(Arc::clone(&told) as Arc<dyn crate::FileTracker>);
        let (wrote, failed) = call(
            &ctx,
            "write_file",
            json!({"path": "a.txt", "content": "one\n"}),
        )
        .await;
        assert!(!failed, "{wrote}");
        let (patched, failed) = call(
            &ctx,
            "patch",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        )
        .await;
        assert!(!failed, "{patched}");
        let a = tmp.path().join("a.txt");
        let a = a.display();
        assert_eq!(
            *told.0.lock().unwrap(),
            [
                format!("writing {a} one"),
                format!("written {a} true"),
                format!("writing {a} two"),
                format!("written {a} true"),
            ]
        );
        // A refused write is announced as failed.
        let refusing = Arc::new(Buffers {
            refuse_writes: true,
            ..Buffers::default()
        });
        let ctx = with_files(tmp.path(), refusing);
        let told = Arc::new(Told::default());
        ctx.state
            .set_file_tracker(Arc::clone(&told) as Arc<dyn crate::FileTracker>);
        let (_, failed) = call(&ctx, "write_file", json!({"path": "a.txt", "content": "x"})).await;
        assert!(failed);
        assert_eq!(
            told.0.lock().unwrap().last().unwrap(),
            &format!("written {a} false")
        );
    }

    #[tokio::test]
    async fn backend_failures_and_bad_edits_are_tool_errors_that_change_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.txt");
        let buffers = Arc::new(Buffers {
            refuse_writes: true,
            ..Buffers::default()
        });
        buffers
            .text
            .lock()
            .unwrap()
            .insert(path.clone(), "one\n".into());
        let ctx = with_files(tmp.path(), Arc::clone(&buffers));

        let (out, failed) = call(&ctx, "read_file", json!({"path": "gone.txt"})).await;
        assert!(failed);
        assert!(
            out.contains("cannot read gone.txt: no such buffer"),
            "{out}"
        );
        let (out, failed) = call(
            &ctx,
            "patch",
            json!({"path": "a.txt", "old_string": "absent", "new_string": "x"}),
        )
        .await;
        assert!(failed && out.contains("old_string"), "{out}");
        let (out, failed) = call(
            &ctx,
            "write_file",
            json!({"path": "a.txt", "content": "two\n"}),
        )
        .await;
        assert!(failed);
        assert!(
            out.contains("could not write a.txt: the buffer is read-only"),
            "{out}"
        );
        let (out, failed) = call(&ctx, "read_file", json!({"path": "a.txt", "offset": 9})).await;
        assert!(
            failed && out.contains("offset 9 is beyond the end"),
            "{out}"
        );
        assert_eq!(buffers.text.lock().unwrap()[&path], "one\n");
        // The failed patch never wrote; only the write_file call tried.
        let log = buffers.log.lock().unwrap().clone();
        assert_eq!(
            log.iter().filter(|l| l.starts_with("write")).count(),
            1,
            "{log:?}"
        );
        assert!(!path.exists());
    }

    fn with_terminal(dir: &Path, end: CommandEnd) -> (ToolContext, Arc<Watched>) {
        let watched = Arc::new(Watched {
            end,
            seen: Mutex::default(),
        });
        let state = AgentState::new(dir.to_path_buf());
        state.set_backends(ToolBackends {
            files: None,
            commands: Some(Arc::clone(&watched) as Arc<dyn CommandBackend>),
        });
        let ctx = ToolContext::new(state, CancellationToken::new())
            .with_call("call_1", Arc::new(default_registry(10_000)));
        (ctx, watched)
    }

    #[tokio::test]
    async fn unconfined_commands_run_through_the_backend_with_their_call() {
        let tmp = tempfile::tempdir().unwrap();
        let (ctx, watched) = with_terminal(tmp.path(), CommandEnd::Exited(Some(3)));
        let (out, failed) = call(&ctx, "terminal", json!({"command": "make", "timeout": 9})).await;
        assert!(!failed, "{out}");
        let out: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(out, json!({"output": "ran make", "exit_code": 3}));
        let seen = watched.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].cwd, tmp.path());
        assert_eq!(seen[0].timeout_secs, 9);
        assert_eq!(seen[0].call_id, "call_1");

        for (end, says) in [
            (CommandEnd::TimedOut, "timed out after 180s"),
            (CommandEnd::Cancelled, "interrupted"),
        ] {
            let (ctx, _) = with_terminal(tmp.path(), end);
            let (out, failed) = call(&ctx, "terminal", json!({"command": "make"})).await;
            assert!(failed && out.contains(says), "{out}");
        }
    }

    #[tokio::test]
    async fn confined_background_and_empty_commands_never_reach_the_backend() {
        let tmp = tempfile::tempdir().unwrap();
        let (ctx, watched) = with_terminal(tmp.path(), CommandEnd::Exited(Some(0)));
        let (out, failed) = call(&ctx, "terminal", json!({"command": "  "})).await;
        assert!(failed && out.contains("command is empty"), "{out}");
        let (out, failed) = call(
            &ctx,
            "terminal",
            json!({"command": "true", "background": true}),
        )
        .await;
        assert!(!failed && out.contains("process_id"), "{out}");
        // Confined by the sandbox: it runs here (or not at all where the
        // kernel cannot confine it), never in the backend's terminal.
        let mut confined = ctx.clone();
        confined.sandbox = Some(Arc::new(herald_sandbox::SandboxPolicy {
            writable_roots: vec![tmp.path().to_path_buf()],
            network: false,
        }));
        let (out, _) = call(&confined, "terminal", json!({"command": "echo here"})).await;
        assert!(!out.contains("ran echo"), "{out}");
        assert!(watched.seen.lock().unwrap().is_empty());
        ctx.state.processes.kill_all();
    }
}
