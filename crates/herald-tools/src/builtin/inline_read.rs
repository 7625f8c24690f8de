//! Reading a small file on the calling thread when that cannot block.
//!
//! `read_file` normally runs on a file worker thread (see
//! [`super::fsutil::run_blocking`]): a read may wait on a disk, a hung
//! network file system or a FUSE server, and the async runtime must not.
//! Handing every read to another thread and back costs two wake-ups, which
//! on a small file cached in memory is most of the call. So a read runs
//! inline when every step provably stays in memory on this machine:
//!
//! - the directory it is resolved under was opened by a worker before and
//!   found to be on a local file system ([`prove_local`]), so walking to it
//!   again touches nothing remote;
//! - the rest of the path is resolved with `openat2(RESOLVE_NO_XDEV)`,
//!   which fails rather than cross into another mount (through `..` or a
//!   symbolic link alike), so it stays on that local file system;
//! - it is a regular file of at most [`INLINE_MAX_BYTES`];
//! - its bytes are read with `preadv2(RWF_NOWAIT)`, which fails rather
//!   than wait for a disk when any of them is not in the page cache.
//!
//! Anything else (a path outside a proven directory, another mount, a
//! special or large file, data not cached, a kernel without `openat2`)
//! answers `None`, and the caller hands the read to a worker as before, which
//! also produces the proper error for a path that cannot be read.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use nix::fcntl::{OFlag, OpenHow, ResolveFlag, open, openat2};
use nix::sys::stat::{Mode, SFlag, fstat};
use nix::sys::statfs::fstatfs;

/// The largest file read inline: copying and numbering it takes well under
/// a tenth of a millisecond, which the runtime thread can afford.
pub const INLINE_MAX_BYTES: u64 = 256 * 1024;

/// Directories a worker has opened and checked: `true` when on a local
/// file system. Bounded, since `cd` can move the working directory around.
static ROOTS: Mutex<Option<HashMap<PathBuf, bool>>> = Mutex::new(None);

/// How many directories [`ROOTS`] remembers; later ones are not proven and
/// their reads go to a worker.
const MAX_ROOTS: usize = 64;

/// Whether `dir` was checked already (local or not); cheap, for deciding
/// whether a worker should call [`prove_local`].
pub fn is_checked(dir: &Path) -> bool {
    ROOTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .is_some_and(|roots| roots.contains_key(dir))
}

/// Opens `dir` and records whether it is on a local file system. Blocking:
/// for a worker thread only (a directory on a hung server blocks here, on
/// the worker, where that is harmless).
pub fn prove_local(dir: &Path) {
    if is_checked(dir) {
        return;
    }
    let local = open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .ok()
    .and_then(|fd| fstatfs(&fd).ok())
    .is_some_and(|info| crate::is_local_file_system(info.filesystem_type()));
    let mut roots = ROOTS.lock().unwrap_or_else(PoisonError::into_inner);
    let roots = roots.get_or_insert_with(HashMap::new);
    if roots.len() < MAX_ROOTS {
        roots.insert(dir.to_path_buf(), local);
    }
}

/// The bytes of `path`, read on the calling thread, when `path` lies under
/// `root`, `root` was proven local, and the read cannot block (see the
/// module docs); `None` when the read must go to a worker.
pub fn read(root: &Path, path: &Path) -> Option<Vec<u8>> {
    let proven = ROOTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|roots| roots.get(root).copied());
    if proven != Some(true) {
        return None;
    }
    // Relative to `root`. `..` is allowed by RESOLVE_NO_XDEV as long as it
    // stays on the mount; an empty rest (the root itself) is a directory,
    // left to the worker.
    let rest = path.strip_prefix(root).ok()?;
    if rest.as_os_str().is_empty() {
        return None;
    }
    let dir = open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    // The directory may have been replaced by a mount since it was proven.
    if !crate::is_local_file_system(fstatfs(&dir).ok()?.filesystem_type()) {
        return None;
    }
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_XDEV | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let file = openat2(&dir, rest, how).ok()?;
    let stat = fstat(&file).ok()?;
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
        return None;
    }
    let size = u64::try_from(stat.st_size).ok()?;
    if size > INLINE_MAX_BYTES {
        return None;
    }
    read_cached(&file, size)
}

/// Reads the `size` bytes of `file` from the page cache only: `None` when
/// any of them would need the disk, or the file is not `size` bytes long
/// any more (it is being written; the worker reads it as it is then).
fn read_cached(file: &OwnedFd, size: u64) -> Option<Vec<u8>> {
    let size = usize::try_from(size).ok()?;
    // One byte more than expected, to notice a file that grew.
    let mut buf: Vec<u8> = Vec::with_capacity(size + 1);
    let iov = nix::libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: size + 1,
    };
    let read = loop {
        // SAFETY: `iov` points into `buf`'s allocation of `size + 1` bytes,
        // which outlives the call; the kernel writes at most `iov_len`.
        let n = unsafe {
            nix::libc::preadv2(file.as_fd().as_raw_fd(), &iov, 1, 0, nix::libc::RWF_NOWAIT)
        };
        if n >= 0 {
            break usize::try_from(n).ok()?;
        }
        if nix::errno::Errno::last() != nix::errno::Errno::EINTR {
            // EAGAIN: not all cached; EOPNOTSUPP: no RWF_NOWAIT here.
            return None;
        }
    };
    if read != size {
        return None;
    }
    // SAFETY: the kernel initialised the first `read` bytes, and
    // `read <= size + 1`, the capacity.
    unsafe { buf.set_len(read) };
    Some(buf)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn nothing_is_read_inline_under_a_directory_no_worker_checked() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "one\n").unwrap();
        assert!(!is_checked(tmp.path()));
        assert_eq!(read(tmp.path(), &tmp.path().join("a.txt")), None);
        prove_local(tmp.path());
        assert!(is_checked(tmp.path()));
        assert_eq!(
            read(tmp.path(), &tmp.path().join("a.txt")).as_deref(),
            Some(&b"one\n"[..])
        );
        // Only paths under the proven directory.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("b.txt"), "two\n").unwrap();
        assert_eq!(read(tmp.path(), &other.path().join("b.txt")), None);
        assert_eq!(read(other.path(), &other.path().join("b.txt")), None);
    }

    #[test]
    fn a_path_into_another_mount_is_left_to_the_worker() {
        let tmp = tempfile::tempdir().unwrap();
        prove_local(tmp.path());
        // /proc is its own mount on every Linux system.
        std::os::unix::fs::symlink("/proc/self/status", tmp.path().join("status")).unwrap();
        std::os::unix::fs::symlink("/proc", tmp.path().join("proc")).unwrap();
        assert!(std::fs::read(tmp.path().join("status")).is_ok());
        assert_eq!(read(tmp.path(), &tmp.path().join("status")), None);
        assert_eq!(read(tmp.path(), &tmp.path().join("proc/version")), None);
        // `..` up and out to /proc is another mount too.
        let dots = "../".repeat(tmp.path().components().count() + 1);
        let via_dots = tmp.path().join(format!("{dots}proc/version"));
        assert!(std::fs::read(&via_dots).is_ok());
        assert_eq!(read(tmp.path(), &via_dots), None);
        // A link that stays on the mount is followed.
        std::fs::write(tmp.path().join("real.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real.txt", tmp.path().join("link.txt")).unwrap();
        assert_eq!(
            read(tmp.path(), &tmp.path().join("link.txt")).as_deref(),
            Some(&b"x"[..])
        );
    }

    #[test]
    fn special_large_and_missing_files_are_left_to_the_worker_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        prove_local(tmp.path());
        let fifo = tmp.path().join("pipe");
        nix::unistd::mkfifo(&fifo, Mode::S_IRWXU).unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let big = vec![b'a'; usize::try_from(INLINE_MAX_BYTES).unwrap() + 1];
        std::fs::write(tmp.path().join("big.txt"), &big).unwrap();
        let limit = vec![b'a'; usize::try_from(INLINE_MAX_BYTES).unwrap()];
        std::fs::write(tmp.path().join("limit.txt"), &limit).unwrap();
        std::fs::write(tmp.path().join("empty.txt"), "").unwrap();
        let started = Instant::now();
        for name in ["pipe", "sub", "big.txt", "missing.txt"] {
            assert_eq!(read(tmp.path(), &tmp.path().join(name)), None, "{name}");
        }
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(read(tmp.path(), &tmp.path().join("limit.txt")), Some(limit));
        assert_eq!(
            read(tmp.path(), &tmp.path().join("empty.txt")),
            Some(Vec::new())
        );
        assert_eq!(read(tmp.path(), tmp.path()), None);
    }

    #[test]
    fn a_file_whose_bytes_are_not_in_memory_is_left_to_the_worker() {
        let tmp = tempfile::tempdir().unwrap();
        prove_local(tmp.path());
        let path = tmp.path().join("cold.txt");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![b'c'; 64 * 1024]).unwrap();
        file.sync_all().unwrap();
        let kind = nix::sys::statfs::statfs(tmp.path())
            .unwrap()
            .filesystem_type();
        nix::fcntl::posix_fadvise(
            &file,
            0,
            0,
            nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
        )
        .unwrap();
        drop(file);
        if kind == nix::sys::statfs::TMPFS_MAGIC {
            // tmpfs keeps its files in memory: nothing to wait for.
            assert!(read(tmp.path(), &path).is_some());
        } else {
            // Dropped from the page cache: reading would wait for the disk.
            assert_eq!(read(tmp.path(), &path), None, "file system {kind:?}");
        }
        // Read once the normal way, it is cached and read inline.
        assert_eq!(std::fs::read(&path).unwrap().len(), 64 * 1024);
        assert_eq!(read(tmp.path(), &path).map(|b| b.len()), Some(64 * 1024));
    }
}
