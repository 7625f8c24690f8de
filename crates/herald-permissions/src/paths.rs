//! Path normalisation and the judgements made about paths: floor
//! directories, floor files, protected files, credentials and the workspace.
//!
//! A path is judged in two spellings: *lexical* (absolute, `.`/`..` and
//! repeated slashes removed, `~` expanded) and *canonical* (the longest
//! existing prefix of the raw absolute path resolved by the kernel, symlinks
//! included, with the rest appended lexically). Floor and protection checks
//! fire when either spelling matches; "inside the workspace" needs the
//! canonical spelling inside a canonical root, so a symlink cannot lead a
//! write out of the workspace.

use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};

/// A path in both spellings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub lexical: PathBuf,
    pub canonical: PathBuf,
}

impl Resolved {
    /// Both spellings, deduplicated.
    pub fn spellings(&self) -> impl Iterator<Item = &Path> {
        let second = (self.canonical != self.lexical).then_some(self.canonical.as_path());
        std::iter::once(self.lexical.as_path()).chain(second)
    }

    pub fn display(&self) -> String {
        self.lexical.display().to_string()
    }
}

/// Expands a leading `~`, `~/…` or `~root` (the only other user whose home
/// is known without I/O). Returns `None` for `~user` of another user, and
/// for `~` when no home is configured.
pub(crate) fn expand_tilde<'r>(
    raw: &'r str,
    home: Option<&Path>,
) -> Option<std::borrow::Cow<'r, str>> {
    let Some(rest) = raw.strip_prefix('~') else {
        return Some(raw.into());
    };
    let (user, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let base = match user {
        "" => home?.to_str()?.to_owned(),
        "root" => "/root".to_owned(),
        _ => return None,
    };
    Some(format!("{base}{tail}").into())
}

/// Removes `.`, `..` and repeated separators without touching the
/// filesystem. `base` must be absolute; `..` at the root stays at the root.
pub(crate) fn lexical(base: &Path, raw: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    let joined;
    let path = if raw.is_absolute() {
        raw
    } else {
        joined = base.join(raw);
        &joined
    };
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
        }
    }
    out
}

/// Canonicalises the longest existing prefix of the raw absolute path (the
/// kernel resolves symlinks and `..` physically there) and appends the rest
/// lexically.
///
/// Without `..`, one `readlink` per component finds that prefix: a
/// component that exists and is no symlink extends the resolved path as
/// written, a symlink is resolved by the kernel (`realpath`), and the first
/// component that does not exist (or cannot be looked up) ends the prefix.
/// That is what `realpath` of each prefix, longest first, computes, in a
/// linear number of system calls instead of a quadratic one.
pub(crate) fn canonical(abs_raw: &Path) -> PathBuf {
    if !abs_raw.has_root()
        || abs_raw
            .components()
            .any(|c| matches!(c, Component::Prefix(_)))
    {
        return canonical_by_prefixes(abs_raw);
    }
    let mut out = PathBuf::with_capacity(abs_raw.as_os_str().len() + 8);
    out.push("/");
    // How many trailing components of `out` do not exist. While it is 0,
    // `out` is the real, symlink-free path of an existing entry, so `..`
    // is resolved physically, as the kernel does: `missing/../link/x`
    // follows `link` (a write tool creates `missing` first).
    let mut missing = 0usize;
    for component in abs_raw.components() {
        match component {
            Component::Normal(name) => {
                out.push(name);
                if missing > 0 {
                    missing += 1;
                    continue;
                }
                match look(&out) {
                    Looked::Plain => {}
                    Looked::Link(c) => out = c,
                    Looked::Missing | Looked::Dangling => missing = 1,
                }
            }
            Component::ParentDir => {
                out.pop();
                missing = missing.saturating_sub(1);
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// What the kernel says about one absolute, clean path.
#[derive(Debug, Clone)]
enum Looked {
    /// It exists and is not a symlink.
    Plain,
    /// A symlink, resolved.
    Link(PathBuf),
    /// It does not exist or cannot be looked up.
    Missing,
    /// A dangling or looping symlink.
    Dangling,
}

/// Whether `p` itself is a symlink (dangling or not), through the lookups
/// remembered for this check.
pub(crate) fn is_symlink(p: &Path) -> bool {
    matches!(look(p), Looked::Link(_) | Looked::Dangling)
}

thread_local! {
    /// Lookups made during the current check ([`remembering`]); `None`
    /// outside one.
    static LOOKED: RefCell<Option<Vec<(PathBuf, Looked)>>> = const { RefCell::new(None) };
}

/// Runs `f` (one check) remembering path lookups, so that a directory
/// looked up for several paths of the same call (the working directory and
/// everything under it) costs one system call. Nothing is remembered
/// across checks: every call sees the filesystem afresh.
pub(crate) fn remembering<T>(f: impl FnOnce() -> T) -> T {
    struct Forget;
    impl Drop for Forget {
        fn drop(&mut self) {
            LOOKED.with(|l| *l.borrow_mut() = None);
        }
    }
    LOOKED.with(|l| *l.borrow_mut() = Some(Vec::new()));
    let _forget = Forget;
    f()
}

fn look(p: &Path) -> Looked {
    let key = p.as_os_str();
    let hit = LOOKED.with(|l| {
        l.borrow()
            .as_ref()?
            .iter()
            .find(|(k, _)| k.as_os_str() == key)
            .map(|(_, v)| v.clone())
    });
    if let Some(v) = hit {
        return v;
    }
    let v = match std::fs::read_link(p) {
        // EINVAL: it exists and is not a symlink.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput && e.raw_os_error().is_some() => {
            Looked::Plain
        }
        Err(_) => Looked::Missing,
        Ok(_) => match std::fs::canonicalize(p) {
            Ok(c) => Looked::Link(c),
            Err(_) => Looked::Dangling,
        },
    };
    LOOKED.with(|l| {
        if let Some(seen) = l.borrow_mut().as_mut() {
            seen.push((p.to_path_buf(), v.clone()));
        }
    });
    v
}

/// [`canonical`] for paths with `..`: `realpath` of each prefix, longest
/// first.
fn canonical_by_prefixes(abs_raw: &Path) -> PathBuf {
    let mut prefix = abs_raw.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&prefix) {
            let mut out = c;
            for part in rest.iter().rev() {
                match Path::new(part).components().next() {
                    Some(Component::ParentDir) => {
                        out.pop();
                    }
                    Some(Component::CurDir) | None => {}
                    Some(_) => out.push(part),
                }
            }
            return out;
        }
        match (prefix.file_name().map(|s| s.to_owned()), prefix.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                prefix = parent.to_path_buf();
            }
            _ => {
                // `..` or `.` as the last component, or nothing exists at
                // all (not even `/`): fall back to the lexical spelling.
                return lexical(Path::new("/"), abs_raw);
            }
        }
    }
}

/// Resolves `raw` (already unquoted, `~` not yet expanded) against `base`.
/// `None` when it cannot be resolved statically (unknown `~user`, or a
/// relative path with no known base).
pub(crate) fn resolve(base: Option<&Path>, raw: &str, home: Option<&Path>) -> Option<Resolved> {
    let expanded = expand_tilde(raw, home)?;
    let p = Path::new(expanded.as_ref());
    let abs_raw = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base?.join(p)
    };
    let lexical = lexical(Path::new("/"), &abs_raw);
    let canonical = canonical(&abs_raw);
    Some(Resolved { lexical, canonical })
}

/// The bytes of `p` spelled so that comparing bytes compares components
/// (no empty or `.` components, no trailing separator): `p` itself when it
/// is already (every [`Resolved`] spelling is), else re-joined components.
fn clean_bytes(p: &Path) -> std::borrow::Cow<'_, [u8]> {
    let b = p.as_os_str().as_encoded_bytes();
    let clean = !(b.windows(2).any(|w| w == b"//")
        || b.windows(3).any(|w| w == b"/./")
        || (b.len() > 1 && b.ends_with(b"/"))
        || b.ends_with(b"/."));
    if clean {
        std::borrow::Cow::Borrowed(b)
    } else {
        let joined: PathBuf = p.components().collect();
        std::borrow::Cow::Owned(joined.into_os_string().into_encoded_bytes())
    }
}

/// `Path::starts_with` on clean bytes, for a clean `dir` other than `/`.
fn bytes_under(p: &[u8], dir: &str) -> bool {
    p.strip_prefix(dir.as_bytes())
        .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
}

/// Top-level (and a few second-level) system directories whose recursive
/// deletion, chmod or chown is on the floor.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/lost+found",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/snap",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/include",
    "/usr/local",
    "/usr/share",
    "/var/lib",
    "/var/log",
    "/System",
    "/Library",
    "/Applications",
    "/Users",
    "/Volumes",
    "/private",
];

/// Whether a recursive delete/chmod/chown of this directory is on the
/// floor: `/`, a system directory, the home directory or any ancestor of it.
pub(crate) fn is_floor_dir(r: &Resolved, home: Option<&Path>) -> bool {
    r.spellings().any(|p| {
        let b = clean_bytes(p);
        *b == *b"/"
            || SYSTEM_DIRS.iter().any(|d| *b == *d.as_bytes())
            || home.is_some_and(|h| h.starts_with(p))
    })
}

/// Files whose overwriting (or deletion) is on the floor.
const FLOOR_FILES: &[&str] = &[
    "/etc/passwd",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/group",
    "/etc/sudoers",
    "/etc/master.passwd",
];
const FLOOR_TREES: &[&str] = &["/etc/sudoers.d", "/boot"];

/// Device files that are fine to write to.
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/stdin",
    "/dev/tty",
];

/// Why a write to `r` is on the floor, if it is.
pub(crate) fn floor_write(r: &Resolved) -> Option<&'static str> {
    for p in r.spellings() {
        let b = clean_bytes(p);
        if FLOOR_FILES.iter().any(|f| *b == *f.as_bytes()) {
            return Some("overwrites a system account or sudo file");
        }
        if FLOOR_TREES.iter().any(|t| bytes_under(&b, t)) {
            return Some("writes into the boot or sudoers configuration");
        }
        if is_device(p) {
            return Some("writes onto a device");
        }
    }
    None
}

/// A device node other than the harmless ones (`/dev/null`, `/dev/tty`, …).
pub(crate) fn is_device(p: &Path) -> bool {
    let b = clean_bytes(p);
    bytes_under(&b, "/dev")
        && !net_pseudo_device(&b)
        && *b != *b"/dev"
        && !HARMLESS_DEVICES.iter().any(|d| *b == *d.as_bytes())
        && !bytes_under(&b, "/dev/fd")
        && !bytes_under(&b, "/dev/shm")
        && !bytes_under(&b, "/dev/pts")
}

/// bash's `/dev/tcp/host/port` and `/dev/udp/…`: network, not a device.
pub(crate) fn is_net_pseudo_device(p: &Path) -> bool {
    net_pseudo_device(&clean_bytes(p))
}

fn net_pseudo_device(b: &[u8]) -> bool {
    bytes_under(b, "/dev/tcp") || bytes_under(b, "/dev/udp")
}

pub(crate) fn is_harmless_device(p: &Path) -> bool {
    let b = clean_bytes(p);
    bytes_under(&b, "/dev")
        && (HARMLESS_DEVICES.iter().any(|d| *b == *d.as_bytes())
            || bytes_under(&b, "/dev/fd")
            || bytes_under(&b, "/dev/pts"))
}

/// Shell start-up files (relative to home): writing them plants code that
/// runs in every later shell.
const STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".inputrc",
    ".config/fish/config.fish",
];

/// Why a write to `r` asks even where the mode would let it run
/// (workspace-write), if it does. Full-access lets these run.
pub(crate) fn protected_write(r: &Resolved, home: Option<&Path>) -> Option<String> {
    for p in r.spellings() {
        if let Some(h) = home
            && let Ok(rel) = p.strip_prefix(h)
        {
            if STARTUP_FILES.iter().any(|f| rel == Path::new(f)) {
                return Some(format!(
                    "{} is a shell start-up file (runs in every new shell)",
                    p.display()
                ));
            }
            if rel.starts_with(".ssh") {
                return Some(format!("{} is inside ~/.ssh", p.display()));
            }
            if rel.starts_with(".herald") {
                return Some(format!("{} is herald's own configuration", p.display()));
            }
            if rel == Path::new(".gitconfig") || rel.starts_with(".config/git") {
                return Some(format!("{} is the global git configuration", p.display()));
            }
        }
        if p.starts_with("/etc") {
            return Some(format!("{} is system configuration", p.display()));
        }
        if let Some(i) = p.components().position(|c| c.as_os_str() == ".git")
            && p.components().count() > i + 1
        {
            return Some(format!(
                "{} is inside git's internals (.git/: hooks and config can run code)",
                p.display()
            ));
        }
    }
    None
}

/// Why reading `r` asks, if it does: private keys and credential files.
/// `.env` files inside the workspace are deliberately readable (the agent
/// works on that project and its configuration); one outside asks.
pub(crate) fn credential(r: &Resolved, home: Option<&Path>, ws: &Workspace<'_>) -> Option<String> {
    for p in r.spellings() {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(h) = home
            && let Ok(rel) = p.strip_prefix(h)
        {
            let rel_s = rel.to_str().unwrap_or("");
            if let Ok(ssh) = rel.strip_prefix(".ssh") {
                let file = ssh.to_str().unwrap_or("");
                let public = file.is_empty()
                    || file.ends_with(".pub")
                    || file.starts_with("known_hosts")
                    || file == "config"
                    || file == "authorized_keys";
                if !public || file.is_empty() {
                    return Some(format!("{} holds SSH keys", p.display()));
                }
            }
            const HOME_SECRETS: &[&str] = &[
                ".aws/credentials",
                ".netrc",
                ".config/gh/hosts.yml",
                ".docker/config.json",
                ".kube/config",
                ".git-credentials",
                ".pgpass",
                ".pypirc",
                ".npmrc",
                ".cargo/credentials",
                ".cargo/credentials.toml",
                ".config/gcloud/credentials.db",
                ".config/gcloud/application_default_credentials.json",
            ];
            if HOME_SECRETS.contains(&rel_s) {
                return Some(format!("{} holds credentials", p.display()));
            }
            if rel.starts_with(".gnupg") || rel.starts_with(".password-store") {
                return Some(format!("{} holds private keys", p.display()));
            }
        }
        if p == Path::new("/etc/shadow") || p == Path::new("/etc/gshadow") {
            return Some(format!("{} holds password hashes", p.display()));
        }
        if name.ends_with(".pem")
            || name.ends_with(".key")
            || name.ends_with(".p12")
            || name.ends_with(".pfx")
        {
            return Some(format!("{} looks like a private key", p.display()));
        }
        if (name == ".env" || name.starts_with(".env.")) && !ws.contains(r) {
            return Some(format!(
                "{} is an environment file outside the workspace (likely secrets)",
                p.display()
            ));
        }
    }
    None
}

/// Where writes run without asking in workspace-write: the working
/// directory, the configured writable roots and the temp directories.
#[derive(Debug, Clone)]
pub(crate) struct Workspace<'a> {
    /// The working directory, resolved for this call.
    cwd: Option<Resolved>,
    /// The writable roots and temp directories, resolved once by the policy.
    extra: &'a [Resolved],
}

impl<'a> Workspace<'a> {
    /// `extra_roots`: the writable roots and temp directories, resolved
    /// once by the policy ([`temp_roots`]).
    pub fn new(cwd: &Path, extra_roots: &'a [Resolved]) -> Self {
        Self {
            cwd: resolve(None, &cwd.to_string_lossy(), None),
            extra: extra_roots,
        }
    }

    /// Whether a write to `r` stays inside the workspace (canonical spelling
    /// inside a root), or goes to a harmless device.
    pub fn contains(&self, r: &Resolved) -> bool {
        if is_harmless_device(&r.lexical) {
            return true;
        }
        self.cwd.iter().chain(self.extra).any(|root| {
            r.canonical.starts_with(&root.canonical)
                || (r.canonical == r.lexical && r.lexical.starts_with(&root.lexical))
        })
    }

    /// The working directory root (first root).
    pub fn cwd_root(&self) -> Option<&Resolved> {
        self.cwd.as_ref()
    }
}

/// The temp directories, writable in every mode that writes.
pub(crate) fn temp_roots() -> Vec<Resolved> {
    ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .map(|t| Resolved {
            lexical: PathBuf::from(t),
            canonical: canonical(Path::new(t)),
        })
        .collect()
}

/// How a write to one path is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteClass {
    /// On the floor: denied in every mode.
    Floor(&'static str),
    /// Asks in workspace-write even when inside the workspace.
    Protected(String),
    /// Outside the working directory, writable roots and temp.
    Outside,
    /// Inside the workspace.
    Inside,
}

pub(crate) fn classify_write(r: &Resolved, ws: &Workspace<'_>, home: Option<&Path>) -> WriteClass {
    if let Some(why) = floor_write(r) {
        return WriteClass::Floor(why);
    }
    if is_harmless_device(&r.lexical) {
        return WriteClass::Inside;
    }
    if let Some(why) = protected_write(r, home) {
        return WriteClass::Protected(why);
    }
    if ws.contains(r) {
        WriteClass::Inside
    } else {
        WriteClass::Outside
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn lex(base: &str, p: &str) -> String {
        lexical(Path::new(base), Path::new(p)).display().to_string()
    }

    #[test]
    fn lexical_normalisation() {
        assert_eq!(lex("/", "//usr"), "/usr");
        assert_eq!(lex("/", "/usr/."), "/usr");
        assert_eq!(lex("/", "/./usr"), "/usr");
        assert_eq!(lex("/", "/usr/../usr"), "/usr");
        assert_eq!(lex("/", "/usr/"), "/usr");
        assert_eq!(lex("/", "/../../"), "/");
        assert_eq!(lex("/work/p", "a/../../b"), "/work/b");
        assert_eq!(lex("/work/p", "."), "/work/p");
    }

    #[test]
    fn tilde_expansion() {
        let h = Path::new("/home/u");
        assert_eq!(expand_tilde("~", Some(h)).unwrap(), "/home/u");
        assert_eq!(expand_tilde("~/x", Some(h)).unwrap(), "/home/u/x");
        assert_eq!(expand_tilde("~root/x", Some(h)).unwrap(), "/root/x");
        assert_eq!(expand_tilde("~bob", Some(h)), None);
        assert_eq!(expand_tilde("~", None), None);
        assert_eq!(expand_tilde("a~", Some(h)).unwrap(), "a~");
    }

    #[test]
    fn symlinks_are_resolved_for_the_existing_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        let outside = root.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();

        // Through the link, to a file that does not exist yet.
        let r = resolve(Some(&ws), "link/new/file.txt", None).unwrap();
        assert_eq!(r.lexical, ws.join("link/new/file.txt"));
        assert_eq!(r.canonical, outside.join("new/file.txt"));

        // The tempdir lives under /tmp, itself a workspace root: keep only
        // the working directory here.
        let w = Workspace {
            cwd: Some(resolve(None, &ws.to_string_lossy(), None).unwrap()),
            extra: &[],
        };
        assert!(!w.contains(&r), "a symlink must not lead a write out");
        let inside = resolve(Some(&ws), "src/../x.rs", None).unwrap();
        assert!(w.contains(&inside));

        // `..` after a symlink is resolved physically by the kernel.
        std::fs::create_dir(outside.join("sub")).unwrap();
        let r = resolve(Some(&ws), "link/sub/..", None).unwrap();
        assert_eq!(r.canonical, outside);
        assert_eq!(r.lexical, ws.join("link"));
    }

    #[test]
    fn linear_canonical_agrees_with_realpath_of_each_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("link")).unwrap();
        std::os::unix::fs::symlink("a/file", root.join("flink")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        std::os::unix::fs::symlink(root.join("loop"), root.join("loop")).unwrap();
        std::os::unix::fs::symlink("link/c", root.join("rel")).unwrap();
        for p in [
            "",
            "a",
            "a/b",
            "a/b/new/deeper",
            "a/file",
            "a/file/x",
            "link",
            "link/new/x.txt",
            "flink",
            "flink/x",
            "dangling",
            "dangling/x",
            "loop/x",
            "rel/y",
            "a/./b//c/",
            "missing/a/b",
        ] {
            let abs = root.join(p);
            assert_eq!(canonical(&abs), canonical_by_prefixes(&abs), "{p}");
        }
        for p in [
            "/",
            "/tmp",
            "/usr/bin/env",
            "/proc/self/cwd/x",
            "/nonexistent/x/y",
        ] {
            assert_eq!(
                canonical(Path::new(p)),
                canonical_by_prefixes(Path::new(p)),
                "{p}"
            );
        }
    }

    #[test]
    fn dot_dot_after_a_missing_directory_still_follows_the_link_behind_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let outside = root.join("outside");
        let ws = root.join("ws");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(ws.join("real")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("escape")).unwrap();
        // What a write tool reaches: it creates `sub`, then the kernel
        // resolves `sub/..` to `ws` and follows `escape`.
        assert_eq!(
            canonical(&ws.join("sub/../escape/x.txt")),
            outside.join("x.txt")
        );
        assert_eq!(canonical(&ws.join("a/b/../../escape/x")), outside.join("x"));
        assert_eq!(canonical(&ws.join("real/../escape")), outside);
        assert_eq!(
            canonical(&ws.join("escape/../ws/real")),
            root.join("ws/real")
        );
        assert_eq!(canonical(&ws.join("new/../other/y")), ws.join("other/y"));
    }

    #[test]
    fn byte_comparisons_agree_with_component_comparisons() {
        let paths = [
            "/dev",
            "/dev/",
            "/dev/.",
            "/dev//sda",
            "/dev/./null",
            "//dev/null",
            "/dev/null/",
            "/dev/nullx",
            "/devx",
            "/dev/fd/3",
            "/dev/fdx",
            "/dev/pts",
            "/dev/tcp/h/80",
            "dev/sda",
            "/etc/passwd",
            "/etc//passwd/",
            "/etc/passwdx",
            "/boot",
            "/boot/",
            "/bootx",
            "/usr/.",
            "/",
            "//",
            "/.",
            "",
        ];
        for p in paths {
            let p = Path::new(p);
            let harmless = HARMLESS_DEVICES.iter().any(|d| p == Path::new(d))
                || p.starts_with("/dev/fd")
                || p.starts_with("/dev/pts");
            assert_eq!(is_harmless_device(p), harmless, "{p:?}");
            let net = p.starts_with("/dev/tcp") || p.starts_with("/dev/udp");
            assert_eq!(is_net_pseudo_device(p), net, "{p:?}");
            let device = p.starts_with("/dev")
                && !net
                && p != Path::new("/dev")
                && !HARMLESS_DEVICES.iter().any(|d| p == Path::new(d))
                && !p.starts_with("/dev/fd")
                && !p.starts_with("/dev/shm")
                && !p.starts_with("/dev/pts");
            assert_eq!(is_device(p), device, "{p:?}");
            let b = clean_bytes(p);
            for d in SYSTEM_DIRS.iter().chain(FLOOR_FILES).chain(["/"].iter()) {
                assert_eq!(*b == *d.as_bytes(), p == Path::new(d), "{p:?} {d}");
            }
            for t in FLOOR_TREES {
                assert_eq!(bytes_under(&b, t), p.starts_with(t), "{p:?} {t}");
            }
        }
    }

    #[test]
    fn floor_dirs_and_files() {
        let h = Some(Path::new("/home/user"));
        let r = |p: &str| resolve(Some(Path::new("/work/p")), p, h).unwrap();
        for p in [
            "/",
            "/usr",
            "//usr",
            "/usr/.",
            "/usr/../usr",
            "~",
            "/home",
            "~/..",
            "/etc/",
        ] {
            assert!(is_floor_dir(&r(p), h), "{p}");
        }
        for p in ["~/projects/x", "/usr/local/share/x", "/work", "build"] {
            assert!(!is_floor_dir(&r(p), h), "{p}");
        }
        assert!(floor_write(&r("/etc/passwd")).is_some());
        assert!(floor_write(&r("/etc/../etc/shadow")).is_some());
        assert!(floor_write(&r("/boot/grub/grub.cfg")).is_some());
        assert!(floor_write(&r("/dev/sda")).is_some());
        assert!(floor_write(&r("/dev/null")).is_none());
        assert!(floor_write(&r("/etc/hosts")).is_none());
    }

    #[test]
    fn protected_and_credentials() {
        let h = Some(Path::new("/home/user"));
        let temp = temp_roots();
        let ws = Workspace::new(Path::new("/work/p"), &temp);
        let r = |p: &str| resolve(Some(Path::new("/work/p")), p, h).unwrap();
        assert!(protected_write(&r("~/.bashrc"), h).is_some());
        assert!(protected_write(&r(".git/hooks/pre-commit"), h).is_some());
        assert!(protected_write(&r(".gitignore"), h).is_none());
        assert!(protected_write(&r("/etc/hosts"), h).is_some());
        assert!(credential(&r("~/.ssh/id_ed25519"), h, &ws).is_some());
        assert!(credential(&r("~/.ssh/id_ed25519.pub"), h, &ws).is_none());
        assert!(credential(&r("~/.aws/credentials"), h, &ws).is_some());
        assert!(credential(&r("server.key"), h, &ws).is_some());
        assert!(credential(&r(".env"), h, &ws).is_none());
        assert!(credential(&r("/srv/app/.env"), h, &ws).is_some());
        assert_eq!(classify_write(&r("src/x.rs"), &ws, h), WriteClass::Inside);
        assert_eq!(classify_write(&r("/tmp/x"), &ws, h), WriteClass::Inside);
        assert_eq!(classify_write(&r("/opt/x"), &ws, h), WriteClass::Outside);
    }
}
