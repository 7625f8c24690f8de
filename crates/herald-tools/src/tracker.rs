//! Told what the file tools read and write. herald-core's file watcher keeps
//! what each file held when the agent last saw it, so that a change made by
//! someone else can be told from herald's own writes and reported to the
//! model.

use std::fs::Metadata;
use std::path::Path;

/// Receives what `read_file`, `write_file` and `patch` saw and wrote. The
/// calls come from the file worker threads (never the async runtime), so an
/// implementation may do a little file I/O; it must never fail the tool.
pub trait FileTracker: Send + Sync + std::fmt::Debug {
    /// `path` was read. `content` is the whole file as read and `meta` its
    /// metadata from before the read, when the tool read it whole; `None`
    /// leaves reading it to the tracker.
    fn read(&self, path: &Path, content: Option<&[u8]>, meta: Option<&Metadata>);

    /// herald is about to replace the content of `path` with `content`:
    /// called before the write, so that the change it causes is known as
    /// herald's own whenever it is noticed.
    fn writing(&self, path: &Path, content: &[u8]);

    /// The write announced by [`FileTracker::writing`] ended; `ok` is false
    /// when it failed (the file is as it was).
    fn written(&self, path: &Path, ok: bool);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    use herald_protocol::ToolCall;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::builtin::default_registry;
    use crate::{AgentState, ToolContext};

    /// Every call the file tools make, as text.
    #[derive(Debug, Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl FileTracker for Recorder {
        fn read(&self, path: &Path, content: Option<&[u8]>, meta: Option<&Metadata>) {
            self.0.lock().unwrap().push(format!(
                "read {} {:?} meta={}",
                path.file_name().unwrap().to_string_lossy(),
                content.map(String::from_utf8_lossy),
                meta.is_some()
            ));
        }

        fn writing(&self, path: &Path, content: &[u8]) {
            let on_disk = std::fs::read_to_string(path).unwrap_or_default();
            self.0.lock().unwrap().push(format!(
                "writing {} {:?} over {on_disk:?}",
                path.file_name().unwrap().to_string_lossy(),
                String::from_utf8_lossy(content)
            ));
        }

        fn written(&self, path: &Path, ok: bool) {
            self.0.lock().unwrap().push(format!(
                "written {} {ok}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }

    async fn call(ctx: &ToolContext, name: &str, arguments: serde_json::Value) -> String {
        let call = ToolCall {
            id: "1".into(),
            name: name.into(),
            arguments: arguments.to_string(),
        };
        let result = default_registry(10_000).execute(&call, ctx).await;
        result.content
    }

    #[tokio::test]
    async fn the_file_tools_tell_the_tracker_what_they_read_and_write() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(tmp.path().join("bin"), b"\0\x01").unwrap();
        let state = AgentState::new(tmp.path().to_path_buf());
        let recorder = Arc::new(Recorder::default());
        state.set_file_tracker(Arc::clone(&recorder) as Arc<dyn FileTracker>);
        let ctx = ToolContext::new(state, CancellationToken::new());
        call(
            &ctx,
            "read_file",
            serde_json::json!({"path": "a.txt", "limit": 1}),
        )
        .await;
        call(&ctx, "read_file", serde_json::json!({"path": "bin"})).await;
        call(
            &ctx,
            "patch",
            serde_json::json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
        )
        .await;
        call(
            &ctx,
            "write_file",
            serde_json::json!({"path": "b.txt", "content": "b\n"}),
        )
        .await;
        let dir: PathBuf = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        call(
            &ctx,
            "write_file",
            serde_json::json!({"path": "d", "content": "x"}),
        )
        .await;
        assert_eq!(
            *recorder.0.lock().unwrap(),
            [
                "read a.txt Some(\"one\\ntwo\\n\") meta=true",
                "writing a.txt \"one\\n2\\n\" over \"one\\ntwo\\n\"",
                "written a.txt true",
                "writing b.txt \"b\\n\" over \"\"",
                "written b.txt true",
            ],
            "a binary file and a refused write tell nothing"
        );
    }
}
