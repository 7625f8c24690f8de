//! The `write_file` tool: create or overwrite a file atomically.

use schemars::JsonSchema;
use serde::Deserialize;

use super::atomic::atomic_write;
use super::fsutil::{FILE_TOOL_TIMEOUT, line_count, not_regular, run_blocking};
use crate::{ToolContext, ToolError, TypedTool};

/// The `write_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteFile;

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct WriteFileArgs {
    /// File path, absolute or relative to the current directory.
    #[schemars(description = "")]
    pub path: String,
    /// The complete new content of the file.
    #[schemars(description = "")]
    pub content: String,
}

impl TypedTool for WriteFile {
    type Args = WriteFileArgs;
    const NAME: &'static str = "write_file";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Create or overwrite a whole file (atomic; creates parent directories). Prefer patch for edits.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: WriteFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let path = ctx.state.resolve(&args.path);
        ctx.state.note_written(&path);
        let shown = args.path;
        let content = args.content;
        if let Some(files) = ctx.state.file_backend() {
            crate::backend::write_through(&ctx.state, files.as_ref(), &path, &content)
                .await
                .map_err(|e| ToolError::new(format!("could not write {shown}: {e}")))?;
            return Ok(format!(
                "Wrote {shown}: {} bytes, {} lines",
                content.len(),
                line_count(&content)
            ));
        }
        let tracker = ctx.state.file_tracker();
        run_blocking(ctx, Self::NAME, FILE_TOOL_TIMEOUT, move |_| {
            // `stat` never blocks, and the write never opens the target (it
            // renames a new file over it), so a special file swapped in after
            // this check is replaced, not waited on.
            let existed = match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => {
                    return Err(ToolError::new(format!(
                        "{shown} is a directory; pass a file path"
                    )));
                }
                Ok(meta) if !meta.is_file() => return Err(not_regular(&shown, &meta)),
                Ok(_) => true,
                Err(_) => false,
            };
            if let Some(tracker) = &tracker {
                tracker.writing(&path, content.as_bytes());
            }
            let written = atomic_write(&path, content.as_bytes());
            if let Some(tracker) = &tracker {
                tracker.written(&path, written.is_ok());
            }
            written.map_err(|e| ToolError::new(format!("could not write {shown}: {e}")))?;
            Ok(format!(
                "{} {shown}: {} bytes, {} lines",
                if existed { "Overwrote" } else { "Created" },
                content.len(),
                line_count(&content)
            ))
        })
        .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use herald_protocol::ToolCall;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::AgentState;
    use crate::builtin::default_registry;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(AgentState::new(dir.to_path_buf()), CancellationToken::new())
    }

    #[tokio::test]
    async fn creates_parents_and_reports_size() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let args = WriteFileArgs {
            path: "a/b/c.txt".into(),
            content: "one\ntwo\n".into(),
        };
        let out = WriteFile.run(args, &ctx).await.unwrap();
        assert_eq!(out, "Created a/b/c.txt: 8 bytes, 2 lines");
        let path = tmp.path().join("a/b/c.txt");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[tokio::test]
    async fn overwrites_keeping_permissions_and_leaves_no_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let args = WriteFileArgs {
            path: "run.sh".into(),
            content: "new".into(),
        };
        let out = WriteFile.run(args, &ctx(tmp.path())).await.unwrap();
        assert!(out.starts_with("Overwrote run.sh"), "{out}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn special_files_are_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let sock = tmp.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let ctx = ctx(tmp.path());
        for (path, kind) in [
            ("pipe", "FIFO"),
            ("sock", "socket"),
            ("/dev/null", "character device"),
        ] {
            let args = WriteFileArgs {
                path: path.into(),
                content: "x".into(),
            };
            let err = WriteFile.run(args, &ctx).await.unwrap_err();
            assert!(
                err.0
                    .starts_with(&format!("not a regular file: {path} is ")),
                "{err}"
            );
            assert!(err.0.contains(kind), "{err}");
        }
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(std::fs::metadata(&sock).unwrap().file_type().is_socket());
    }

    #[tokio::test]
    async fn directory_target_is_an_error_through_the_registry() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        let registry = default_registry(10_000);
        let call = ToolCall {
            id: "1".into(),
            name: "write_file".into(),
            arguments: r#"{"path": "d", "content": "x"}"#.into(),
        };
        let result = registry.execute(&call, &ctx(tmp.path())).await;
        assert!(result.is_error);
        assert!(
            result.content.contains("d is a directory"),
            "{}",
            result.content
        );
        let call = ToolCall {
            id: "2".into(),
            name: "write_file".into(),
            arguments: r#"{"path": "f"}"#.into(),
        };
        let result = registry.execute(&call, &ctx(tmp.path())).await;
        assert!(
            result
                .content
                .contains("missing required parameter 'content'")
        );
    }
}
