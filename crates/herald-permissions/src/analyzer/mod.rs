//! Classification of one simple command: wrapper stripping, the floor,
//! the read-only and safe lists, network, installs, git, write targets.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::paths::{self, Workspace, WriteClass};
use crate::shell::{Finding, Redirect, Severity, Short, Stream, Word, short};
use crate::text;

/// Facts the walk needs that do not change within a call.
pub(crate) struct Env<'a> {
    pub home: Option<&'a Path>,
    pub ws: &'a Workspace<'a>,
}

/// Analyses a whole command line run in `cwd`.
pub(crate) fn analyse(command: &str, cwd: &Path, env: &Env<'_>) -> Vec<Finding> {
    let mut a = Analyzer {
        env,
        cwd: Some(cwd.to_path_buf()),
        vars: HashMap::new(),
        findings: Vec::new(),
        script_depth: 0,
        node_depth: 0,
        stdin: Stream::default(),
        path_tainted: false,
        functions: Vec::new(),
        written: HashMap::new(),
    };
    a.script(command);
    a.findings
}

/// The abstract execution of one command line: the state the walk
/// carries from one simple command to the next.
pub(crate) struct Analyzer<'e> {
    pub env: &'e Env<'e>,
    /// The directory relative paths resolve against; `None` after a `cd`
    /// the check could not follow.
    pub cwd: Option<PathBuf>,
    /// Variables with a statically known value (`Some`) or known to be
    /// dynamic (`None`).
    pub vars: HashMap<String, Option<String>>,
    pub findings: Vec<Finding>,
    pub script_depth: u32,
    /// How deep the syntax-tree walk is ([`crate::shell`]).
    pub node_depth: u32,
    /// The stdin of the statement being analysed.
    pub stdin: Stream,
    /// PATH, LD_PRELOAD or similar were changed: a command name no longer
    /// says what runs.
    pub path_tainted: bool,
    /// Functions defined so far (calls to them are not external commands).
    pub functions: Vec<String>,
    /// Files this command line writes before it may run them, with their
    /// content when known (`echo 'rm -rf /' > x.sh && bash x.sh`).
    pub written: HashMap<PathBuf, Written>,
}

/// What the check knows of a file written earlier in the command line.
#[derive(Debug, Clone)]
pub(crate) enum Written {
    Known(String),
    Unknown,
    /// Downloaded by this command (names the downloader).
    Download(String),
}

/// The strictest judgement seen so far for one simple command.
#[derive(Debug)]
struct Judge {
    sev: Severity,
    rule: &'static str,
    reason: String,
}

impl Judge {
    /// [`Judge::raise`] formatting the reason only when it is kept.
    fn raise_with(&mut self, sev: Severity, rule: &'static str, reason: impl FnOnce() -> String) {
        if sev > self.sev || (sev == self.sev && self.reason.is_empty()) {
            self.sev = sev;
            self.rule = rule;
            self.reason = reason();
        }
    }

    fn raise(&mut self, sev: Severity, rule: &'static str, reason: impl Into<String>) {
        if sev > self.sev || (sev == self.sev && self.reason.is_empty()) {
            self.sev = sev;
            self.rule = rule;
            self.reason = reason.into();
        }
    }
}

/// Commands that only read (with the exceptions checked in
/// [`Analyzer::classify`]: output-file options, `date -s`, …).
const READ_ONLY: &[&str] = &[
    "ls",
    "ll",
    "dir",
    "vdir",
    "cat",
    "tac",
    "head",
    "tail",
    "less",
    "more",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "pwd",
    "echo",
    "printf",
    "which",
    "whereis",
    "type",
    "stat",
    "file",
    "du",
    "df",
    "tree",
    "diff",
    "diff3",
    "sdiff",
    "cmp",
    "comm",
    "sort",
    "uniq",
    "cut",
    "tr",
    "nl",
    "od",
    "hexdump",
    "xxd",
    "strings",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "jq",
    "column",
    "fold",
    "fmt",
    "expand",
    "unexpand",
    "rev",
    "paste",
    "join",
    "seq",
    "yes",
    "sleep",
    "true",
    "false",
    ":",
    "test",
    "[",
    "[[",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "id",
    "whoami",
    "groups",
    "uname",
    "arch",
    "nproc",
    "uptime",
    "free",
    "ps",
    "pgrep",
    "lsof",
    "locale",
    "getconf",
    "printenv",
    "date",
    "cal",
    "man",
    "help",
    "history",
    "cd",
    "pushd",
    "popd",
    "dirs",
    "export",
    "unset",
    "alias",
    "unalias",
    "set",
    "shopt",
    "local",
    "declare",
    "typeset",
    "readonly",
    "read",
    "shift",
    "exit",
    "return",
    "break",
    "continue",
    "wait",
    "jobs",
    "hash",
    "umask",
    "tty",
    "tput",
    "clear",
    "getent",
    "ldd",
    "nm",
    "objdump",
    "readelf",
    "size",
    "zcat",
    "zgrep",
    "zless",
    "bzcat",
    "xzcat",
    "base64",
    "base32",
    "basenc",
    "iconv",
    "numfmt",
    "factor",
    "expr",
    "bc",
    "dc",
    "let",
    "fd",
    "fdfind",
    "bat",
    "exa",
    "eza",
    "lsblk",
    "hostname",
    "env",
    "getopts",
    "trap",
    "look",
    "htop",
    "top",
    "vmstat",
    "iostat",
    "w",
    "who",
    "last",
    "users",
    "cmp",
    "tsort",
    "shuf",
    "wait",
    "command",
    "builtin",
    "caller",
    "compgen",
    "complete",
    "fc",
    "disown",
    "fg",
    "bg",
    "logname",
    "sha",
    "file",
    "lscpu",
    "lsusb",
    "lspci",
    "dmesg",
    "journalctl",
    "pstree",
    "xargs",
    "true",
    "uuidgen",
    "mktemp",
];

/// Tools that fetch from or talk to the network.
const NETWORK: &[&str] = &[
    "curl",
    "wget",
    "ssh",
    "scp",
    "sftp",
    "ftp",
    "telnet",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "http",
    "https",
    "xh",
    "aria2c",
    "lftp",
    "mosh",
    "ping",
    "ping6",
    "dig",
    "nslookup",
    "host",
    "whois",
    "traceroute",
    "tracepath",
    "mtr",
    "gh",
    "hub",
    "glab",
    "ssh-copy-id",
    "ssh-keyscan",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "pipx",
    "git-lfs",
];

/// Package managers: anything but their read-only queries installs.
const INSTALLERS: &[&str] = &[
    "apt",
    "apt-get",
    "aptitude",
    "dpkg",
    "dnf",
    "yum",
    "zypper",
    "pacman",
    "apk",
    "brew",
    "port",
    "snap",
    "flatpak",
    "nix-env",
    "emerge",
    "pkg",
    "gem",
    "cpan",
    "cpanm",
    "conda",
    "mamba",
    "micromamba",
    "rustup",
    "nvm",
    "volta",
    "sdk",
    "asdf",
    "poetry",
    "pdm",
    "composer",
];

/// System administration and process control: always asks in
/// workspace-write.
const SYSTEM: &[&str] = &[
    "systemctl",
    "service",
    "reboot",
    "shutdown",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "mount",
    "umount",
    "swapon",
    "swapoff",
    "iptables",
    "ip6tables",
    "nft",
    "ufw",
    "firewall-cmd",
    "crontab",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "groupdel",
    "passwd",
    "chpasswd",
    "visudo",
    "modprobe",
    "insmod",
    "rmmod",
    "sysctl",
    "launchctl",
    "kill",
    "pkill",
    "killall",
    "chroot",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "vagrant",
    "terraform",
    "ansible",
    "ansible-playbook",
    "login",
    "sudoedit",
    "ip",
    "ifconfig",
    "route",
    "setfacl",
    "chattr",
    "mknod",
    "losetup",
    "cryptsetup",
    "lvremove",
    "vgremove",
    "pvremove",
    "zpool",
    "zfs",
    "btrfs",
];

/// Build, test and language tools that run confined in workspace-write.
const SAFE_TOOLS: &[&str] = &[
    "make",
    "gmake",
    "cmake",
    "ctest",
    "ninja",
    "meson",
    "autoreconf",
    "autoconf",
    "automake",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "ld",
    "ar",
    "as",
    "strip",
    "objcopy",
    "rustc",
    "rustfmt",
    "rustdoc",
    "clippy-driver",
    "pytest",
    "py.test",
    "tox",
    "nox",
    "coverage",
    "mypy",
    "pyright",
    "ruff",
    "black",
    "isort",
    "flake8",
    "pylint",
    "tsc",
    "eslint",
    "prettier",
    "jest",
    "vitest",
    "mocha",
    "javac",
    "java",
    "mvn",
    "gradle",
    "gradlew",
    "dotnet",
    "swift",
    "swiftc",
    "rake",
    "rspec",
    "lua",
    "luajit",
    "Rscript",
    "julia",
    "ghc",
    "runghc",
    "cabal",
    "stack",
    "mix",
    "elixir",
    "erl",
    "zig",
    "nim",
    "kotlinc",
    "scalac",
    "sbt",
    "bazel",
    "bazelisk",
    "just",
    "task",
    "pre-commit",
    "shellcheck",
    "shfmt",
    "hyperfine",
    "valgrind",
    "gdb",
    "lldb",
    "sqlite3",
    "pandoc",
    "protoc",
    "buf",
    "wasm-pack",
    "trunk",
    "maturin",
    "mkdir",
    "touch",
    "cp",
    "mv",
    "ln",
    "rm",
    "rmdir",
    "unlink",
    "install",
    "chmod",
    "chown",
    "chgrp",
    "truncate",
    "shred",
    "tee",
    "split",
    "csplit",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "unzstd",
    "7z",
    "patch",
    "dos2unix",
    "unix2dos",
    "sed",
    "perl",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "rsync",
    "dd",
    "ed",
    "source",
    ".",
    "bats",
    "cargo-nextest",
    "node",
    "nodejs",
    "deno",
    "bun",
    "python",
    "python3",
    "python2",
    "pypy",
    "pypy3",
    "ruby",
    "php",
    "go",
    "gofmt",
    "cargo",
    "npm",
    "yarn",
    "pnpm",
    "pip",
    "pip3",
    "uv",
    "git",
    "xmllint",
    "convert",
    "magick",
    "ffmpeg",
    "sort",
    "bundle",
    "flock",
    "watch",
];

/// Directories whose programs are the system's own (a command invoked by
/// a path elsewhere is a program of unknown content).
const SYSTEM_BIN: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/opt/homebrew/bin",
];

const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "yash", "rbash", "fish", "tcsh", "csh",
];

const INTERPRETERS: &[&str] = &[
    "python", "python3", "python2", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "php",
    "lua", "luajit", "Rscript",
];

/// Commands whose first non-option argument is a subcommand worth naming
/// in a suggested allow rule (`terminal(git push*)`).
const SUBCOMMAND_TOOLS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "yarn",
    "pnpm",
    "go",
    "pip",
    "pip3",
    "uv",
    "docker",
    "podman",
    "kubectl",
    "apt",
    "apt-get",
    "brew",
    "gh",
    "dnf",
    "yum",
    "pacman",
    "gem",
    "rustup",
    "systemctl",
    "bun",
    "deno",
    "poetry",
    "conda",
    "dotnet",
    "helm",
    "snap",
];

fn is_opt(w: &Word) -> bool {
    w.text.len() > 1 && w.text.starts_with('-') && !w.dynamic
}

fn join(words: &[Word]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    s
}

/// Some word may name a command that runs another as root (`sudo`, `su`, …),
/// also inside a word split later (`env -S 'sudo x'`).
fn may_elevate(words: &[Word]) -> bool {
    words.iter().any(|w| {
        w.text.split_whitespace().any(|t| {
            matches!(
                basename(t),
                "sudo" | "doas" | "pkexec" | "run0" | "su" | "runuser"
            )
        })
    })
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Positional arguments: everything not an option, honouring `--` and
/// skipping the value of options listed in `with_value` (`-m`, `--mode`;
/// `--mode=x` carries its own).
fn positionals<'w>(args: &'w [Word], with_value: &[&str]) -> Vec<&'w Word> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut opts_done = false;
    while i < args.len() {
        let a = &args[i];
        if !opts_done && a.text == "--" {
            opts_done = true;
        } else if !opts_done && is_opt(a) {
            if with_value.contains(&a.text.as_str()) {
                i += 1;
            }
        } else {
            out.push(a);
        }
        i += 1;
    }
    out
}

/// Whether a short-option cluster or long option is present
/// (`has_flag(args, 'r', &["--recursive"])` matches `-r`, `-fr`, `--recursive`).
fn has_flag(args: &[Word], short: &[char], long: &[&str]) -> bool {
    for a in args {
        if a.text == "--" {
            break;
        }
        if let Some(l) = a.text.strip_prefix("--") {
            let l = l.split('=').next().unwrap_or(l);
            if long.iter().any(|x| x.trim_start_matches('-') == l) {
                return true;
            }
        } else if a.text.starts_with('-')
            && a.text.len() > 1
            && !a.dynamic
            && a.text[1..].chars().any(|c| short.contains(&c))
        {
            return true;
        }
    }
    false
}

/// The value of an option given as `-o V`, `-oV`, `--output V` or
/// `--output=V`.
fn opt_value(args: &[Word], short: Option<&str>, long: &[&str]) -> Option<Word> {
    let mut i = 0;
    while i < args.len() {
        let t = &args[i].text;
        if t == "--" {
            break;
        }
        for l in long {
            if t == l {
                return args.get(i + 1).cloned();
            }
            if let Some(v) = t.strip_prefix(&format!("{l}=")) {
                return Some(Word {
                    text: v.to_owned(),
                    ..args[i].clone()
                });
            }
        }
        if let Some(s) = short {
            if t == s {
                return args.get(i + 1).cloned();
            }
            if t.starts_with(s) && t.len() > s.len() && !t.starts_with("--") {
                return Some(Word {
                    text: t[s.len()..].to_owned(),
                    ..args[i].clone()
                });
            }
        }
        i += 1;
    }
    None
}

/// A subcommand: the first argument that is not an option.
fn first_positional(args: &[Word]) -> Option<&str> {
    args.iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str())
}

/// Suggested allow rule for a command.
pub(crate) fn suggest(prefix_words: &[Word], rest: &[Word]) -> Option<String> {
    let name = rest.first()?;
    if name.dynamic {
        return None;
    }
    let mut parts: Vec<&str> = prefix_words.iter().map(|w| w.text.as_str()).collect();
    parts.push(&name.text);
    let base = basename(&name.text);
    if SUBCOMMAND_TOOLS.contains(&base) {
        // Up to and including the subcommand, global options (and their
        // values) included, so the rule matches this command's text.
        let with_value = [
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--color",
            "-Z",
            "--config",
            "--manifest-path",
            "-u",
            "--user",
            "-H",
            "--host",
        ];
        let mut i = 1;
        while i < rest.len() {
            let w = &rest[i];
            if w.dynamic {
                break;
            }
            if w.text.starts_with('-') || w.text.starts_with('+') {
                parts.push(&w.text);
                if with_value.contains(&w.text.as_str()) {
                    if let Some(v) = rest.get(i + 1) {
                        parts.push(&v.text);
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            parts.push(&w.text);
            return Some(format!("terminal({}*)", parts.join(" ")));
        }
        parts.truncate(prefix_words.len() + 1);
    }
    Some(format!("terminal({} *)", parts.join(" ")))
}

/// What running one simple command's wrappers left: the command proper.
struct Unwrapped {
    /// Index in the full word list where the command proper starts.
    start: usize,
    words: Vec<Word>,
    privileged: Option<String>,
    cwd: Option<PathBuf>,
}

impl Analyzer<'_> {
    /// Judges one simple command (pushing a [`Finding`]) and returns what it
    /// writes to stdout.
    pub fn simple(&mut self, full: Vec<Word>, redirects: &[Redirect], depth: u32) -> Stream {
        let full_text = join(&full);
        let mut j = Judge {
            sev: Severity::ReadOnly,
            rule: "read-only-command",
            reason: String::new(),
        };
        let cwd = self.cwd.clone();
        for r in redirects {
            if r.write {
                self.write_target(
                    &mut j,
                    &r.target,
                    cwd.as_deref(),
                    &full_text,
                    "redirects output to",
                );
            } else {
                self.read_target(&mut j, &r.target, cwd.as_deref(), &full_text);
            }
        }
        let mut out = Stream::default();
        // The wrapper words are needed for the suggestion only when a
        // command runs privileged: keep a copy only when one may.
        let kept = may_elevate(&full).then(|| full.clone());
        let mut un = Unwrapped {
            start: 0,
            words: full,
            privileged: None,
            cwd,
        };
        if !un.words.is_empty() {
            out = self.unwrap_and_classify(&mut un, &mut j, &full_text, depth);
        }
        for r in redirects.iter().filter(|r| r.write) {
            let content = match (&out.download, &out.known, r.stdout) {
                (Some(d), _, true) => Written::Download(d.clone()),
                (None, Some(k), true) => Written::Known(k.clone()),
                _ => Written::Unknown,
            };
            self.record_written(&r.target, content, r.append);
        }
        if let Some(p) = &un.privileged {
            j.raise_with(Severity::Risky, "privileged", || {
                format!("`{}` runs as root through {p}", short(&full_text))
            });
        }
        let text = if un.words.is_empty() {
            full_text.clone()
        } else {
            join(&un.words)
        };
        // An empty reason reads "`text` only reads", formatted only if it
        // becomes the verdict (see [`Finding::reason`]).
        let prefix: Vec<Word> = match (&un.privileged, kept) {
            (Some(_), Some(mut full)) => {
                full.truncate(un.start);
                full
            }
            _ => Vec::new(),
        };
        self.findings.push(Finding {
            severity: j.sev,
            rule: j.rule,
            reason: j.reason,
            text,
            full_text,
            privileged: un.privileged.is_some(),
            words: un.words,
            prefix,
        });
        out
    }

    /// Judges redirections of a compound statement (`{ …; } > f`).
    pub fn judge_redirects_only(&mut self, redirects: &[Redirect], text: &str) {
        let mut j = Judge {
            sev: Severity::ReadOnly,
            rule: "read-only-command",
            reason: String::new(),
        };
        let cwd = self.cwd.clone();
        for r in redirects {
            if r.write {
                self.write_target(
                    &mut j,
                    &r.target,
                    cwd.as_deref(),
                    text,
                    "redirects output to",
                );
            } else {
                self.read_target(&mut j, &r.target, cwd.as_deref(), text);
            }
        }
        self.push(j.sev, j.rule, j.reason, text);
    }

    fn unwrap_and_classify(
        &mut self,
        un: &mut Unwrapped,
        j: &mut Judge,
        full_text: &str,
        depth: u32,
    ) -> Stream {
        // Strip wrappers (sudo, env, nice, timeout, xargs, …).
        for _ in 0..16 {
            let Some(first) = un.words.first() else {
                return Stream::default();
            };
            if let Some(d) = &first.download {
                j.raise_with(Severity::Floor, "floor", || {
                    format!(
                        "`{}` runs a command name taken from a download (`{}`)",
                        short(full_text),
                        short(d)
                    )
                });
                return Stream::default();
            }
            if first.dynamic {
                j.raise_with(
                    Severity::Unresolved,
                    "unresolved",
                    || format!(
                        "the command name `{}` is only known at run time, so `{}` cannot be checked",
                        short(&first.text),
                        short(full_text)
                    ),
                );
                return Stream::default();
            }
            let name = basename(&first.text).to_owned();
            let args = &un.words[1..];
            let skip = match name.as_str() {
                "sudo" | "doas" | "pkexec" | "run0" => {
                    un.privileged = Some(name.clone());
                    let with_value = [
                        "-u",
                        "-g",
                        "-h",
                        "-p",
                        "-C",
                        "-U",
                        "-r",
                        "-t",
                        "-T",
                        "-D",
                        "--user",
                        "--group",
                        "--host",
                        "--prompt",
                        "--close-from",
                        "--other-user",
                        "--role",
                        "--type",
                        "--command-timeout",
                        "--chdir",
                    ];
                    let n = skip_options(args, &with_value);
                    if n == args.len() {
                        if has_flag(args, &['i', 's'], &["--login", "--shell"]) {
                            j.raise_with(Severity::Risky, "privileged", || {
                                format!("`{}` opens a root shell", short(full_text))
                            });
                        } else if has_flag(args, &['e'], &["--edit"]) {
                            j.raise_with(Severity::Risky, "privileged", || {
                                format!("`{}` edits files as root", short(full_text))
                            });
                        }
                        un.start = un.words.len();
                        un.words.clear();
                        return Stream::default();
                    }
                    n + 1
                }
                "env" => {
                    let mut i = 0;
                    let mut split: Option<Vec<Word>> = None;
                    while i < args.len() {
                        let t = args[i].text.as_str();
                        if t == "--" {
                            i += 1;
                            break;
                        }
                        if t == "-S"
                            || t == "--split-string"
                            || t.starts_with("--split-string=")
                            || (t.starts_with("-S") && t.len() > 2)
                        {
                            let v = if let Some(v) = t.strip_prefix("--split-string=") {
                                Some(args[i].clone()).map(|w| Word {
                                    text: v.to_owned(),
                                    ..w
                                })
                            } else if t.len() > 2 && t.starts_with("-S") {
                                Some(Word {
                                    text: t[2..].to_owned(),
                                    ..args[i].clone()
                                })
                            } else {
                                i += 1;
                                args.get(i).cloned()
                            };
                            if let Some(v) = v {
                                split = Some(
                                    v.text
                                        .split_whitespace()
                                        .map(|s| Word {
                                            text: s.to_owned(),
                                            dynamic: v.dynamic,
                                            ..Word::default()
                                        })
                                        .collect(),
                                );
                            }
                            i += 1;
                            break;
                        }
                        if t == "-u" || t == "--unset" || t == "-C" || t == "--chdir" {
                            if t == "-C" || t == "--chdir" {
                                un.cwd = args
                                    .get(i + 1)
                                    .and_then(|w| self.dir_of(w, un.cwd.as_deref()));
                            }
                            i += 2;
                            continue;
                        }
                        if t.starts_with('-') && t.len() > 1 {
                            i += 1;
                            continue;
                        }
                        if let Some((k, _)) = t.split_once('=') {
                            if matches!(
                                k,
                                "PATH" | "LD_PRELOAD" | "LD_LIBRARY_PATH" | "BASH_ENV" | "ENV"
                            ) {
                                self.path_tainted = true;
                            }
                            i += 1;
                            continue;
                        }
                        break;
                    }
                    if let Some(mut split) = split {
                        split.extend(args[i..].iter().cloned());
                        un.start += 1 + i;
                        un.words = split;
                        continue;
                    }
                    if i >= args.len() {
                        // Prints the environment.
                        return Stream::default();
                    }
                    1 + i
                }
                "nice" => {
                    let mut i = 0;
                    while i < args.len() {
                        let t = args[i].text.as_str();
                        if t == "-n" || t == "--adjustment" {
                            i += 2;
                        } else if t.starts_with('-') && t.len() > 1 {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    1 + i
                }
                "nohup" | "builtin" | "unbuffer" | "caffeinate" | "proxychains"
                | "proxychains4" | "coproc" => 1 + skip_options(args, &[]),
                "setsid" => 1 + skip_options(args, &[]),
                "time" => {
                    if let Some(o) = opt_value(args, Some("-o"), &["--output"]) {
                        let c = un.cwd.clone();
                        self.write_target(j, &o, c.as_deref(), full_text, "writes timing to");
                    }
                    1 + skip_options(args, &["-f", "--format", "-o", "--output"])
                }
                "command" => {
                    if has_flag(args, &['v', 'V'], &[]) {
                        return Stream::default();
                    }
                    1 + skip_options(args, &[])
                }
                "exec" => 1 + skip_options(args, &["-a"]),
                "stdbuf" => {
                    1 + skip_options(args, &["-i", "-o", "-e", "--input", "--output", "--error"])
                }
                "ionice" => {
                    if has_flag(args, &['p', 'P', 'u'], &["--pid", "--pgid", "--uid"]) {
                        return Stream::default();
                    }
                    1 + skip_options(args, &["-c", "-n", "--class", "--classdata"])
                }
                "timeout" => {
                    let n = skip_options(args, &["-s", "--signal", "-k", "--kill-after"]);
                    // DURATION, then the command.
                    1 + n + 1
                }
                "chrt" => {
                    let n = skip_options(args, &[]);
                    1 + n + 1
                }
                "taskset" => {
                    let n = skip_options(args, &[]);
                    if has_flag(args, &['p'], &["--pid"]) {
                        return Stream::default();
                    }
                    1 + n + 1
                }
                "flock" => {
                    if let Some(c) = opt_value(args, Some("-c"), &["--command"]) {
                        self.shell_string(j, &c, full_text);
                        return Stream::default();
                    }
                    let n = skip_options(args, &["-w", "--timeout", "-E", "--conflict-exit-code"]);
                    1 + n + 1
                }
                "strace" | "ltrace" => {
                    if let Some(o) = opt_value(args, Some("-o"), &["--output"]) {
                        let c = un.cwd.clone();
                        self.write_target(j, &o, c.as_deref(), full_text, "writes a trace to");
                    }
                    if has_flag(args, &['p'], &[]) {
                        return Stream::default();
                    }
                    1 + skip_options(
                        args,
                        &[
                            "-o", "-e", "-p", "-s", "-u", "-E", "-P", "-X", "-b", "-a", "-I", "-O",
                            "-S", "-U",
                        ],
                    )
                }
                "busybox" => 1,
                "watch" => {
                    let n = skip_options(args, &["-n", "--interval", "-d", "-q", "--equexit"]);
                    if has_flag(args, &['x'], &["--exec"]) {
                        1 + n
                    } else {
                        // watch runs its arguments through `sh -c`.
                        let rest: Vec<Word> = args[n..].to_vec();
                        let w = Word {
                            text: join(&rest),
                            dynamic: rest.iter().any(|w| w.dynamic),
                            ..Word::default()
                        };
                        self.shell_string(j, &w, full_text);
                        return Stream::default();
                    }
                }
                "xargs" => return self.xargs(un, j, full_text, depth),
                _ => 0,
            };
            if skip == 0 {
                break;
            }
            let skip = skip.min(un.words.len());
            un.start += skip;
            un.words.drain(..skip);
        }
        if un.words.is_empty() {
            return Stream::default();
        }
        self.classify(un, j, full_text, depth)
    }

    /// `xargs [options] cmd args`: the command with the input appended.
    fn xargs(&mut self, un: &mut Unwrapped, j: &mut Judge, full_text: &str, depth: u32) -> Stream {
        let args = &un.words[1..];
        let with_value = [
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-L",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        ];
        let n = skip_options(args, &with_value);
        let replace = opt_value(args, Some("-I"), &["--replace"])
            .map(|w| w.text)
            .or_else(|| has_flag(args, &['i'], &[]).then(|| "{}".to_owned()));
        let mut cmd: Vec<Word> = args[n..].to_vec();
        if cmd.is_empty() {
            cmd.push(Word::lit("echo"));
        }
        let from_file = opt_value(args, Some("-a"), &["--arg-file"]).is_some();
        let tokens: Option<Vec<String>> = if from_file {
            None
        } else {
            self.stdin
                .known
                .as_ref()
                .map(|k| k.split_whitespace().map(str::to_owned).collect())
        };
        let mut built = cmd.clone();
        match (&tokens, &replace) {
            (Some(toks), Some(r)) => {
                let first = toks.first().cloned().unwrap_or_default();
                for w in &mut built {
                    if w.text.contains(r.as_str()) {
                        w.text = w.text.replace(r.as_str(), &first);
                    }
                }
            }
            (Some(toks), None) => built.extend(toks.iter().map(|t| Word::lit(t))),
            (None, Some(r)) => {
                for w in &mut built {
                    if w.text.contains(r.as_str()) {
                        w.dynamic = true;
                    }
                }
            }
            (None, None) => built.push(Word {
                text: "<xargs input>".into(),
                dynamic: true,
                ..Word::default()
            }),
        }
        un.start += 1 + n;
        // The built command is judged as its own simple command.
        let saved = std::mem::take(&mut self.stdin);
        let out = self.simple(built, &[], depth + 1);
        self.stdin = saved;
        un.words = cmd;
        let _ = (j, full_text);
        out
    }

    /// `bash -c STRING`-like: a string run by a shell.
    fn shell_string(&mut self, j: &mut Judge, w: &Word, full_text: &str) {
        if let Some(d) = &w.download {
            j.raise_with(Severity::Floor, "floor", || {
                format!(
                    "`{}` runs a download (`{}`) as shell code",
                    short(full_text),
                    short(d)
                )
            });
        } else if w.dynamic {
            j.raise_with(Severity::Unresolved, "unresolved", || {
                format!(
                    "`{}` runs a command string only known at run time (`{}`)",
                    short(full_text),
                    short(&w.text)
                )
            });
        } else {
            self.nested_script(&w.text, full_text);
        }
    }

    /// A shell or `source` given a stream as its script.
    fn shell_stream(&mut self, j: &mut Judge, s: &Stream, full_text: &str, interpreter: &str) {
        if let Some(d) = &s.download {
            j.raise_with(Severity::Floor, "floor", || {
                format!(
                    "`{}` runs a download (`{}`) with {interpreter}",
                    short(full_text),
                    short(d)
                )
            });
        } else if let Some(k) = &s.known {
            self.nested_script(k, full_text);
        } else if let Some(files) = &s.files {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{}` runs the script {}", short(full_text), files.join(" "))
            });
        } else {
            j.raise_with(Severity::Unresolved, "unresolved", || {
                format!(
                    "`{}` feeds {interpreter} text the check cannot see",
                    short(full_text)
                )
            });
        }
    }

    /// Resolves a directory argument (cd, -C) to a new cwd.
    fn dir_of(&self, w: &Word, cwd: Option<&Path>) -> Option<PathBuf> {
        if w.dynamic {
            return None;
        }
        let expanded = paths::expand_tilde(&w.text, self.env.home)?;
        let p = Path::new(expanded.as_ref());
        if p.is_absolute() {
            Some(paths::lexical(Path::new("/"), p))
        } else {
            cwd.map(|c| paths::lexical(c, p))
        }
    }

    fn classify(
        &mut self,
        un: &mut Unwrapped,
        j: &mut Judge,
        full_text: &str,
        depth: u32,
    ) -> Stream {
        let words = un.words.clone();
        let cmd_text = join(&words);
        let c = Short(&cmd_text);
        let invoked = words[0].text.clone();
        let name = basename(&invoked).to_owned();
        let args = &words[1..];
        let cwd = un.cwd.clone();
        let cwd = cwd.as_deref();
        let mut out = Stream::default();

        // Path-invoked programs are what their name says only in system
        // directories; elsewhere (and after PATH changes) they are programs
        // of unknown content.
        let by_path = invoked.contains('/');
        let system_path = by_path
            && Path::new(&invoked)
                .parent()
                .is_some_and(|p| SYSTEM_BIN.iter().any(|d| p == Path::new(d)));
        let untrusted_name = (by_path && !system_path) || self.path_tainted;

        // Reads of credentials by any command.
        for a in args {
            if !a.dynamic && !is_opt(a) && looks_like_path(&a.text) {
                self.read_target(j, a, cwd, &cmd_text);
            }
        }

        let n = name.as_str();
        if SHELLS.contains(&n) {
            self.shell(args, j, &cmd_text);
        } else if n == "eval" {
            let w = Word {
                text: join(args),
                dynamic: args.iter().any(|w| w.dynamic),
                download: args.iter().find_map(|w| w.download.clone()),
                ..Word::default()
            };
            if w.download.is_some() {
                self.shell_string(j, &w, &cmd_text);
            } else if w.dynamic {
                j.raise_with(Severity::Unresolved, "unresolved", || {
                    format!("`{c}` evaluates text only known at run time")
                });
            } else {
                self.nested_script(&w.text, &cmd_text);
            }
        } else if n == "source" || n == "." {
            match args.first() {
                Some(a) if a.stream.is_some() => {
                    let s = a.stream.as_deref().cloned().unwrap_or_default();
                    self.shell_stream(j, &s, &cmd_text, "the current shell");
                }
                Some(a) if a.dynamic => j.raise_with(Severity::Unresolved, "unresolved", || {
                    format!("`{c}` sources a file only known at run time")
                }),
                Some(a) if self.run_written(j, &a.clone(), &cmd_text) => {}
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` runs a script in the shell")
                }),
            }
        } else if n == "alias" {
            for a in args {
                if let Some((_, v)) = a.text.split_once('=') {
                    if a.dynamic {
                        j.raise_with(Severity::Unresolved, "unresolved", || {
                            format!("`{c}` defines an alias only known at run time")
                        });
                    } else {
                        self.nested_script(v, &cmd_text);
                    }
                }
            }
        } else if n == "trap" {
            if let Some(a) = args.iter().find(|a| !is_opt(a)) {
                let a = a.clone();
                self.shell_string(j, &a, &cmd_text);
            }
        } else if n == "cd" || n == "pushd" {
            let target = args.iter().find(|a| !is_opt(a));
            self.cwd = match target {
                None => self.env.home.map(Path::to_path_buf),
                Some(a) if a.text == "-" => None,
                Some(a) => self.dir_of(a, self.cwd.clone().as_deref()),
            };
        } else if n == "popd" {
            self.cwd = None;
        } else if n == "su" || n == "runuser" {
            un.privileged = Some(n.to_owned());
            match opt_value(args, Some("-c"), &["--command"]) {
                Some(s) => self.shell_string(j, &s, &cmd_text),
                None => j.raise_with(Severity::Risky, "privileged", || {
                    format!("`{c}` opens a shell as another user")
                }),
            }
        } else if INTERPRETERS.contains(&n) {
            self.interpreter(n, args, j, &cmd_text, cwd);
        } else if n == "rm" || n == "unlink" || n == "shred" || n == "srm" {
            self.rm(n, args, j, &cmd_text, cwd);
        } else if n == "rmdir" {
            for t in positionals(args, &[]) {
                self.write_target(j, t, cwd, &cmd_text, "removes");
            }
        } else if n == "find" {
            self.find(args, j, &cmd_text, cwd, depth);
        } else if matches!(n, "chmod" | "chown" | "chgrp" | "setfacl" | "chattr") {
            self.chmod(n, args, j, &cmd_text, cwd);
        } else if n == "dd" {
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
                        self.write_target(j, &w, cwd, &cmd_text, "writes to");
                    }
                }
            }
            j.raise_with(Severity::Safe, "safe-list", || format!("`{c}` copies data"));
            if !args.iter().any(|a| a.text.starts_with("of=")) {
                out.known = None;
            }
        } else if n.starts_with("mkfs")
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
        {
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
        } else if matches!(n, "cp" | "mv" | "install" | "ln") {
            self.copy_like(n, args, j, &cmd_text, cwd);
        } else if matches!(n, "touch" | "mkdir" | "truncate" | "tee") {
            let with_value: &[&str] = match n {
                "touch" => &["-d", "-t", "-r", "--date", "--reference"],
                "mkdir" => &["-m", "--mode", "--context"],
                "truncate" => &["-s", "--size", "-r", "--reference"],
                _ => &["--output-error"],
            };
            for t in positionals(args, with_value) {
                self.write_target(j, t, cwd, &cmd_text, "writes");
            }
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` writes inside the working directory")
            });
            if n == "tee" {
                out.known = self.stdin.known.clone();
                out.download = self.stdin.download.clone();
                let append = has_flag(args, &['a'], &["--append"]);
                for t in positionals(args, &["--output-error"]) {
                    let content = match (&self.stdin.download, &self.stdin.known) {
                        (Some(d), _) => Written::Download(d.clone()),
                        (None, Some(k)) => Written::Known(k.clone()),
                        _ => Written::Unknown,
                    };
                    self.record_written(t, content, append);
                }
            }
        } else if n == "sed" || n == "perl" && has_flag(args, &['i'], &[]) {
            self.sed(n, args, j, &cmd_text, cwd);
        } else if n == "git" {
            self.git(args, j, &cmd_text, cwd);
        } else if matches!(n, "cargo") {
            self.cargo(args, j, &cmd_text);
        } else if matches!(n, "npm" | "yarn" | "pnpm" | "bun" | "deno") {
            self.node_pm(n, args, j, &cmd_text);
        } else if matches!(
            n,
            "pip"
                | "pip3"
                | "uv"
                | "go"
                | "bundle"
                | "dotnet"
                | "swift"
                | "mvn"
                | "gradle"
                | "gradlew"
        ) {
            self.lang_pm(n, args, j, &cmd_text);
        } else if matches!(n, "curl" | "wget" | "http" | "https" | "xh" | "aria2c") {
            self.downloader(n, args, j, &cmd_text, cwd, &mut out);
        } else if n == "rsync" || n == "scp" {
            self.rsync(n, args, j, &cmd_text, cwd);
        } else if NETWORK.contains(&n) {
            j.raise_with(Severity::Risky, "network", || {
                format!("`{c}` uses the network")
            });
            if matches!(n, "nc" | "ncat" | "netcat" | "socat" | "telnet") {
                out.download = Some(cmd_text.clone());
            }
        } else if INSTALLERS.contains(&n) {
            let sub = first_positional(args).unwrap_or("");
            let query = matches!(
                sub,
                "list"
                    | "search"
                    | "show"
                    | "info"
                    | "policy"
                    | "madison"
                    | "depends"
                    | "rdepends"
                    | "--version"
                    | "version"
                    | "show-toolchain"
            ) || args.iter().any(|a| a.text == "--version" || a.text == "-V")
                || (n == "dpkg" && has_flag(args, &['l', 'L', 's'], &["--list", "--status"]));
            if query {
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` queries a package manager")
                });
            } else {
                j.raise_with(Severity::Risky, "package-install", || {
                    format!("`{c}` installs or changes packages")
                });
            }
        } else if SYSTEM.contains(&n) {
            j.raise_with(Severity::Risky, "mode:workspace-write", || {
                format!("`{c}` administers the system or other processes")
            });
        } else if matches!(n, "tar") {
            self.tar(args, j, &cmd_text, cwd);
        } else if matches!(n, "unzip" | "7z") {
            if has_flag(args, &['l'], &[]) || args.first().is_some_and(|a| a.text == "l") {
                // Lists the archive.
            } else {
                let dest =
                    opt_value(args, Some("-d"), &[]).or_else(|| opt_value(args, Some("-o"), &[]));
                match dest {
                    Some(d) => self.write_target(j, &d, cwd, &cmd_text, "extracts into"),
                    None => self.write_cwd(j, cwd, &cmd_text),
                }
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` extracts an archive")
                });
            }
        } else if matches!(
            n,
            "gzip"
                | "gunzip"
                | "bzip2"
                | "bunzip2"
                | "xz"
                | "unxz"
                | "zstd"
                | "unzstd"
                | "zip"
                | "dos2unix"
                | "unix2dos"
        ) {
            if has_flag(args, &['c', 'l', 't'], &["--stdout", "--list", "--test"]) {
                // To stdout or listing.
            } else {
                for t in positionals(args, &["-o", "-S", "--suffix"]) {
                    self.write_target(j, t, cwd, &cmd_text, "rewrites");
                }
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` compresses or converts files")
                });
            }
        } else if matches!(n, "patch" | "split" | "csplit" | "ed") {
            match opt_value(args, Some("-o"), &["--output"])
                .or_else(|| opt_value(args, Some("-d"), &["--directory"]))
            {
                Some(o) => self.write_target(j, &o, cwd, &cmd_text, "writes"),
                None => self.write_cwd(j, cwd, &cmd_text),
            }
            j.raise_with(Severity::Safe, "safe-list", || format!("`{c}` edits files"));
        } else if matches!(n, "awk" | "gawk" | "mawk" | "nawk") {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` runs an awk program (it can write files and run commands)")
            });
        } else if n == "sort" || n == "uniq" || n == "xxd" || n == "iconv" || n == "tree" {
            let target = match n {
                "sort" => opt_value(args, Some("-o"), &["--output"]),
                "iconv" => opt_value(args, Some("-o"), &["--output"]),
                "tree" => opt_value(args, Some("-o"), &[]),
                _ => positionals(
                    args,
                    &["-f", "-s", "-w", "-c", "-g", "-l", "-o", "-s", "-n", "-C"],
                )
                .get(1)
                .map(|w| (*w).clone()),
            };
            if let Some(t) = target {
                self.write_target(j, &t, cwd, &cmd_text, "writes");
            }
            if n == "sort"
                && args
                    .iter()
                    .any(|a| a.text.starts_with("--compress-program"))
            {
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` runs a helper program named in its options")
                });
            }
            out.known = None;
        } else if n == "date" && has_flag(args, &['s'], &["--set"])
            || n == "hostname" && first_positional(args).is_some()
        {
            j.raise_with(Severity::Risky, "mode:workspace-write", || {
                format!("`{c}` changes system settings")
            });
        } else if n == "base64" || n == "base32" || n == "basenc" {
            if has_flag(args, &['d', 'D'], &["--decode"])
                && positionals(args, &["-w", "--wrap"]).is_empty()
                && n == "base64"
            {
                out.known = self
                    .stdin
                    .known
                    .as_deref()
                    .and_then(text::base64_decode)
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
            }
            out.download = self.stdin.download.clone();
        } else if n == "echo" || n == "printf" {
            if args.iter().all(|a| !a.dynamic) {
                let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
                out.known = Some(if n == "echo" {
                    text::echo(&texts)
                } else {
                    text::printf(&texts)
                });
            }
            if n == "printf" && args.first().is_some_and(|a| a.text == "-v") {
                out.known = None;
            }
        } else if n == "cat" {
            let files = positionals(args, &[]);
            if files.is_empty() {
                out.known = self.stdin.known.clone();
                out.download = self.stdin.download.clone();
                out.files = self.stdin.files.clone();
            } else if files
                .iter()
                .all(|f| !f.dynamic && f.text != "-" && f.stream.is_none())
            {
                out.files = Some(files.iter().map(|f| f.text.clone()).collect());
            } else if let Some(s) = files.iter().find_map(|f| f.stream.as_deref()) {
                out.download = s.download.clone();
                out.known = s.known.clone();
            }
        } else if (matches!(n, "rg" | "ripgrep")
            && args.iter().any(|a| a.text.starts_with("--pre")))
            || (n == "sort"
                && args
                    .iter()
                    .any(|a| a.text.starts_with("--compress-program")))
            || (matches!(n, "less" | "more") && args.iter().any(|a| a.text.starts_with("+!")))
        {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` runs a helper program named in its options")
            });
        } else if n == "mktemp" {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` creates a temporary file")
            });
        } else if READ_ONLY.contains(&n) {
            // Reads only.
        } else if self.functions.iter().any(|f| f == n) {
            // A function defined in this command: its body was judged.
        } else if SAFE_TOOLS.contains(&n) {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` is on the safe list (runs confined to the working directory)")
            });
        } else if by_path && self.run_written(j, &words[0].clone(), &cmd_text) {
            // A script written earlier in this line: judged by its content.
        } else if by_path {
            let inside = paths::resolve(cwd, &invoked, self.env.home)
                .is_some_and(|r| self.env.ws.contains(&r));
            if inside {
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` runs a program from the working directory (confined)")
                });
            } else {
                j.raise_with(Severity::Risky, "mode:workspace-write", || {
                    format!("`{c}` runs the program {invoked}, which is not on the safe list")
                });
            }
        } else {
            j.raise_with(Severity::Risky, "mode:workspace-write", || {
                format!("`{c}` is not a known command (not on the safe list)")
            });
        }

        // A downloader's stdout, or data passing through a filter.
        if out.download.is_none() && !matches!(n, "curl" | "wget") && self.stdin.piped {
            out.download = self.stdin.download.clone();
        }

        if untrusted_name
            && j.sev == Severity::ReadOnly
            && !matches!(n, "cd" | "export" | "echo" | "printf" | "true" | ":")
        {
            let why = if self.path_tainted {
                "PATH (or a preload variable) was changed"
            } else {
                "it is invoked by a path outside the system directories"
            };
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` may not be the standard `{n}`: {why}")
            });
        }
        let _ = full_text;
        out
    }

    fn shell(&mut self, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let mut has_c = false;
        let mut reads_stdin = false;
        let mut i = 0;
        let mut script: Option<&Word> = None;
        while i < args.len() {
            let a = &args[i];
            let t = a.text.as_str();
            if t == "--" || t == "-" {
                if t == "-" {
                    reads_stdin = true;
                }
                i += 1;
                script = args.get(i);
                break;
            }
            if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                i += 2;
                continue;
            }
            if t.starts_with("--") {
                i += 1;
                continue;
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 && !a.dynamic {
                if t[1..].contains('c') {
                    has_c = true;
                }
                if t[1..].contains('s') {
                    reads_stdin = true;
                }
                i += 1;
                continue;
            }
            script = Some(a);
            break;
        }
        if has_c {
            match script {
                Some(s) => {
                    let s = s.clone();
                    self.shell_string(j, &s, cmd_text);
                }
                None => j.raise_with(Severity::Unresolved, "unresolved", || {
                    format!("`{}` has -c without a command string", short(cmd_text))
                }),
            }
            return;
        }
        match script {
            Some(s) if !reads_stdin => {
                if let Some(st) = s.stream.as_deref() {
                    let st = st.clone();
                    self.shell_stream(j, &st, cmd_text, "a shell");
                } else if self.run_written(j, &s.clone(), cmd_text) {
                    // Judged by the content written earlier in this line.
                } else if s.dynamic {
                    j.raise_with(Severity::Unresolved, "unresolved", || {
                        format!("`{}` runs a script only known at run time", short(cmd_text))
                    });
                } else {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{}` runs the script {}", short(cmd_text), s.text)
                    });
                }
            }
            _ => {
                let stdin = self.stdin.clone();
                if stdin.download.is_some()
                    || stdin.known.is_some()
                    || stdin.files.is_some()
                    || stdin.piped
                {
                    self.shell_stream(j, &stdin, cmd_text, "a shell");
                } else {
                    j.raise_with(Severity::Risky, "mode:workspace-write", || {
                        format!("`{}` starts an interactive shell", short(cmd_text))
                    });
                }
            }
        }
    }

    fn interpreter(
        &mut self,
        n: &str,
        args: &[Word],
        j: &mut Judge,
        cmd_text: &str,
        cwd: Option<&Path>,
    ) {
        let c = Short(cmd_text);
        if args
            .iter()
            .any(|a| matches!(a.text.as_str(), "--version" | "-V" | "--help" | "-h" | "-v"))
            && args.len() == 1
        {
            return;
        }
        let code_flag = match n {
            "python" | "python3" | "python2" | "pypy" | "pypy3" => "-c",
            "node" | "nodejs" => "-e",
            "php" => "-r",
            _ => "-e",
        };
        let code = args
            .iter()
            .position(|a| {
                a.text == code_flag
                    || (n.starts_with("node")
                        && matches!(a.text.as_str(), "--eval" | "-p" | "--print"))
                    || (n == "perl" && a.text == "-E")
            })
            .and_then(|i| args.get(i + 1));
        if let Some(code) = code {
            let compact: String = code.text.split_whitespace().collect();
            if compact.contains("forkwhilefork") || compact.contains("whileTrue:os.fork()") {
                j.raise_with(Severity::Floor, "floor", || format!("`{c}` is a fork bomb"));
            }
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` runs inline {n} code (confined)")
            });
            return;
        }
        if n == "perl" && has_flag(args, &['i'], &[]) {
            self.sed(n, args, j, cmd_text, cwd);
            return;
        }
        if n.starts_with("py")
            && let Some(m) = opt_value(args, Some("-m"), &[])
        {
            if matches!(m.text.as_str(), "pip" | "pip3" | "ensurepip" | "pipx") {
                let idx = args
                    .iter()
                    .position(|a| a.text == "-m" || a.text.starts_with("-m"))
                    .unwrap_or(0);
                let rest: Vec<Word> = args[idx + 1..]
                    .iter()
                    .skip(if args[idx].text == "-m" { 1 } else { 0 })
                    .cloned()
                    .collect();
                self.lang_pm("pip", &rest, j, cmd_text);
                return;
            }
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` runs the {} module (confined)", m.text)
            });
            return;
        }
        let script = positionals(
            args,
            &[
                "-W",
                "-X",
                "-I",
                "-M",
                "-r",
                "--require",
                "--import",
                "--loader",
            ],
        )
        .into_iter()
        .next();
        match script {
            Some(s) if s.text != "-" => {
                if let Some(st) = s.stream.as_deref()
                    && let Some(d) = &st.download
                {
                    j.raise_with(Severity::Floor, "floor", || {
                        format!("`{c}` runs a download (`{}`) with {n}", short(d))
                    });
                    return;
                }
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` runs the {n} script {} (confined)", s.text)
                });
            }
            _ => {
                if let Some(d) = &self.stdin.download {
                    j.raise_with(Severity::Floor, "floor", || {
                        format!("`{c}` runs a download (`{}`) with {n}", short(d))
                    });
                } else if self.stdin.piped || self.stdin.known.is_some() {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` runs {n} code from its input (confined)")
                    });
                } else {
                    j.raise_with(Severity::Risky, "mode:workspace-write", || {
                        format!("`{c}` starts an interactive {n}")
                    });
                }
            }
        }
    }

    fn rm(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        let recursive = n == "rm" && has_flag(args, &['r', 'R'], &["--recursive"]);
        let targets = positionals(
            args,
            &["-n", "--iterations", "-s", "--size", "--interactive"],
        );
        if recursive && !targets.is_empty() {
            j.raise_with(Severity::Risky, "recursive-delete", || {
                format!("`{c}` deletes a directory tree recursively")
            });
        }
        for t in &targets {
            if recursive {
                self.recursive_target(j, t, cwd, cmd_text, "deletes recursively");
            } else {
                self.write_target(j, t, cwd, cmd_text, "deletes");
            }
        }
        j.raise_with(Severity::Safe, "safe-list", || {
            format!("`{c}` deletes files inside the working directory")
        });
    }

    fn chmod(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        let recursive = has_flag(args, &['R'], &["--recursive"]);
        let reference = args.iter().any(|a| a.text.starts_with("--reference"));
        let mut pos = positionals(args, &["--reference", "--from"]);
        if !reference && !pos.is_empty() && n != "chattr" {
            pos.remove(0);
        }
        for t in pos {
            if recursive {
                self.recursive_target(
                    j,
                    t,
                    cwd,
                    cmd_text,
                    "changes ownership or permissions recursively of",
                );
            } else {
                self.write_target(j, t, cwd, cmd_text, "changes permissions of");
            }
        }
        j.raise_with(Severity::Safe, "safe-list", || {
            format!("`{c}` changes permissions inside the working directory")
        });
    }

    fn find(
        &mut self,
        args: &[Word],
        j: &mut Judge,
        cmd_text: &str,
        cwd: Option<&Path>,
        depth: u32,
    ) {
        let c = Short(cmd_text);
        let mut i = 0;
        while i < args.len() && matches!(args[i].text.as_str(), "-H" | "-L" | "-P")
            || i < args.len() && (args[i].text == "-D" || args[i].text.starts_with("-O"))
        {
            i += if args[i].text == "-D" { 2 } else { 1 };
        }
        let mut starts: Vec<Word> = Vec::new();
        while i < args.len() {
            let t = &args[i].text;
            if t.starts_with('-') || t == "(" || t == "!" || t == "," {
                break;
            }
            starts.push(args[i].clone());
            i += 1;
        }
        if starts.is_empty() {
            starts.push(Word::lit("."));
        }
        while i < args.len() {
            let t = args[i].text.as_str();
            match t {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let mut cmd = Vec::new();
                    i += 1;
                    while i < args.len() && args[i].text != ";" && args[i].text != "+" {
                        cmd.push(args[i].clone());
                        i += 1;
                    }
                    // `{}` stands for each start path and what is below it;
                    // judge it as each start path.
                    for s in &starts {
                        let built: Vec<Word> = cmd
                            .iter()
                            .map(|w| {
                                if w.text.contains("{}") {
                                    Word {
                                        text: w.text.replace("{}", &s.text),
                                        dynamic: w.dynamic || s.dynamic,
                                        glob: w.glob || s.glob,
                                        ..Word::default()
                                    }
                                } else {
                                    w.clone()
                                }
                            })
                            .collect();
                        if !built.is_empty() {
                            let saved = std::mem::take(&mut self.stdin);
                            self.simple(built, &[], depth + 1);
                            self.stdin = saved;
                        }
                    }
                }
                "-delete" => {
                    for s in &starts {
                        self.recursive_target(j, s, cwd, cmd_text, "deletes what it finds under");
                    }
                    j.raise_with(Severity::Risky, "recursive-delete", || {
                        format!("`{c}` deletes files in a directory tree")
                    });
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(f) = args.get(i + 1) {
                        self.write_target(j, f, cwd, cmd_text, "writes its results to");
                    }
                    i += 1;
                }
                _ => {}
            }
            i += 1;
        }
    }

    fn copy_like(
        &mut self,
        n: &str,
        args: &[Word],
        j: &mut Judge,
        cmd_text: &str,
        cwd: Option<&Path>,
    ) {
        let c = Short(cmd_text);
        let with_value = [
            "-t",
            "--target-directory",
            "-S",
            "--suffix",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
        ];
        let target_dir = opt_value(args, Some("-t"), &["--target-directory"]);
        let mut pos: Vec<Word> = positionals(args, &with_value)
            .into_iter()
            .cloned()
            .collect();
        let dirs_only = n == "install" && has_flag(args, &['d'], &["--directory"]);
        let dest: Option<Word> = if dirs_only {
            for t in &pos {
                self.write_target(j, t, cwd, cmd_text, "creates");
            }
            pos.clear();
            None
        } else if target_dir.is_some() {
            target_dir
        } else if pos.len() >= 2 {
            pos.pop()
        } else if n == "ln" && pos.len() == 1 {
            Some(Word::lit("."))
        } else {
            None
        };
        if let Some(d) = &dest {
            self.write_target(j, d, cwd, cmd_text, "writes to");
        }
        for s in &pos {
            if n == "mv" {
                // Moving a source away deletes it there.
                if !s.dynamic
                    && let Some(r) = paths::resolve(cwd, &s.text, self.env.home)
                    && paths::is_floor_dir(&r, self.env.home)
                {
                    j.raise_with(Severity::Floor, "floor", || {
                        format!("`{c}` moves away {}", r.display())
                    });
                }
                self.write_target(j, s, cwd, cmd_text, "moves away");
            }
        }
        j.raise_with(Severity::Safe, "safe-list", || {
            format!("`{c}` writes inside the working directory")
        });
    }

    fn sed(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        let in_place = args.iter().any(|a| {
            let t = a.text.as_str();
            t.starts_with("--in-place")
                || (t.starts_with('-')
                    && !t.starts_with("--")
                    && (t[1..].starts_with('i') || t[1..].contains('i') && n == "perl")
                    && t.len() > 1)
                || (n == "sed" && t == "-I")
        });
        if !in_place {
            if n == "sed" {
                // `e` runs commands, `w`/`W` write files: a script using
                // them is not read-only (judged loosely: any such letter
                // after a command separator or address).
                let script: String = args
                    .iter()
                    .filter(|a| !is_opt(a))
                    .take(1)
                    .chain(args.iter().filter(|a| a.text.starts_with("--expression")))
                    .map(|a| a.text.clone())
                    .collect();
                let runs_or_writes = script.split([';', '\n', '}']).any(|cmd| {
                    let t = cmd
                        .trim_start_matches(|ch: char| ch.is_ascii_digit() || " ,$!{".contains(ch));
                    t.starts_with('e') || t.starts_with('w') || t.starts_with('W')
                }) || script.contains("/w ")
                    || script.contains("/e")
                    || args
                        .iter()
                        .any(|a| a.text == "-f" || a.text.starts_with("--file"));
                if runs_or_writes {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` runs a sed script that can write files or run commands")
                    });
                }
                return;
            }
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` runs a perl program (confined)")
            });
            return;
        }
        let explicit_script = args.iter().any(|a| {
            matches!(a.text.as_str(), "-e" | "-f" | "--expression" | "--file")
                || a.text.starts_with("--expression=")
                || a.text.starts_with("--file=")
        });
        let with_value = [
            "-e",
            "-f",
            "--expression",
            "--file",
            "-l",
            "--line-length",
            "-E",
        ];
        let mut pos = positionals(
            args,
            if n == "perl" {
                &["-e", "-E", "-M", "-I"]
            } else {
                &with_value
            },
        );
        if n == "sed" && !explicit_script && !pos.is_empty() {
            pos.remove(0);
        }
        if n == "perl"
            && !explicit_script
            && !args.iter().any(|a| a.text.contains('e'))
            && !pos.is_empty()
        {
            pos.remove(0);
        }
        if pos.is_empty() {
            self.write_cwd(j, cwd, cmd_text);
        }
        for f in pos {
            self.write_target(j, f, cwd, cmd_text, "edits in place");
        }
        j.raise_with(Severity::Safe, "safe-list", || {
            format!("`{c}` edits files in place inside the working directory")
        });
    }

    fn tar(&mut self, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        let first = args.first().map(|a| a.text.as_str()).unwrap_or("");
        let bundled = !first.starts_with('-') && !first.is_empty();
        let mode_has = |ch: char, long: &str| {
            (bundled && first.contains(ch)) || has_flag(args, &[ch], &[long])
        };
        if mode_has('t', "--list") {
            return;
        }
        let extract = mode_has('x', "--extract") || mode_has('x', "--get");
        let create =
            mode_has('c', "--create") || mode_has('r', "--append") || mode_has('u', "--update");
        let file = opt_value(args, Some("-f"), &["--file"]).or_else(|| {
            if bundled && first.contains('f') {
                args.get(1).cloned()
            } else {
                None
            }
        });
        if extract {
            match opt_value(args, Some("-C"), &["--directory"]) {
                Some(d) => self.write_target(j, &d, cwd, cmd_text, "extracts into"),
                None => self.write_cwd(j, cwd, cmd_text),
            }
        }
        if create && let Some(f) = file.filter(|f| f.text != "-") {
            self.write_target(j, &f, cwd, cmd_text, "writes the archive");
        }
        if extract || create {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` works with an archive inside the working directory")
            });
        }
    }

    fn downloader(
        &mut self,
        n: &str,
        args: &[Word],
        j: &mut Judge,
        cmd_text: &str,
        cwd: Option<&Path>,
        out: &mut Stream,
    ) {
        let c = Short(cmd_text);
        j.raise_with(Severity::Risky, "network", || {
            format!("`{c}` downloads from the network")
        });
        let to_file = match n {
            "curl" => opt_value(args, Some("-o"), &["--output"])
                .filter(|o| o.text != "-")
                .map(Some)
                .or_else(|| {
                    has_flag(args, &['O'], &["--remote-name", "--remote-name-all"]).then_some(None)
                }),
            "wget" => match opt_value(args, Some("-O"), &["--output-document"]).or_else(|| {
                // `-qO-`, `-qO file`
                args.iter().find_map(|a| {
                    let t = a.text.as_str();
                    (t.starts_with('-') && !t.starts_with("--") && t.contains('O')).then(|| {
                        let after = &t[t.find('O').map(|i| i + 1).unwrap_or(t.len())..];
                        Word::lit(after)
                    })
                })
            }) {
                Some(o) if o.text == "-" => None,
                Some(o) if o.text.is_empty() => None,
                Some(o) => Some(Some(o)),
                None => Some(None),
            },
            "aria2c" => Some(None),
            _ => opt_value(args, Some("-o"), &["--output"]).map(Some),
        };
        match to_file {
            Some(Some(f)) => {
                self.write_target(j, &f, cwd, cmd_text, "downloads to");
                self.record_written(&f, Written::Download(cmd_text.to_owned()), false);
            }
            Some(None) => self.write_cwd(j, cwd, cmd_text),
            None => out.download = Some(cmd_text.to_owned()),
        }
        // `-d @file` / `-T file` upload local files.
        for a in args {
            if let Some(f) = a.text.strip_prefix('@') {
                let w = Word {
                    text: f.to_owned(),
                    ..a.clone()
                };
                self.read_target(j, &w, cwd, cmd_text);
            }
        }
        if n == "wget"
            && let Some(p) = opt_value(args, Some("-P"), &["--directory-prefix"])
        {
            self.write_target(j, &p, cwd, cmd_text, "downloads into");
        }
    }

    fn rsync(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        let pos = positionals(
            args,
            &[
                "-e",
                "--rsh",
                "--exclude",
                "--include",
                "--filter",
                "-f",
                "--port",
                "--chmod",
            ],
        );
        let remote = |w: &Word| {
            w.text.starts_with("rsync://")
                || w.text
                    .split_once(':')
                    .is_some_and(|(h, _)| !h.is_empty() && !h.contains('/'))
        };
        if n == "scp" || pos.iter().any(|w| remote(w)) {
            j.raise_with(Severity::Risky, "network", || {
                format!("`{c}` copies over the network")
            });
        }
        if let Some(dest) = pos.last().filter(|_| pos.len() >= 2)
            && !remote(dest)
        {
            if args.iter().any(|a| a.text.starts_with("--delete")) {
                self.recursive_target(j, dest, cwd, cmd_text, "deletes (rsync --delete) inside");
            }
            self.write_target(j, dest, cwd, cmd_text, "writes to");
        }
        for s in pos.iter().take(pos.len().saturating_sub(1)) {
            if !remote(s) {
                self.read_target(j, s, cwd, cmd_text);
            }
        }
        j.raise_with(Severity::Safe, "safe-list", || {
            format!("`{c}` copies files inside the working directory")
        });
    }

    fn git(&mut self, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        let mut i = 0;
        let mut dir = cwd.map(Path::to_path_buf);
        while i < args.len() {
            let t = args[i].text.as_str();
            match t {
                "-C" => {
                    dir = args.get(i + 1).and_then(|w| self.dir_of(w, dir.as_deref()));
                    i += 2;
                }
                "-c" | "--config-env" | "--exec-path" => {
                    // Configuration on the command line can name programs
                    // git runs (core.pager, core.sshCommand, aliases).
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!(
                            "`{}` passes git configuration that can run programs",
                            short(cmd_text)
                        )
                    });
                    i += 2;
                }
                "--git-dir" | "--work-tree" | "--namespace" => i += 2,
                _ if t.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let _ = dir;
        let sub = args.get(i).map(|w| w.text.as_str()).unwrap_or("");
        let rest = args.get(i + 1..).unwrap_or(&[]);
        let rest_pos = positionals(rest, &[]);
        let has = |f: &str| {
            rest.iter()
                .any(|a| a.text == f || a.text.starts_with(&format!("{f}=")))
        };
        match sub {
            "" | "--version" | "version" | "help" | "--help" => {}
            "status" | "log" | "diff" | "show" | "blame" | "annotate" | "ls-files" | "ls-tree"
            | "rev-parse" | "rev-list" | "describe" | "shortlog" | "grep" | "cat-file"
            | "name-rev" | "merge-base" | "count-objects" | "check-ignore" | "check-attr"
            | "whatchanged" | "show-ref" | "for-each-ref" | "verify-commit" | "verify-tag"
            | "cherry" | "range-diff" | "diff-tree" | "diff-files" | "diff-index" | "var"
            | "fsck" | "show-branch" | "check-ref-format" | "hash-object" | "difftool" => {
                if (sub == "diff" || sub == "log" || sub == "show")
                    && let Some(o) = opt_value(rest, None, &["--output"])
                {
                    self.write_target(j, &o, cwd, cmd_text, "writes");
                }
            }
            "branch" => {
                let listing_flags = [
                    "-a",
                    "-r",
                    "-l",
                    "--list",
                    "-v",
                    "-vv",
                    "--all",
                    "--remotes",
                    "--show-current",
                    "--verbose",
                    "--no-color",
                    "--color",
                ];
                let deletes_forced = rest.iter().any(|a| a.text == "-D" || a.text == "--force")
                    && rest
                        .iter()
                        .any(|a| matches!(a.text.as_str(), "-D" | "-d" | "--delete"));
                if deletes_forced {
                    j.raise_with(Severity::Risky, "destructive-git", || {
                        format!("`{c}` force-deletes a branch (unmerged work can be lost)")
                    });
                } else if rest_pos.is_empty()
                    && rest.iter().all(|a| {
                        listing_flags.contains(&a.text.as_str())
                            || a.text.starts_with("--sort")
                            || a.text.starts_with("--format")
                            || a.text.starts_with("--contains")
                            || a.text.starts_with("--merged")
                            || a.text.starts_with("--no-merged")
                    })
                    || has("--list")
                    || has("-l")
                    || has("--show-current")
                {
                    // Lists branches.
                } else {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` changes branches in the repository")
                    });
                }
            }
            "tag" => {
                if rest_pos.is_empty() || has("-l") || has("--list") {
                } else {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` changes tags in the repository")
                    });
                }
            }
            "remote" => match rest_pos.first().map(|w| w.text.as_str()) {
                None | Some("show" | "get-url") => {}
                Some("update") => j.raise_with(Severity::Risky, "network", || {
                    format!("`{c}` fetches from remotes")
                }),
                Some(_) => j.raise_with(Severity::Risky, "protected-path", || {
                    format!("`{c}` changes the repository's remotes (.git/config)")
                }),
            },
            "config" => {
                let reading = rest.iter().any(|a| {
                    matches!(
                        a.text.as_str(),
                        "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "--list"
                            | "-l"
                            | "--get-urlmatch"
                            | "get"
                            | "list"
                    )
                }) || (rest_pos.len() <= 1
                    && !rest.iter().any(|a| {
                        matches!(
                            a.text.as_str(),
                            "--unset"
                                | "--unset-all"
                                | "--add"
                                | "--replace-all"
                                | "--edit"
                                | "-e"
                                | "--remove-section"
                                | "--rename-section"
                                | "set"
                                | "unset"
                        )
                    }));
                if !reading {
                    j.raise_with(Severity::Risky, "protected-path", || format!("`{c}` changes git configuration (hooks, aliases and filters in it can run code)"));
                }
            }
            "stash" => match rest_pos.first().map(|w| w.text.as_str()) {
                Some("list" | "show") => {}
                Some("drop" | "clear") => j.raise_with(Severity::Risky, "destructive-git", || {
                    format!("`{c}` discards stashed changes")
                }),
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` stashes changes")
                }),
            },
            "worktree" => match rest_pos.first().map(|w| w.text.as_str()) {
                Some("list") => {}
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` changes worktrees")
                }),
            },
            "reflog" => {
                if let Some("expire" | "delete") = rest_pos.first().map(|w| w.text.as_str()) {
                    j.raise_with(Severity::Risky, "destructive-git", || {
                        format!("`{c}` deletes reflog entries (the safety net for lost commits)")
                    })
                }
            }
            "notes" => match rest_pos.first().map(|w| w.text.as_str()) {
                None | Some("list" | "show") => {}
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` changes notes")
                }),
            },
            "push" => j.raise_with(Severity::Risky, "git-push", || {
                format!("`{c}` pushes to a remote repository")
            }),
            "fetch" | "pull" | "clone" | "ls-remote" | "request-pull" | "send-email"
            | "archive"
                if sub != "archive" || has("--remote") =>
            {
                j.raise_with(Severity::Risky, "network", || {
                    format!("`{c}` talks to a remote repository")
                });
                if sub == "clone" {
                    if let Some(d) = rest_pos.get(1) {
                        self.write_target(j, d, cwd, cmd_text, "clones into");
                    } else {
                        self.write_cwd(j, cwd, cmd_text);
                    }
                }
            }
            "submodule" => match rest_pos.first().map(|w| w.text.as_str()) {
                None | Some("status" | "summary" | "foreach")
                    if sub == "submodule"
                        && rest_pos.first().map(|w| w.text.as_str()) != Some("foreach") => {}
                Some("foreach") => j.raise_with(Severity::Risky, "mode:workspace-write", || {
                    format!("`{c}` runs a command in every submodule")
                }),
                _ => j.raise_with(Severity::Risky, "network", || {
                    format!("`{c}` fetches submodules")
                }),
            },
            "reset" => {
                if has("--hard") || has("--merge") || has("--keep") {
                    j.raise_with(Severity::Risky, "destructive-git", || {
                        format!("`{c}` discards uncommitted changes")
                    });
                } else {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` moves the branch head")
                    });
                }
            }
            "clean" => {
                let dry = rest.iter().any(|a| {
                    a.text == "-n"
                        || a.text == "--dry-run"
                        || (a.text.starts_with('-')
                            && !a.text.starts_with("--")
                            && a.text.contains('n'))
                });
                if dry {
                } else {
                    j.raise_with(Severity::Risky, "destructive-git", || {
                        format!("`{c}` deletes untracked files")
                    });
                }
            }
            "filter-branch" | "filter-repo" | "update-ref" | "replace" | "prune" => {
                j.raise_with(Severity::Risky, "destructive-git", || {
                    format!("`{c}` rewrites or deletes repository history")
                });
            }
            "gc" if has("--prune") => {
                j.raise_with(Severity::Risky, "destructive-git", || {
                    format!("`{c}` prunes unreachable objects")
                });
            }
            "checkout" | "restore" if has("-f") || has("--force") => {
                j.raise_with(Severity::Risky, "destructive-git", || {
                    format!("`{c}` discards local changes")
                });
            }
            "add" | "commit" | "checkout" | "switch" | "restore" | "merge" | "rebase"
            | "cherry-pick" | "revert" | "mv" | "rm" | "init" | "apply" | "am" | "format-patch"
            | "bisect" | "gc" | "sparse-checkout" | "maintenance" | "bundle" | "mergetool"
            | "citool" | "commit-tree" | "read-tree" | "write-tree" | "update-index"
            | "pack-refs" | "repack" | "rerere" | "archive" | "lfs" | "stage" | "symbolic-ref" => {
                if sub == "archive"
                    && let Some(o) = opt_value(rest, Some("-o"), &["--output"])
                {
                    self.write_target(j, &o, cwd, cmd_text, "writes");
                }
                if sub == "lfs"
                    && matches!(
                        rest_pos.first().map(|w| w.text.as_str()),
                        Some("fetch" | "pull" | "push" | "clone")
                    )
                {
                    j.raise_with(Severity::Risky, "network", || {
                        format!("`{c}` transfers LFS objects over the network")
                    });
                }
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` changes the repository in the working directory")
                });
            }
            _ => j.raise_with(Severity::Risky, "mode:workspace-write", || {
                format!("`{c}` runs an unknown git subcommand or alias")
            }),
        }
    }

    fn cargo(&mut self, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if matches!(t, "--color" | "-Z" | "--config" | "-C" | "--manifest-path") {
                i += 2;
            } else if t.starts_with('-') || t.starts_with('+') {
                i += 1;
            } else {
                break;
            }
        }
        let sub = args.get(i).map(|w| w.text.as_str()).unwrap_or("");
        let version_only = args.iter().any(|a| a.text == "--version" || a.text == "-V");
        match sub {
            _ if version_only && sub.is_empty() => {}
            "" | "version" | "metadata" | "tree" | "locate-project" | "pkgid"
            | "verify-project" | "read-manifest" | "help" | "--list" => {}
            "install" | "uninstall" | "add" | "binstall" => {
                j.raise_with(Severity::Risky, "package-install", || {
                    format!("`{c}` installs or adds packages")
                })
            }
            "publish" | "login" | "logout" | "owner" | "yank" | "search" | "fetch" | "update"
            | "vendor" | "info" => j.raise_with(Severity::Risky, "network", || {
                format!("`{c}` uses the network (crates.io)")
            }),
            _ => j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` is a cargo build/test command (confined)")
            }),
        }
    }

    fn node_pm(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        let sub = first_positional(args).unwrap_or("");
        if args.len() == 1 && matches!(args[0].text.as_str(), "--version" | "-v" | "-V") {
            return;
        }
        let install = match n {
            "npm" => matches!(
                sub,
                "install"
                    | "i"
                    | "in"
                    | "ins"
                    | "inst"
                    | "insta"
                    | "instal"
                    | "isnt"
                    | "isnta"
                    | "isntal"
                    | "add"
                    | "ci"
                    | "clean-install"
                    | "install-test"
                    | "it"
                    | "install-ci-test"
                    | "cit"
                    | "uninstall"
                    | "un"
                    | "unlink"
                    | "remove"
                    | "rm"
                    | "r"
                    | "update"
                    | "up"
                    | "upgrade"
                    | "udpate"
                    | "link"
                    | "ln"
                    | "dedupe"
                    | "ddp"
                    | "rebuild"
                    | "rb"
            ),
            "yarn" => {
                sub.is_empty()
                    || matches!(
                        sub,
                        "add" | "install" | "remove" | "upgrade" | "up" | "global" | "dlx" | "link"
                    )
            }
            "pnpm" => matches!(
                sub,
                "add"
                    | "install"
                    | "i"
                    | "remove"
                    | "rm"
                    | "update"
                    | "up"
                    | "dlx"
                    | "link"
                    | "unlink"
            ),
            "bun" => matches!(
                sub,
                "add" | "a" | "install" | "i" | "remove" | "rm" | "update" | "link" | "x"
            ),
            "deno" => matches!(sub, "install" | "add" | "upgrade" | "uninstall" | "remove"),
            _ => false,
        };
        let network = match n {
            "npm" => matches!(
                sub,
                "publish"
                    | "unpublish"
                    | "deprecate"
                    | "dist-tag"
                    | "login"
                    | "adduser"
                    | "logout"
                    | "view"
                    | "info"
                    | "show"
                    | "v"
                    | "outdated"
                    | "audit"
                    | "search"
                    | "exec"
                    | "x"
                    | "doctor"
                    | "owner"
                    | "access"
                    | "token"
                    | "init"
                    | "create"
                    | "ping"
            ),
            "yarn" | "pnpm" => matches!(
                sub,
                "publish"
                    | "login"
                    | "info"
                    | "outdated"
                    | "audit"
                    | "exec"
                    | "create"
                    | "init"
                    | "npm"
            ),
            _ => false,
        };
        let query = matches!(
            sub,
            "ls" | "list"
                | "ll"
                | "la"
                | "root"
                | "prefix"
                | "bin"
                | "help"
                | "explain"
                | "why"
                | "config"
                | "get"
                | "--version"
                | "-v"
                | "fund"
                | "version"
        );
        if install {
            j.raise_with(Severity::Risky, "package-install", || {
                format!("`{c}` installs or removes packages")
            });
        } else if network {
            j.raise_with(Severity::Risky, "network", || {
                format!("`{c}` uses the package registry over the network")
            });
        } else if query {
        } else {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` runs a project script or tool (confined)")
            });
        }
    }

    fn lang_pm(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        let sub = first_positional(args).unwrap_or("");
        if args.len() == 1 && matches!(args[0].text.as_str(), "--version" | "-V" | "version") {
            return;
        }
        match n {
            "pip" | "pip3" => match sub {
                "install" | "uninstall" | "download" | "wheel" => {
                    j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs or removes Python packages")
                    })
                }
                "list" | "show" | "freeze" | "check" | "help" | "" | "config" | "debug"
                | "inspect" => {}
                "search" | "index" => j.raise_with(Severity::Risky, "network", || {
                    format!("`{c}` uses the network")
                }),
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` manages Python packages locally")
                }),
            },
            "uv" => {
                let sub2 = args
                    .iter()
                    .filter(|a| !a.text.starts_with('-'))
                    .nth(1)
                    .map(|w| w.text.as_str())
                    .unwrap_or("");
                match (sub, sub2) {
                    ("pip", "install" | "uninstall" | "sync" | "compile")
                    | (
                        "add" | "remove" | "sync" | "lock" | "tool" | "python" | "self" | "publish"
                        | "venv",
                        _,
                    ) => j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs or changes Python packages")
                    }),
                    ("pip", "list" | "show" | "freeze" | "check" | "tree")
                    | ("tree" | "version" | "help", _) => {}
                    _ => j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` runs a project command (confined)")
                    }),
                }
            }
            "go" => match sub {
                "get" | "install" => j.raise_with(Severity::Risky, "package-install", || {
                    format!("`{c}` installs Go packages")
                }),
                "mod"
                    if matches!(
                        args.iter()
                            .filter(|a| !a.text.starts_with('-'))
                            .nth(1)
                            .map(|w| w.text.as_str()),
                        Some("download")
                    ) =>
                {
                    j.raise_with(Severity::Risky, "network", || {
                        format!("`{c}` downloads modules")
                    })
                }
                "version" | "env" | "doc" | "help" | "list" => {
                    if sub == "env" && has_flag(args, &['w', 'u'], &[]) {
                        j.raise_with(Severity::Safe, "safe-list", || {
                            format!("`{c}` changes the Go environment")
                        });
                    }
                }
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` is a Go build/test command (confined)")
                }),
            },
            "bundle" => match sub {
                "install" | "update" | "add" => {
                    j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs gems")
                    })
                }
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` runs a project command (confined)")
                }),
            },
            "dotnet" => match sub {
                "add" | "tool" | "workload" | "nuget" | "restore" => {
                    j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs packages")
                    })
                }
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` is a .NET build/test command (confined)")
                }),
            },
            _ => j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` is a build/test command (confined)")
            }),
        }
    }

    /// Remembers a file this command line writes (and its content, when
    /// known) so running it later in the same line is judged by content.
    fn record_written(&mut self, target: &Word, content: Written, append: bool) {
        if target.dynamic {
            return;
        }
        let Some(lex) = self.lexical_of(&target.text) else {
            return;
        };
        if paths::is_harmless_device(&lex) {
            return;
        }
        let content = match (append, self.written.get(&lex).cloned(), content) {
            (true, Some(Written::Known(a)), Written::Known(b)) => Written::Known(a + &b),
            (true, Some(Written::Download(d)), _) | (true, _, Written::Download(d)) => {
                Written::Download(d)
            }
            (true, Some(_), _) => Written::Unknown,
            (_, _, c) => c,
        };
        self.written.insert(lex, content);
    }

    fn lexical_of(&self, raw: &str) -> Option<PathBuf> {
        let expanded = paths::expand_tilde(raw, self.env.home)?;
        let p = Path::new(expanded.as_ref());
        if p.is_absolute() {
            Some(paths::lexical(Path::new("/"), p))
        } else {
            self.cwd.as_deref().map(|c| paths::lexical(c, p))
        }
    }

    /// Running a script this command line wrote: judged by its content.
    /// `true` when handled.
    fn run_written(&mut self, j: &mut Judge, script: &Word, cmd_text: &str) -> bool {
        if script.dynamic || self.written.is_empty() {
            return false;
        }
        let Some(lex) = self.lexical_of(&script.text) else {
            return false;
        };
        match self.written.get(&lex).cloned() {
            None => false,
            Some(Written::Known(text)) => {
                self.nested_script(&text, cmd_text);
                true
            }
            Some(Written::Download(d)) => {
                j.raise_with(Severity::Floor, "floor", || {
                    format!(
                        "`{}` runs {}, downloaded earlier in this command (`{}`)",
                        short(cmd_text),
                        lex.display(),
                        short(&d)
                    )
                });
                true
            }
            Some(Written::Unknown) => {
                j.raise_with(
                    Severity::Unresolved,
                    "unresolved",
                    || format!(
                        "`{}` runs {}, written earlier in this command with content the check cannot see",
                        short(cmd_text),
                        lex.display()
                    ),
                );
                true
            }
        }
    }

    /// A write to the working directory (`tar x`, `unzip`, `patch`).
    fn write_cwd(&mut self, j: &mut Judge, cwd: Option<&Path>, cmd_text: &str) {
        let w = match cwd {
            Some(c) => Word::lit(&c.to_string_lossy()),
            None => Word {
                text: ".".into(),
                dynamic: true,
                ..Word::default()
            },
        };
        self.write_target(j, &w, cwd, cmd_text, "writes into");
    }

    fn write_target(
        &mut self,
        j: &mut Judge,
        w: &Word,
        cwd: Option<&Path>,
        cmd_text: &str,
        verb: &str,
    ) {
        let c = Short(cmd_text);
        if let Some(s) = w.stream.as_deref() {
            let _ = s;
            return;
        }
        if w.dynamic {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!(
                    "`{c}` {verb} `{}`, a path only known at run time (the sandbox confines it)",
                    short(&w.text)
                )
            });
            return;
        }
        let texts = if w.braces {
            text::expand_braces(&w.text)
        } else {
            vec![w.text.clone()]
        };
        for t in texts {
            if w.glob && t.contains(['*', '?', '[']) {
                self.glob_write(j, &t, cwd, c, verb);
                continue;
            }
            let Some(r) = paths::resolve(cwd, &t, self.env.home) else {
                j.raise_with(
                    Severity::Safe,
                    "safe-list",
                    || format!("`{c}` {verb} `{t}`, which the check cannot place (after a `cd` it could not follow)"),
                );
                continue;
            };
            if paths::is_harmless_device(&r.lexical) {
                continue;
            }
            if paths::is_net_pseudo_device(&r.lexical) {
                j.raise_with(Severity::Risky, "network", || {
                    format!("`{c}` {verb} {}, a network connection", r.display())
                });
                continue;
            }
            match paths::classify_write(&r, self.env.ws, self.env.home) {
                WriteClass::Floor(why) => j.raise_with(Severity::Floor, "floor", || {
                    format!("`{c}` {why}: {verb} {}", r.display())
                }),
                WriteClass::Protected(why) => {
                    j.raise_with(Severity::Risky, "protected-path", || {
                        format!("`{c}` {verb} {}: {why}", r.display())
                    })
                }
                WriteClass::Outside => j.raise_with(Severity::Risky, "outside-workspace", || {
                    format!(
                        "`{c}` {verb} {}, outside the working directory and writable roots",
                        r.display()
                    )
                }),
                WriteClass::Inside => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` {verb} {} inside the workspace", r.display())
                }),
            }
        }
    }

    /// A globbed write target: judged as a write into its literal parent
    /// directory, and on the floor if the glob can name a floor file.
    fn glob_write(
        &mut self,
        j: &mut Judge,
        pattern: &str,
        cwd: Option<&Path>,
        c: Short<'_>,
        verb: &str,
    ) {
        let abs = match paths::expand_tilde(pattern, self.env.home) {
            Some(p) if p.starts_with('/') => p.into_owned(),
            Some(p) => match cwd {
                Some(d) => format!("{}/{p}", d.display()),
                None => {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` {verb} `{pattern}` (the sandbox confines it)")
                    });
                    return;
                }
            },
            None => {
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` {verb} `{pattern}` (the sandbox confines it)")
                });
                return;
            }
        };
        for floor in [
            "/etc/passwd",
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/group",
            "/etc/sudoers",
            "/dev/sda",
            "/dev/nvme0n1",
            "/dev/vda",
            "/dev/xvda",
            "/dev/hda",
            "/dev/mmcblk0",
        ] {
            if text::wild_match(&abs, floor) {
                j.raise_with(Severity::Floor, "floor", || {
                    format!("`{c}` {verb} `{pattern}`, which can name {floor}")
                });
                return;
            }
        }
        let cut = abs.find(['*', '?', '[']).unwrap_or(abs.len());
        let parent = abs[..cut]
            .rsplit_once('/')
            .map(|(p, _)| if p.is_empty() { "/" } else { p })
            .unwrap_or("/");
        let w = Word::lit(parent);
        // The parent directory's own class, phrased as writes inside it.
        let mut inner = Judge {
            sev: Severity::ReadOnly,
            rule: "read-only-command",
            reason: String::new(),
        };
        self.write_target(&mut inner, &w, cwd, c.0, verb);
        let sev = inner.sev.max(if inner.sev == Severity::ReadOnly {
            Severity::Safe
        } else {
            inner.sev
        });
        if sev == Severity::Safe {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` {verb} `{pattern}` inside the workspace")
            });
        } else {
            j.raise(inner.sev, inner.rule, inner.reason);
        }
    }

    /// A recursive delete / chmod / chown of `w`.
    fn recursive_target(
        &mut self,
        j: &mut Judge,
        w: &Word,
        cwd: Option<&Path>,
        cmd_text: &str,
        verb: &str,
    ) {
        let c = Short(cmd_text);
        if w.dynamic {
            j.raise_with(Severity::Unresolved, "unresolved", || {
                format!(
                    "`{c}` {verb} `{}`, a path only known at run time",
                    short(&w.text)
                )
            });
            return;
        }
        let texts = if w.braces {
            text::expand_braces(&w.text)
        } else {
            vec![w.text.clone()]
        };
        for t in texts {
            if w.glob && t.contains(['*', '?', '[']) {
                let abs = match paths::expand_tilde(&t, self.env.home) {
                    Some(p) if p.starts_with('/') => Some(p.into_owned()),
                    Some(p) => cwd.map(|d| format!("{}/{p}", d.display())),
                    None => None,
                };
                let Some(abs) = abs else {
                    j.raise_with(Severity::Unresolved, "unresolved", || {
                        format!("`{c}` {verb} `{t}`, which the check cannot place")
                    });
                    continue;
                };
                let abs_lex = paths::lexical(Path::new("/"), Path::new(&abs))
                    .display()
                    .to_string();
                // The glob can name a floor directory itself…
                let mut floor_dirs: Vec<String> = vec!["/".into()];
                floor_dirs.extend(
                    [
                        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt",
                        "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "/tmp", "/mnt",
                        "/media", "/run", "/snap",
                    ]
                    .iter()
                    .map(|s| s.to_string()),
                );
                if let Some(h) = self.env.home {
                    floor_dirs.push(h.display().to_string());
                }
                let names_floor = floor_dirs
                    .iter()
                    .any(|d| text::wild_match(&abs_lex, d) || text::wild_match(&abs, d));
                // …or everything in one (`/*`, `~/*`, `/usr/*`).
                let (parent, last) = abs_lex.rsplit_once('/').unwrap_or(("", &abs_lex));
                let parent = if parent.is_empty() { "/" } else { parent };
                let wildcard_only = last.chars().all(|ch| matches!(ch, '*' | '?' | '.'))
                    && !parent.contains(['*', '?', '[']);
                let parent_floor = wildcard_only
                    && paths::resolve(None, parent, self.env.home)
                        .is_some_and(|r| paths::is_floor_dir(&r, self.env.home));
                if names_floor || parent_floor {
                    j.raise_with(Severity::Floor, "floor", || {
                        format!(
                            "`{c}` {verb} `{t}`, which covers {}",
                            if parent_floor {
                                parent
                            } else {
                                "a system or home directory"
                            }
                        )
                    });
                } else {
                    self.glob_write(j, &t, cwd, c, verb);
                }
                continue;
            }
            let Some(r) = paths::resolve(cwd, &t, self.env.home) else {
                j.raise_with(Severity::Unresolved, "unresolved", || {
                    format!("`{c}` {verb} `{t}`, which the check cannot place")
                });
                continue;
            };
            if paths::is_floor_dir(&r, self.env.home) {
                j.raise_with(Severity::Floor, "floor", || {
                    format!("`{c}` {verb} {}, a system or home directory", r.display())
                });
            } else {
                self.write_target(
                    j,
                    &Word::lit(&r.lexical.to_string_lossy()),
                    cwd,
                    cmd_text,
                    verb,
                );
            }
        }
    }

    /// A read of `w`: asks for credentials and private keys.
    fn read_target(&mut self, j: &mut Judge, w: &Word, cwd: Option<&Path>, cmd_text: &str) {
        if w.dynamic || w.stream.is_some() {
            return;
        }
        // Lexical spelling first; the kernel's only when the path itself is
        // a symlink (a read through a symlinked parent directory is not
        // followed here; read_file resolves fully).
        let Some(expanded) = paths::expand_tilde(&w.text, self.env.home) else {
            return;
        };
        let p = Path::new(expanded.as_ref());
        let lexical = match (p.is_absolute(), cwd) {
            (true, _) => paths::lexical(Path::new("/"), p),
            (false, Some(c)) => paths::lexical(c, p),
            (false, None) => return,
        };
        let is_link = paths::is_symlink(&lexical);
        let r = paths::Resolved {
            canonical: if is_link {
                paths::canonical(&lexical)
            } else {
                lexical.clone()
            },
            lexical,
        };
        if let Some(why) = paths::credential(&r, self.env.home, self.env.ws) {
            j.raise_with(Severity::Risky, "credentials", || {
                format!("`{}` reads {why}", short(cmd_text))
            });
        }
    }
}

/// Whether an argument plausibly names a file (for the credentials check).
fn looks_like_path(t: &str) -> bool {
    t.contains('/')
        || t.starts_with('.')
        || t.ends_with(".pem")
        || t.ends_with(".key")
        || t.ends_with(".p12")
        || t.ends_with(".pfx")
}

/// How many leading words of `args` are options (with their values).
fn skip_options(args: &[Word], with_value: &[&str]) -> usize {
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            return i + 1;
        }
        if !(t.starts_with('-') && t.len() > 1) || args[i].dynamic {
            break;
        }
        if with_value.contains(&t) {
            i += 2;
        } else {
            i += 1;
        }
    }
    i.min(args.len())
}
