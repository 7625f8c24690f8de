//! Which file systems count as local: their reads and writes go to this
//! machine's page cache and disks, never to a server that may not answer.
//! Work on them may run on a thread that must not block for long (the
//! async runtime's), where work on a network or FUSE file system may not.

use nix::sys::statfs::{
    BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, F2FS_SUPER_MAGIC, FsType, OVERLAYFS_SUPER_MAGIC,
    TMPFS_MAGIC, XFS_SUPER_MAGIC,
};

/// Whether a file system of type `kind` (from `statfs`) is local. ext2 and
/// ext3 share ext4's number.
pub fn is_local_file_system(kind: FsType) -> bool {
    [
        EXT4_SUPER_MAGIC,
        XFS_SUPER_MAGIC,
        BTRFS_SUPER_MAGIC,
        F2FS_SUPER_MAGIC,
        TMPFS_MAGIC,
        OVERLAYFS_SUPER_MAGIC,
    ]
    .contains(&kind)
}
