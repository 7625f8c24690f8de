//! Optional Landlock confinement (Linux): the script may read everywhere but
//! write only below the working directory, its private run directory,
//! `/tmp` and `/dev/shm` (plus `/dev/null`).
//!
//! The ruleset is built in herald before the child is forked; the child only
//! makes two raw system calls between fork and exec (`prctl` for
//! no-new-privileges and `landlock_restrict_self`), which allocate nothing and
//! are async-signal-safe.

use std::path::Path;

/// What the running kernel offers, for `herald doctor` and for refusing to
/// run unconfined when confinement was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandlockSupport {
    /// Landlock works; `abi` is the kernel's ABI version (1 = Linux 5.13).
    Available { abi: u32 },
    /// It does not, and why.
    Unavailable { reason: String },
}

/// Asks the kernel for its Landlock ABI version.
pub fn landlock_support() -> LandlockSupport {
    imp::support()
}

/// A ruleset ready to be applied in a child process.
#[derive(Debug)]
pub(crate) struct Confinement {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
}

/// Builds the ruleset allowing writes below `writable` (missing paths are
/// skipped). Fails when the kernel cannot enforce it.
pub(crate) fn prepare(writable: &[&Path]) -> Result<Confinement, String> {
    imp::prepare(writable)
}

/// Makes `cmd`'s child confine itself right before exec.
pub(crate) fn apply(cmd: &mut tokio::process::Command, confinement: &Confinement) {
    imp::apply(cmd, confinement);
}

#[cfg(target_os = "linux")]
mod imp {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::Path;

    use landlock::{
        ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        path_beneath_rules,
    };

    use super::{Confinement, LandlockSupport};

    /// The rights herald handles, from an ABI it was tested with; older
    /// kernels enforce the subset they know (best effort per right, but
    /// Landlock itself must be present).
    const TESTED_ABI: ABI = ABI::V3;
    /// `landlock_create_ruleset` flag asking for the ABI version.
    const CREATE_RULESET_VERSION: libc::c_uint = 1;

    /// Paths always writable besides the working and run directories.
    const SHARED_WRITABLE: &[&str] = &["/tmp", "/dev/shm", "/dev/null"];

    pub(super) fn support() -> LandlockSupport {
        // SAFETY: with a null attribute pointer and size 0 this call only
        // returns the ABI version (or an error); it touches no memory.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        if abi > 0 {
            return LandlockSupport::Available {
                abi: u32::try_from(abi).unwrap_or(u32::MAX),
            };
        }
        let err = std::io::Error::last_os_error();
        let reason = match err.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel was built without Landlock".to_owned(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built in but disabled (add landlock to the lsm= boot parameter)"
                    .to_owned()
            }
            _ => format!("the kernel refused the Landlock probe: {err}"),
        };
        LandlockSupport::Unavailable { reason }
    }

    pub(super) fn prepare(writable: &[&Path]) -> Result<Confinement, String> {
        if let LandlockSupport::Unavailable { reason } = support() {
            return Err(reason);
        }
        let rights = AccessFs::from_write(TESTED_ABI);
        let paths: Vec<&Path> = writable
            .iter()
            .copied()
            .chain(SHARED_WRITABLE.iter().map(Path::new))
            .filter(|p| p.exists())
            .collect();
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(rights)
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(paths, rights)))
            .map_err(|err| format!("building the Landlock ruleset failed: {err}"))?;
        let fd: Option<OwnedFd> = ruleset.into();
        fd.map(|fd| Confinement { fd })
            .ok_or_else(|| "the kernel does not enforce Landlock rulesets".to_owned())
    }

    pub(super) fn apply(cmd: &mut tokio::process::Command, confinement: &Confinement) {
        let fd = confinement.fd.as_raw_fd();
        // SAFETY: the closure runs in the forked child before exec. It only
        // makes two system calls and builds `io::Error`s from errno, none of
        // which allocate or take locks. `fd` stays open in the parent until
        // the spawn returns (the caller keeps `confinement` alive) and is
        // close-on-exec, so the script does not inherit it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_NO_NEW_PRIVS,
                    1 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;

    use super::{Confinement, LandlockSupport};

    const NOT_LINUX: &str = "Landlock exists only on Linux";

    pub(super) fn support() -> LandlockSupport {
        LandlockSupport::Unavailable {
            reason: NOT_LINUX.to_owned(),
        }
    }

    pub(super) fn prepare(_writable: &[&Path]) -> Result<Confinement, String> {
        Err(NOT_LINUX.to_owned())
    }

    pub(super) fn apply(_cmd: &mut tokio::process::Command, _confinement: &Confinement) {}
}
