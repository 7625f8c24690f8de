//! Confinement of one child process (Linux): Landlock lets it read
//! everywhere but write only below the policy's roots, the temp directories
//! and a few devices; unless the policy allows the network, a seccomp filter
//! makes `socket()` fail with EPERM for every family but `AF_UNIX`.
//!
//! Both are built in herald before the child is forked (the ruleset is a file
//! descriptor, the filter a BPF program in memory). Between fork and exec the
//! child only makes three raw system calls (`prctl(PR_SET_NO_NEW_PRIVS)`,
//! `landlock_restrict_self`, `seccomp(SECCOMP_SET_MODE_FILTER)`), which
//! allocate nothing and are async-signal-safe.

use std::path::{Path, PathBuf};

use crate::{SandboxError, SandboxPolicy};

/// Paths always writable by a confined process (skipped when missing):
/// temp directories and the devices ordinary programs write to.
const SHARED_WRITABLE: &[&str] = &[
    "/tmp",
    "/dev/shm",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The temp directories named in notes (the devices are not worth naming).
const NAMED_TEMP: &[&str] = &["/tmp", "/dev/shm"];

/// A policy made ready for the kernel: apply it to as many commands as
/// needed (each spawn confines its own child). Cheap to clone.
#[derive(Clone)]
pub struct Prepared {
    /// Roots named in notes: the policy's, the extra ones and `$TMPDIR`.
    roots: Vec<PathBuf>,
    network: bool,
    #[cfg(target_os = "linux")]
    ruleset: std::sync::Arc<std::os::fd::OwnedFd>,
    #[cfg(target_os = "linux")]
    filter: Option<std::sync::Arc<[libc::sock_filter]>>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("roots", &self.roots)
            .field("network", &self.network)
            .finish_non_exhaustive()
    }
}

impl SandboxPolicy {
    /// Builds the Landlock ruleset (writes below `writable_roots`,
    /// `extra_writable`, the temp directories and `/dev/null`-like devices)
    /// and, unless `network`, the seccomp filter. Fails when the kernel
    /// cannot enforce either; the caller must then not run the command.
    pub fn prepare(&self, extra_writable: &[&Path]) -> Result<Prepared, SandboxError> {
        let mut roots: Vec<PathBuf> = self
            .writable_roots
            .iter()
            .cloned()
            .chain(extra_writable.iter().map(|p| p.to_path_buf()))
            .collect();
        let temp = std::env::temp_dir();
        if !NAMED_TEMP.iter().any(|t| temp.starts_with(t)) {
            roots.push(temp);
        }
        roots.dedup();
        imp::prepare(roots, self.network)
    }
}

impl Prepared {
    /// Makes `cmd`'s child confine itself right before exec. Keep `self`
    /// or the command alive until the spawn returns (the command holds its
    /// own reference, so dropping `self` first is fine).
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        imp::apply_tokio(self, cmd);
    }

    /// [`Prepared::apply`] for a `std` command.
    pub fn apply_std(&self, cmd: &mut std::process::Command) {
        imp::apply_std(self, cmd);
    }

    /// Whether the network is allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The writable roots named in notes (without the shared temp
    /// directories and devices).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// "writes only in /work, /tmp, /dev/shm; network blocked".
    pub fn describe(&self) -> String {
        let mut places: Vec<String> = self.roots.iter().map(|p| p.display().to_string()).collect();
        places.extend(NAMED_TEMP.iter().map(|t| (*t).to_owned()));
        let network = if self.network {
            "network allowed"
        } else {
            "network blocked"
        };
        format!("writes only in {}; {network}", places.join(", "))
    }

    /// The note appended to a confined command's result when it failed and
    /// its `output` looks like the sandbox stopped it (see
    /// [`crate::looks_denied`]); `None` otherwise. Begins with `sandbox:`.
    pub fn denial_note(&self, output: &str) -> Option<String> {
        crate::looks_denied(output, self.network).then(|| {
            format!(
                "sandbox: the command ran confined ({}). If it failed because of that, \
                 call terminal again with unsandboxed: true to ask the user to run it outside the sandbox.",
                self.describe()
            )
        })
    }
}

/// The seccomp target of this build, if the filter supports it.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) const TARGET_ARCH: Option<seccompiler::TargetArch> =
    Some(seccompiler::TargetArch::x86_64);
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
pub(crate) const TARGET_ARCH: Option<seccompiler::TargetArch> =
    Some(seccompiler::TargetArch::aarch64);
#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "x86_64", target_arch = "aarch64"))
))]
pub(crate) const TARGET_ARCH: Option<seccompiler::TargetArch> = None;

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::BTreeMap;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use landlock::{
        ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        path_beneath_rules,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };

    use super::{Prepared, SHARED_WRITABLE, TARGET_ARCH};
    use crate::SandboxError;
    use crate::support::{LandlockSupport, SeccompSupport, landlock_support, seccomp_support};

    /// The rights herald handles, from an ABI it was tested with; older
    /// kernels enforce the subset they know (best effort per right, but
    /// Landlock itself must be present).
    const TESTED_ABI: ABI = ABI::V3;

    pub(super) fn prepare(roots: Vec<PathBuf>, network: bool) -> Result<Prepared, SandboxError> {
        let ruleset = Arc::new(ruleset(&roots)?);
        let filter = if network {
            None
        } else {
            Some(network_filter()?)
        };
        Ok(Prepared {
            roots,
            network,
            ruleset,
            filter,
        })
    }

    fn ruleset(roots: &[PathBuf]) -> Result<OwnedFd, SandboxError> {
        if let LandlockSupport::Unavailable { reason } = landlock_support() {
            return Err(SandboxError::Landlock(reason));
        }
        let rights = AccessFs::from_write(TESTED_ABI);
        let paths: Vec<&Path> = roots
            .iter()
            .map(PathBuf::as_path)
            .chain(SHARED_WRITABLE.iter().map(Path::new))
            .filter(|p| p.exists())
            .collect();
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(rights)
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(paths, rights)))
            .map_err(|err| SandboxError::Landlock(format!("building the ruleset failed: {err}")))?;
        let fd: Option<OwnedFd> = ruleset.into();
        fd.ok_or_else(|| {
            SandboxError::Landlock("the kernel does not enforce Landlock rulesets".to_owned())
        })
    }

    /// The BPF program: `socket()` of any family but `AF_UNIX` and
    /// `io_uring_setup` (whose operations bypass the filter) fail with
    /// EPERM; everything else is allowed. A foreign architecture (32-bit
    /// x86 system calls) kills the process, so the filter cannot be dodged.
    fn network_filter() -> Result<Arc<[libc::sock_filter]>, SandboxError> {
        if let SeccompSupport::Unavailable { reason } = seccomp_support() {
            return Err(SandboxError::Seccomp(reason));
        }
        let arch = TARGET_ARCH.ok_or_else(|| {
            SandboxError::Seccomp(format!("no filter for {}", std::env::consts::ARCH))
        })?;
        let build = |err: seccompiler::BackendError| {
            SandboxError::Seccomp(format!("building the filter failed: {err}"))
        };
        let not_unix = SeccompRule::new(vec![
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )
            .map_err(build)?,
        ])
        .map_err(build)?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        rules.insert(libc::SYS_socket, vec![not_unix]);
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
        #[cfg(target_arch = "x86_64")]
        {
            // The x32 ABI's socket() (same audit arch, bit 30 set).
            const X32_SYSCALL_BIT: i64 = 0x4000_0000;
            rules.insert(X32_SYSCALL_BIT | libc::SYS_socket, Vec::new());
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(build)?;
        let program: BpfProgram = filter.try_into().map_err(build)?;
        if program.len() > usize::from(u16::MAX) {
            return Err(SandboxError::Seccomp("the filter is too long".to_owned()));
        }
        Ok(program
            .iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect())
    }

    /// What the child runs between fork and exec.
    fn child_hook(
        prepared: &Prepared,
    ) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        let ruleset = Arc::clone(&prepared.ruleset);
        let filter = prepared.filter.clone();
        move || {
            // SAFETY: runs in the forked child before exec. Only raw system
            // calls, a stack-allocated `sock_fprog` and `io::Error`s built
            // from errno: nothing allocates or takes a lock. The ruleset fd
            // and the filter are owned by this closure (held by the command)
            // and so stay valid; the fd is close-on-exec.
            unsafe {
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
                if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(filter) = &filter {
                    let program = libc::sock_fprog {
                        // Checked against u16::MAX when built.
                        len: filter.len() as libc::c_ushort,
                        filter: filter.as_ptr().cast_mut(),
                    };
                    if libc::syscall(
                        libc::SYS_seccomp,
                        libc::SECCOMP_SET_MODE_FILTER,
                        0 as libc::c_uint,
                        &program as *const libc::sock_fprog,
                    ) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        }
    }

    pub(super) fn apply_tokio(prepared: &Prepared, cmd: &mut tokio::process::Command) {
        let hook = child_hook(prepared);
        // SAFETY: see `child_hook`: the closure is async-signal-safe.
        unsafe {
            cmd.pre_exec(hook);
        }
    }

    pub(super) fn apply_std(prepared: &Prepared, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let hook = child_hook(prepared);
        // SAFETY: see `child_hook`: the closure is async-signal-safe.
        unsafe {
            cmd.pre_exec(hook);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::PathBuf;

    use super::Prepared;
    use crate::SandboxError;

    pub(super) fn prepare(_roots: Vec<PathBuf>, _network: bool) -> Result<Prepared, SandboxError> {
        Err(SandboxError::Landlock(
            "Landlock exists only on Linux".to_owned(),
        ))
    }

    pub(super) fn apply_tokio(_prepared: &Prepared, _cmd: &mut tokio::process::Command) {}

    pub(super) fn apply_std(_prepared: &Prepared, _cmd: &mut std::process::Command) {}
}
