//! Filesystem helpers shared by memory and skills: atomic replacement,
//! an exclusive lock file, and running blocking work off the async runtime.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use herald_tools::ToolError;

/// Replaces `path` with `bytes` atomically: a temporary file in the same
/// directory is written, flushed to disk and renamed over the target, so a
/// reader sees either the old or the new content, never a mix.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".herald-tmp-")
        .tempfile_in(parent)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// An exclusive advisory lock held until dropped. Every process that changes
/// the guarded file takes the same lock first, so read-modify-write cycles of
/// concurrent sessions never interleave.
pub(crate) struct LockGuard {
    file: File,
}

impl LockGuard {
    /// Blocks until the lock on `lock_path` (created if missing) is ours.
    pub(crate) fn acquire(lock_path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = lock_path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path)?;
        file.lock()?;
        Ok(Self { file })
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the file releases the lock as well; unlocking first makes
        // the release immediate even if the descriptor were shared.
        let _ = self.file.unlock();
    }
}

/// Runs blocking filesystem work (locks, reads, renames) on tokio's blocking
/// pool so a waiting lock never stalls other tasks.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::new(format!("the file operation failed: {e}")))?
}

/// `1496` → `1,496`: usage figures read more easily with separators.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1496), "1,496");
        assert_eq!(thousands(2_200_000), "2,200,000");
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/f.md");
        atomic_write(&path, b"one").unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(
            std::fs::read_dir(dir.path().join("sub")).unwrap().count(),
            1
        );
    }

    #[test]
    fn lock_is_exclusive_between_handles() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("x.lock");
        let held = LockGuard::acquire(&lock).unwrap();
        let other = File::options().write(true).open(&lock).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        assert!(other.try_lock().is_ok());
    }
}
