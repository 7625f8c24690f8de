//! Atomic file replacement and the temporary files it leaves behind when a
//! process dies mid-write.
//!
//! A write goes to `.<name>.herald-tmp-<pid>-<random>` in the target's
//! directory, is flushed to disk (`fsync`), renamed over the target, and the
//! directory is synced. If the process dies before the rename, that temporary
//! file stays; [`remove_stale_temp_files`] deletes the ones whose `<pid>` is
//! no longer a running process.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The part of every temporary file name that marks it as herald's:
/// `.<name>` + this + `<pid>-<random>`.
pub const TEMP_FILE_MARKER: &str = ".herald-tmp-";

/// Longest piece of the target's name kept in a temporary file's name, so the
/// whole name stays under the 255-byte limit of common file systems.
const MAX_NAME_IN_TEMP: usize = 100;

/// Replaces `path` with `bytes` atomically: a temporary file in the same
/// directory is written, synced and renamed over it, then the directory is
/// synced. Parent directories are created; a symlink is written through to its
/// target; an existing file keeps its permissions (new files get 0644).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(_) => path.to_path_buf(),
    };
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let mode = std::fs::metadata(&target).map_or(0o644, |m| m.permissions().mode());
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(&name))
        .suffix("")
        .rand_bytes(8)
        .tempfile_in(&parent)?;
    tmp.write_all(bytes)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    tmp.persist(&target).map_err(|e| e.error)?;
    // Makes the rename itself durable. Some file systems cannot sync a
    // directory; the data is already safe, so that is not an error.
    if let Ok(dir) = std::fs::File::open(&parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// `.<name>.herald-tmp-<pid>-`: what a temporary file for `name` starts with
/// (the random part follows).
fn temp_prefix(name: &str) -> String {
    let mut cut = name.len().min(MAX_NAME_IN_TEMP);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(".{}{TEMP_FILE_MARKER}{}-", &name[..cut], std::process::id())
}

/// The process id in a temporary file name made by [`atomic_write`], if the
/// name is one.
fn temp_file_pid(name: &str) -> Option<u32> {
    if !name.starts_with('.') {
        return None;
    }
    let (_, rest) = name.rsplit_once(TEMP_FILE_MARKER)?;
    let (pid, random) = rest.split_once('-')?;
    if pid.is_empty()
        || !pid.bytes().all(|b| b.is_ascii_digit())
        || random.is_empty()
        || !random.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process with id `pid` exists (signal 0 probe; a process of
/// another user counts as alive).
fn process_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(errno) => errno != nix::errno::Errno::ESRCH,
    }
}

/// Deletes the temporary files that herald's atomic writes left in `dir` (not
/// its subdirectories) when the writing process died before renaming them:
/// regular files named `.<name>.herald-tmp-<pid>-<random>` whose `<pid>` is
/// no longer a running process. Files of live processes (including this one)
/// are kept, as they may be mid-write. Returns the paths removed.
///
/// The session runtime calls this at start-up for the directories it writes
/// in; a file that cannot be removed is skipped.
pub fn remove_stale_temp_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_file_pid) else {
            continue;
        };
        if !entry.file_type().is_ok_and(|t| t.is_file()) || process_alive(pid) {
            continue;
        }
        let path = entry.path();
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A pid that belongs to no process: a child that has been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid));
        pid
    }

    #[test]
    fn temp_names_carry_the_marker_and_pid() {
        let prefix = temp_prefix("notes.txt");
        assert_eq!(
            prefix,
            format!(".notes.txt.herald-tmp-{}-", std::process::id())
        );
        assert_eq!(
            temp_file_pid(&format!("{prefix}a1B2c3D4")),
            Some(std::process::id())
        );
        let long = "é".repeat(200);
        let prefix = temp_prefix(&long);
        assert!(prefix.len() < 140, "{}", prefix.len());
        assert!(temp_file_pid(&format!("{prefix}abc")).is_some());
        for name in [
            "notes.txt",
            "notes.herald-tmp-12-abc",
            ".notes.herald-tmp--abc",
            ".notes.herald-tmp-12-",
            ".notes.herald-tmp-1x2-abc",
            ".notes.herald-tmp-12-a.b",
        ] {
            assert_eq!(temp_file_pid(name), None, "{name}");
        }
    }

    #[test]
    fn atomic_write_syncs_renames_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sub/f.txt");
        atomic_write(&path, b"one").unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(tmp.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f.txt"]);
    }

    #[test]
    fn stale_temp_files_of_dead_processes_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let dead = dead_pid();
        let own = std::process::id();
        let stale = dir.join(format!(".a.rs.herald-tmp-{dead}-Xy12ab34"));
        let live = dir.join(format!(".b.rs.herald-tmp-{own}-Xy12ab34"));
        let init = dir.join(".c.rs.herald-tmp-1-Xy12ab34");
        let unrelated = dir.join(format!(".d.rs.tmp-{dead}-Xy12ab34"));
        let plain = dir.join("a.rs");
        for path in [&stale, &live, &init, &unrelated, &plain] {
            std::fs::write(path, "x").unwrap();
        }
        // A directory with the pattern is not touched.
        let stale_dir = dir.join(format!(".e.herald-tmp-{dead}-Xy12ab34"));
        std::fs::create_dir(&stale_dir).unwrap();
        // Nor is a stale-looking file in a subdirectory.
        std::fs::create_dir(dir.join("sub")).unwrap();
        let nested = dir.join(format!("sub/.f.herald-tmp-{dead}-Xy12ab34"));
        std::fs::write(&nested, "x").unwrap();

        let removed = remove_stale_temp_files(dir).unwrap();
        assert_eq!(removed, vec![stale.clone()]);
        assert!(!stale.exists());
        for kept in [&live, &init, &unrelated, &plain, &stale_dir, &nested] {
            assert!(kept.exists(), "{}", kept.display());
        }
        assert!(remove_stale_temp_files(dir).unwrap().is_empty());
        assert!(remove_stale_temp_files(&dir.join("missing")).is_err());
    }
}
