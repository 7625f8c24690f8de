//! File helpers shared by the file tools: atomic writes and blocking work
//! moved off the async runtime.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::ToolError;

/// Runs blocking filesystem work on tokio's blocking pool.
pub async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::new(format!("the file operation failed: {e}")))?
}

/// Replaces `path` with `bytes` atomically: a temporary file in the same
/// directory is written and renamed over it. Parent directories are created;
/// a symlink is written through to its target; an existing file keeps its
/// permissions (new files get 0644).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(_) => path.to_path_buf(),
    };
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let mode = std::fs::metadata(&target).map_or(0o644, |m| m.permissions().mode());
    let mut tmp = tempfile::NamedTempFile::new_in(&parent)?;
    tmp.write_all(bytes)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Number of lines in `text` (a final line without newline counts).
pub fn line_count(text: &str) -> usize {
    text.lines().count()
}
