//! Private working directories: an item with a `cwd` works in its own
//! copy of it, so items running at once never see each other's edits. A
//! git repository becomes a detached worktree of its `HEAD`; any other
//! directory is copied.

use std::path::{Path, PathBuf};

use crate::BatchError;

/// Makes `dest` a private copy of `src` (removing an older `dest` first)
/// and returns it.
pub async fn prepare(src: &Path, dest: &Path) -> Result<PathBuf, BatchError> {
    let (src, dest) = (src.to_path_buf(), dest.to_path_buf());
    if dest.exists() {
        remove(&src, &dest).await?;
    }
    if let Some(parent) = dest.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|err| BatchError::io(parent, err))?;
    }
    if src.join(".git").exists() {
        let output = tokio::process::Command::new("git")
            .arg("-C")
            .arg(&src)
            .args(["worktree", "add", "--detach", "--quiet"])
            .arg(&dest)
            .arg("HEAD")
            .output()
            .await
            .map_err(|err| {
                BatchError::Invalid(format!(
                    "cannot run git for {}: {err}; install git or use a plain directory as `cwd`",
                    src.display()
                ))
            })?;
        if !output.status.success() {
            return Err(BatchError::Invalid(format!(
                "git worktree add of {} failed: {}",
                src.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
    } else {
        let (from, to) = (src.clone(), dest.clone());
        tokio::task::spawn_blocking(move || copy_dir(&from, &to))
            .await
            .map_err(|err| {
                BatchError::Invalid(format!("copying {} stopped: {err}", src.display()))
            })??;
    }
    Ok(dest)
}

/// Removes a finished item's copy `dest` of `src` (`None`: a directory
/// made from nothing): a git worktree is removed through git and the
/// repository's worktree list pruned, anything else deleted. Failures are
/// logged, not returned: the item's result stands either way.
pub async fn cleanup(src: Option<&Path>, dest: &Path) {
    let removed = match src {
        Some(src) => remove(src, dest).await,
        None if dest.exists() => tokio::fs::remove_dir_all(dest)
            .await
            .map_err(|err| BatchError::io(dest, err)),
        None => Ok(()),
    };
    if let Err(err) = removed {
        tracing::warn!("cannot remove the working copy {}: {err}", dest.display());
    }
    if let Some(src) = src
        && src.join(".git").exists()
    {
        let pruned = tokio::process::Command::new("git")
            .arg("-C")
            .arg(src)
            .args(["worktree", "prune"])
            .output()
            .await;
        if let Err(err) = pruned {
            tracing::warn!("cannot prune the worktrees of {}: {err}", src.display());
        }
    }
}

/// Removes an older copy: a worktree through git, else the directory.
async fn remove(src: &Path, dest: &Path) -> Result<(), BatchError> {
    if src.join(".git").exists() {
        let _ = tokio::process::Command::new("git")
            .arg("-C")
            .arg(src)
            .args(["worktree", "remove", "--force"])
            .arg(dest)
            .output()
            .await;
    }
    if dest.exists() {
        tokio::fs::remove_dir_all(dest)
            .await
            .map_err(|err| BatchError::io(dest, err))?;
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), BatchError> {
    std::fs::create_dir_all(to).map_err(|err| BatchError::io(to, err))?;
    let entries = std::fs::read_dir(from).map_err(|err| BatchError::io(from, err))?;
    for entry in entries {
        let entry = entry.map_err(|err| BatchError::io(from, err))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|err| BatchError::io(&path, err))?;
        if kind.is_dir() {
            copy_dir(&path, &target)?;
        } else if kind.is_symlink() {
            let link = std::fs::read_link(&path).map_err(|err| BatchError::io(&path, err))?;
            std::os::unix::fs::symlink(link, &target)
                .map_err(|err| BatchError::io(&target, err))?;
        } else {
            std::fs::copy(&path, &target).map_err(|err| BatchError::io(&path, err))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_plain_directory_is_copied_and_a_second_copy_starts_clean() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir(src.path().join("sub")).unwrap();
        std::fs::write(src.path().join("sub/a.txt"), "a").unwrap();
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("w/1");
        prepare(src.path(), &dest).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.join("sub/a.txt")).unwrap(),
            "a"
        );
        std::fs::write(dest.join("edit.txt"), "x").unwrap();
        prepare(src.path(), &dest).await.unwrap();
        assert!(!dest.join("edit.txt").exists());
        assert!(!src.path().join("edit.txt").exists());
    }
}
