//! A directory for tests that need a place outside every temp directory:
//! the sandbox always lets confined commands write to `/tmp`, `/var/tmp`,
//! `/dev/shm` and `$TMPDIR`, and the permission policy counts them as
//! writable, so "outside the workspace" must be somewhere else.

use std::path::{Path, PathBuf};

/// Whether `path` lies below a temp directory.
pub fn is_under_temp(path: &Path) -> bool {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut roots = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ];
    if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        roots.push(PathBuf::from(tmp));
    }
    roots.iter().any(|root| {
        let root = root.canonicalize().unwrap_or_else(|_| root.clone());
        path.starts_with(root)
    })
}

/// A base directory outside every temp directory: `preferred` (pass
/// `env!("CARGO_TARGET_TMPDIR")`) unless the checkout itself is under a temp
/// directory, else `$HOME/.cache/herald-tests`. Panics, saying why, when
/// neither qualifies.
pub fn dir_outside_temp(preferred: &Path) -> PathBuf {
    std::fs::create_dir_all(preferred).ok();
    if !is_under_temp(preferred) {
        return preferred.to_path_buf();
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Some(home) = home.filter(|h| h.is_absolute() && !is_under_temp(h)) else {
        panic!(
            "these tests need a directory outside /tmp, /var/tmp and $TMPDIR: the target dir {} \
             is under one and $HOME is unset or under one too; set HOME or build elsewhere",
            preferred.display()
        );
    };
    let base = home.join(".cache").join("herald-tests");
    if let Err(err) = std::fs::create_dir_all(&base) {
        panic!("cannot create {}: {err}", base.display());
    }
    base
}
