//! What the running kernel offers: Landlock (writes) and seccomp filters
//! (network), for `herald doctor` and for refusing to run unconfined when
//! confinement was asked for.

/// Whether Landlock works here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandlockSupport {
    /// Landlock works; `abi` is the kernel's ABI version (1 = Linux 5.13).
    Available { abi: u32 },
    /// It does not, and why.
    Unavailable { reason: String },
}

/// Whether a seccomp filter returning an errno can be installed here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeccompSupport {
    /// Filters work.
    Available,
    /// They do not, and why.
    Unavailable { reason: String },
}

/// Both halves of the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// Confines writes.
    pub landlock: LandlockSupport,
    /// Blocks the network.
    pub seccomp: SeccompSupport,
}

impl SandboxSupport {
    /// Whether a policy with this `network` setting can be enforced.
    pub fn can_confine(&self, network: bool) -> bool {
        matches!(self.landlock, LandlockSupport::Available { .. })
            && (network || self.seccomp == SeccompSupport::Available)
    }
}

/// Asks the kernel for its Landlock ABI version.
pub fn landlock_support() -> LandlockSupport {
    imp::landlock()
}

/// Asks the kernel whether seccomp filters with an errno action work.
pub fn seccomp_support() -> SeccompSupport {
    imp::seccomp()
}

/// Landlock and seccomp support together.
pub fn sandbox_support() -> SandboxSupport {
    SandboxSupport {
        landlock: landlock_support(),
        seccomp: seccomp_support(),
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{LandlockSupport, SeccompSupport};

    /// `landlock_create_ruleset` flag asking for the ABI version.
    const CREATE_RULESET_VERSION: libc::c_uint = 1;

    pub(super) fn landlock() -> LandlockSupport {
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

    pub(super) fn seccomp() -> SeccompSupport {
        let action: u32 = libc::SECCOMP_RET_ERRNO;
        // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is pointed
        // at, which lives on this stack frame for the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_GET_ACTION_AVAIL,
                0u32,
                &action as *const u32,
            )
        };
        if rc == 0 {
            if super::super::confine::TARGET_ARCH.is_none() {
                return SeccompSupport::Unavailable {
                    reason: format!(
                        "herald builds the network filter only for x86_64 and aarch64, not {}",
                        std::env::consts::ARCH
                    ),
                };
            }
            return SeccompSupport::Available;
        }
        let err = std::io::Error::last_os_error();
        let reason = match err.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EINVAL) => {
                "the kernel was built without seccomp filters (CONFIG_SECCOMP_FILTER)".to_owned()
            }
            Some(libc::EOPNOTSUPP) => "the kernel does not offer the errno action".to_owned(),
            _ => format!("the kernel refused the seccomp probe: {err}"),
        };
        SeccompSupport::Unavailable { reason }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{LandlockSupport, SeccompSupport};

    pub(super) fn landlock() -> LandlockSupport {
        LandlockSupport::Unavailable {
            reason: "Landlock exists only on Linux".to_owned(),
        }
    }

    pub(super) fn seccomp() -> SeccompSupport {
        SeccompSupport::Unavailable {
            reason: "seccomp exists only on Linux".to_owned(),
        }
    }
}
