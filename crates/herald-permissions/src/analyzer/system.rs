//! Does the command change the machine itself? Raw writes to disks and
//! files (`dd of=`), formatting, partitioning and wiping (`mkfs`,
//! `wipefs`, `fdisk`, …: on the floor for a device), system
//! administration and process control (services, mounts, firewalls,
//! users, containers, `kill`), and system settings (`date -s`, `hostname
//! NAME`).

use std::path::Path;

use super::args::positionals;
use super::{Analyzer, Judge};
use crate::paths;
use crate::shell::{Severity, Short, Word};

/// Tools that format, partition or wipe a disk (or a disk image).
pub(super) fn is_disk_tool(n: &str) -> bool {
    n.starts_with("mkfs")
        || matches!(
            n,
            "mke2fs"
                | "mkswap"
                | "wipefs"
                | "fdisk"
                | "sfdisk"
                | "cfdisk"
                | "parted"
                | "sgdisk"
                | "gdisk"
                | "blkdiscard"
                | "badblocks"
                | "mkdosfs"
                | "mkntfs"
        )
}

impl Analyzer<'_> {
    /// `dd`: copies data; `of=` is judged as a write (a device is on the
    /// floor).
    pub(super) fn dd(&mut self, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        for a in args {
            if let Some(of) = a.text.strip_prefix("of=") {
                let w = Word {
                    text: of.to_owned(),
                    ..a.clone()
                };
                if w.dynamic {
                    j.raise_with(Severity::Unresolved, "unresolved", || {
                        format!("`{c}` writes to a device or file only known at run time")
                    });
                } else {
                    self.write_target(j, &w, cwd, cmd_text, "writes to");
                }
            }
        }
        j.raise_with(Severity::Safe, "safe-list", || format!("`{c}` copies data"));
    }

    /// `mkfs*`, `wipefs`, `fdisk`, …: on the floor for a device, asks for
    /// anything else (a disk image).
    pub(super) fn format_disk(
        &mut self,
        args: &[Word],
        j: &mut Judge,
        cmd_text: &str,
        cwd: Option<&Path>,
    ) {
        let c = Short(cmd_text);
        let targets = positionals(
            args,
            &[
                "-t", "-L", "-b", "-c", "-i", "-m", "-o", "-n", "-O", "-T", "-U",
            ],
        );
        for t in targets {
            if t.dynamic {
                j.raise_with(Severity::Unresolved, "unresolved", || {
                    format!("`{c}` formats or wipes a device only known at run time")
                });
            } else if let Some(r) = paths::resolve(cwd, &t.text, self.env.home)
                && r.spellings().any(paths::is_device)
            {
                j.raise_with(Severity::Floor, "floor", || {
                    format!(
                        "`{c}` formats, partitions or wipes the device {}",
                        r.display()
                    )
                });
            }
        }
        j.raise_with(Severity::Risky, "mode:workspace-write", || {
            format!("`{c}` formats or partitions a disk (image)")
        });
    }

    /// A tool on the system list (services, mounts, users, containers,
    /// process control): asks in workspace-write.
    pub(super) fn administer(&mut self, j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        j.raise_with(Severity::Risky, "mode:workspace-write", || {
            format!("`{c}` administers the system or other processes")
        });
    }

    /// `date -s`, `hostname NAME`: changes system settings.
    pub(super) fn change_setting(&mut self, j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        j.raise_with(Severity::Risky, "mode:workspace-write", || {
            format!("`{c}` changes system settings")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::strictest;
    use super::is_disk_tool;
    use crate::shell::Severity;

    #[test]
    fn dd_is_judged_by_where_it_writes() {
        assert_eq!(
            strictest("dd if=/dev/zero of=/dev/sda bs=1M"),
            (Severity::Floor, "floor")
        );
        assert_eq!(
            strictest("dd if=in.img of=out.img"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(
            strictest("dd if=a of=\"$OUT\""),
            (Severity::Unresolved, "unresolved")
        );
        // Without `of=` it writes to stdout.
        assert_eq!(
            strictest("dd if=/dev/urandom count=1"),
            (Severity::Safe, "safe-list")
        );
    }

    #[test]
    fn formatting_a_device_is_on_the_floor_and_an_image_asks() {
        assert!(is_disk_tool("mkfs.ext4") && is_disk_tool("wipefs"));
        assert!(!is_disk_tool("mkdir"));
        assert_eq!(strictest("mkfs.ext4 /dev/sdb1"), (Severity::Floor, "floor"));
        assert_eq!(
            strictest("wipefs -a /dev/nvme0n1"),
            (Severity::Floor, "floor")
        );
        assert_eq!(
            strictest("mkfs.ext4 -L data disk.img"),
            (Severity::Risky, "mode:workspace-write")
        );
        assert_eq!(
            strictest("mkfs.vfat \"$DEV\""),
            (Severity::Unresolved, "unresolved")
        );
    }

    #[test]
    fn administration_and_settings_ask() {
        for cmd in [
            "systemctl restart nginx",
            "kill -9 1234",
            "docker run --rm alpine",
            "date -s '2020-01-01'",
            "hostname build-box",
        ] {
            assert_eq!(
                strictest(cmd),
                (Severity::Risky, "mode:workspace-write"),
                "{cmd}"
            );
        }
        // Reading the date or the host name does not.
        assert_eq!(strictest("date +%s").0, Severity::ReadOnly);
        assert_eq!(strictest("hostname").0, Severity::ReadOnly);
    }
}
