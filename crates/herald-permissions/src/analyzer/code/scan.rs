//! What a piece of interpreter code does, read statically from its
//! tokens: the commands it runs (`os.system`, `subprocess`,
//! `child_process`, `system`, backticks, …), the trees it deletes
//! (`shutil.rmtree`, `fs.rmSync(…, {recursive: true})`,
//! `FileUtils.rm_rf`, …), the files it writes, deletes or reads, the
//! directories it changes to and whether it uses the network. Arguments
//! are evaluated as far as they are literal (string literals, joins,
//! home and working-directory lookups); the rest is unknown.
//!
//! It is a scan, not an interpreter: it looks for the standard library
//! calls by name, wherever they appear outside comments. Code that hides
//! its calls (`getattr(os, 'sys' + 'tem')`) is not seen; that code still
//! runs confined where the mode confines it.

use super::lex::{Lang, Piece, Tok, Val, lex};

/// One thing the code does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Runs a command string through a shell.
    Shell {
        api: String,
        cmd: Val,
    },
    /// Runs a program with arguments (no shell).
    Argv {
        api: String,
        argv: Vec<Val>,
    },
    /// Runs commands the scan cannot see.
    Exec {
        api: String,
    },
    /// Runs code of the same language given as a literal.
    Code {
        api: String,
        code: String,
    },
    /// Runs code the scan cannot see (`exec(x)`, `eval(x)` in JS).
    OpaqueCode {
        api: String,
    },
    DeleteTree {
        api: String,
        path: Val,
    },
    Delete {
        api: String,
        path: Val,
    },
    Write {
        api: String,
        path: Val,
    },
    Read {
        api: String,
        path: Val,
    },
    Chdir {
        path: Val,
    },
    Network {
        api: String,
    },
    ForkBomb,
}

/// Scans `code`; `None` when it is too long to scan.
pub(crate) fn scan(lang: Lang, code: &str) -> Option<Vec<Effect>> {
    let toks = lex(lang, code)?;
    let mut s = Scan {
        lang,
        toks: &toks,
        out: Vec::new(),
        imports: Imports::default(),
    };
    s.imports = s.find_imports();
    s.run();
    let compact: String = code.split_whitespace().collect();
    if compact.contains("forkwhilefork")
        || compact.contains("whileTrue:os.fork()")
        || compact.contains("while(true)fork")
        || compact.contains("loop{fork")
        || compact.contains("while1:os.fork()")
    {
        s.out.push(Effect::ForkBomb);
    }
    Some(s.out)
}

/// Modules the code imports or requires (what makes a bare name mean a
/// library call).
#[derive(Default)]
struct Imports {
    modules: Vec<String>,
}

impl Imports {
    fn has(&self, m: &str) -> bool {
        self.modules.iter().any(|x| x == m)
    }
}

/// Python modules that reach the network.
const PY_NET: &[&str] = &[
    "urllib",
    "urllib2",
    "urllib3",
    "requests",
    "http",
    "httplib",
    "httplib2",
    "socket",
    "httpx",
    "aiohttp",
    "ftplib",
    "smtplib",
    "telnetlib",
    "paramiko",
    "websocket",
    "websockets",
    "pycurl",
    "xmlrpc",
    "poplib",
    "imaplib",
    "nntplib",
    "ssl",
    "asyncssh",
    "fabric",
    "grpc",
    "boto3",
    "botocore",
    "tornado",
    "twisted",
    "socketserver",
];
/// Node modules that reach the network.
const JS_NET: &[&str] = &[
    "http",
    "https",
    "net",
    "dgram",
    "tls",
    "http2",
    "axios",
    "node-fetch",
    "got",
    "request",
    "ws",
    "undici",
    "superagent",
    "socket.io-client",
    "ssh2",
    "ftp",
    "nodemailer",
];
/// Perl modules (prefixes) that reach the network.
const PERL_NET: &[&str] = &[
    "LWP",
    "HTTP::Tiny",
    "HTTP::Request",
    "IO::Socket",
    "Net::",
    "Socket",
    "Mojo::UserAgent",
    "WWW::Mechanize",
    "Furl",
    "HTTP::Async",
];
/// Ruby libraries (required names or constants) that reach the network.
const RUBY_NET: &[&str] = &[
    "net/http",
    "net/https",
    "net/ftp",
    "net/ssh",
    "open-uri",
    "socket",
    "httparty",
    "faraday",
    "rest-client",
    "excon",
    "typhoeus",
    "Net::HTTP",
    "Net::FTP",
    "Net::SSH",
    "TCPSocket",
    "UDPSocket",
    "Socket",
    "URI.open",
    "HTTParty",
    "Faraday",
    "RestClient",
];

impl Scan<'_> {
    fn find_imports(&self) -> Imports {
        let mut modules = Vec::new();
        let t = self.toks;
        for i in 0..t.len() {
            let Tok::Name(n) = &t[i] else { continue };
            match (self.lang, n.as_str()) {
                (Lang::Python, "import") => {
                    // import a.b as c, d
                    let mut j = i + 1;
                    while let Some(Tok::Name(m)) = t.get(j) {
                        modules.push(m.clone());
                        if let Some(root) = m.split('.').next() {
                            modules.push(root.to_owned());
                        }
                        j += 1;
                        if matches!(t.get(j), Some(Tok::Name(a)) if a == "as") {
                            j += 2;
                        }
                        if t.get(j) == Some(&Tok::Punct(',')) {
                            j += 1;
                        } else {
                            break;
                        }
                    }
                }
                (Lang::Python, "from") => {
                    if let Some(Tok::Name(m)) = t.get(i + 1) {
                        modules.push(m.clone());
                        if let Some(root) = m.split('.').next() {
                            modules.push(root.to_owned());
                        }
                    }
                }
                (Lang::Python, "__import__" | "import_module")
                | (Lang::Js, "require" | "import")
                | (Lang::Ruby, "require" | "require_relative")
                | (Lang::Lua, "require")
                | (Lang::R, "library" | "require") => {
                    let arg = match (t.get(i + 1), t.get(i + 2)) {
                        (Some(Tok::Str(v)), _) | (Some(Tok::Punct('(')), Some(Tok::Str(v))) => {
                            v.known()
                        }
                        (Some(Tok::Punct('(')), Some(Tok::Name(n))) if self.lang == Lang::R => {
                            Some(n.clone())
                        }
                        _ => None,
                    };
                    if let Some(m) = arg {
                        let m = m.strip_prefix("node:").unwrap_or(&m).to_owned();
                        if let Some(root) = m.split(['.', '/']).next()
                            && self.lang == Lang::Python
                        {
                            modules.push(root.to_owned());
                        }
                        modules.push(m);
                    }
                }
                (Lang::Js, "from") => {
                    if let Some(Tok::Str(v)) = t.get(i + 1)
                        && let Some(m) = v.known()
                    {
                        modules.push(m.strip_prefix("node:").unwrap_or(&m).to_owned());
                    }
                }
                (Lang::Perl, "use" | "require") => {
                    if let Some(Tok::Name(m)) = t.get(i + 1) {
                        modules.push(m.clone());
                    }
                }
                _ => {}
            }
        }
        // `import x from 'https'` lexes `from` then a string; a bare
        // string after `import` is caught above.
        Imports { modules }
    }
}

struct Scan<'t> {
    lang: Lang,
    toks: &'t [Tok],
    out: Vec<Effect>,
    imports: Imports,
}

/// The last segment of a dotted or `::` name, without a leading `.`.
fn last_seg(n: &str) -> &str {
    let n = n.rsplit("::").next().unwrap_or(n);
    n.rsplit('.').next().unwrap_or(n)
}

/// An argument of a call: its tokens, with a Python keyword name split off.
#[derive(Debug, Clone, Copy)]
struct Arg<'t> {
    key: Option<&'t str>,
    toks: &'t [Tok],
}

impl<'t> Scan<'t> {
    fn run(&mut self) {
        let t = self.toks;
        let mut i = 0;
        while i < t.len() {
            match &t[i] {
                Tok::Cmd(v) => self.out.push(Effect::Shell {
                    api: "a command literal (backticks)".into(),
                    cmd: v.clone(),
                }),
                Tok::Name(n) => self.name_at(i, n),
                // gawk's network special files.
                Tok::Str(v)
                    if self.lang == Lang::Awk
                        && v.0
                            .iter()
                            .any(|p| matches!(p, Piece::Lit(s) if s.starts_with("/inet"))) =>
                {
                    self.out.push(Effect::Network {
                        api: "a /inet special file".into(),
                    });
                }
                _ => {}
            }
            i += 1;
        }
        self.network_imports();
    }

    /// The arguments of the call whose name is at `i`: in parentheses, or
    /// (Perl, Ruby, awk, Lua) up to the end of the statement.
    fn call_args(&self, i: usize) -> Option<Vec<Arg<'t>>> {
        let t = self.toks;
        match t.get(i + 1) {
            Some(Tok::Punct('(')) => {
                let end = matching(t, i + 1)?;
                Some(split_args(&t[i + 2..end]))
            }
            Some(Tok::Str(_) | Tok::Name(_) | Tok::Cmd(_))
                if matches!(self.lang, Lang::Perl | Lang::Ruby | Lang::Lua) =>
            {
                let mut end = i + 1;
                let mut depth = 0i32;
                while end < t.len() {
                    match &t[end] {
                        Tok::Punct('(' | '[' | '{') => depth += 1,
                        Tok::Punct(')' | ']' | '}') => {
                            if depth == 0 {
                                break;
                            }
                            depth -= 1;
                        }
                        Tok::Punct(';') if depth == 0 => break,
                        Tok::Name(n)
                            if depth == 0
                                && matches!(n.as_str(), "or" | "and" | "if" | "unless" | "do") =>
                        {
                            break;
                        }
                        _ => {}
                    }
                    end += 1;
                }
                Some(split_args(&t[i + 1..end]))
            }
            _ => None,
        }
    }

    /// The receiver of a method call at `i` (`.unlink` after `Path('x')`):
    /// its value.
    fn receiver(&self, i: usize) -> Val {
        let t = self.toks;
        if i == 0 {
            return Val::unknown();
        }
        // Walk back over one primary: `Name(…)`, `(…)`, a string.
        let end = i;
        let mut start = i - 1;
        match &t[start] {
            Tok::Punct(')') => {
                let Some(open) = matching_back(t, start) else {
                    return Val::unknown();
                };
                start = open;
                if start > 0 && matches!(t[start - 1], Tok::Name(_)) {
                    start -= 1;
                }
            }
            Tok::Str(_) | Tok::Name(_) => {}
            _ => return Val::unknown(),
        }
        self.eval(&t[start..end])
    }

    fn name_at(&mut self, i: usize, n: &str) {
        let seg = last_seg(n);
        match self.lang {
            Lang::Python => self.python(i, n, seg),
            Lang::Js => self.js(i, n, seg),
            Lang::Perl => self.perl(i, n, seg),
            Lang::Ruby => self.ruby(i, n, seg),
            Lang::Php => self.php(i, n, seg),
            Lang::Lua => self.lua(i, n, seg),
            Lang::R => self.r(i, n, seg),
            Lang::Awk => self.awk(i, n, seg),
        }
    }

    fn api(n: &str) -> String {
        n.trim_start_matches('.').to_owned()
    }

    fn arg<'a>(args: &[Arg<'a>], k: usize) -> Option<Arg<'a>> {
        args.iter().filter(|a| a.key.is_none()).nth(k).copied()
    }

    fn kwarg<'a>(args: &[Arg<'a>], key: &str) -> Option<Arg<'a>> {
        args.iter().find(|a| a.key == Some(key)).copied()
    }

    /// A command argument: a string (shell) or a list (argv).
    fn command(&mut self, api: String, arg: Option<Arg<'t>>, shell: bool) {
        let Some(arg) = arg else {
            self.out.push(Effect::Exec { api });
            return;
        };
        if let Some(list) = self.list(arg.toks) {
            if shell && list.len() == 1 {
                self.out.push(Effect::Shell {
                    api,
                    cmd: list[0].clone(),
                });
            } else {
                self.out.push(Effect::Argv { api, argv: list });
            }
            return;
        }
        let v = self.eval(arg.toks);
        if v.is_unknown() {
            self.out.push(Effect::Exec { api });
        } else {
            self.out.push(Effect::Shell { api, cmd: v });
        }
    }

    /// `system LIST`-style: one argument is a shell string, several are
    /// an argv.
    fn system_like(&mut self, api: String, args: &[Arg<'t>]) {
        let positional: Vec<Arg<'t>> = args.iter().filter(|a| a.key.is_none()).copied().collect();
        match positional.len() {
            0 => self.out.push(Effect::Exec { api }),
            1 => self.command(api, Some(positional[0]), true),
            _ => {
                let argv: Vec<Val> = positional.iter().map(|a| self.eval(a.toks)).collect();
                self.out.push(Effect::Argv { api, argv });
            }
        }
    }

    fn code(&mut self, api: String, arg: Option<Arg<'t>>) {
        let Some(arg) = arg else { return };
        let v = self.eval(arg.toks);
        match v.known() {
            Some(code) => self.out.push(Effect::Code { api, code }),
            None => self.out.push(Effect::OpaqueCode { api }),
        }
    }

    fn path_effect(&mut self, kind: fn(String, Val) -> Effect, api: &str, arg: Option<Arg<'t>>) {
        let v = arg.map_or_else(Val::unknown, |a| self.eval(a.toks));
        self.out.push(kind(Self::api(api), v));
    }

    fn python(&mut self, i: usize, n: &str, seg: &str) {
        let Some(args) = self.call_args(i) else {
            return;
        };
        let api = Self::api(n);
        let subprocess = n.contains("subprocess")
            || n.starts_with("sp.")
            || (self.imports.has("subprocess") && !n.contains('.'));
        // `os.remove(…)`, or `remove(…)` imported from os; a method on
        // another value (`s.replace(…)`, `lst.remove(…)`) is not one.
        let os_call = n.starts_with("os.") || (self.imports.has("os") && !n.contains('.'));
        match seg {
            // `__import__('os').system(…)` too.
            "system" | "popen" if os_call || n == seg || n.starts_with('.') => {
                self.command(api, Self::arg(&args, 0), true)
            }
            "getoutput" | "getstatusoutput" | "create_subprocess_shell" => {
                self.command(api, Self::arg(&args, 0), true)
            }
            "run" | "call" | "check_call" | "check_output" | "Popen"
                if subprocess || seg == "Popen" || seg == "check_output" =>
            {
                let shell = Self::kwarg(&args, "shell").is_some_and(|a| is_true(a.toks));
                self.command(
                    api,
                    Self::arg(&args, 0).or(Self::kwarg(&args, "args")),
                    shell,
                )
            }
            "create_subprocess_exec" => {
                let argv: Vec<Val> = args
                    .iter()
                    .filter(|a| a.key.is_none())
                    .map(|a| self.eval(a.toks))
                    .collect();
                self.out.push(Effect::Argv { api, argv });
            }
            s if (s.starts_with("execl") || s.starts_with("spawnl")) && os_call => {
                let skip = if s.starts_with("spawn") { 2 } else { 1 };
                let argv: Vec<Val> = args
                    .iter()
                    .filter(|a| a.key.is_none())
                    .skip(skip)
                    .map(|a| self.eval(a.toks))
                    .collect();
                self.out.push(if argv.is_empty() {
                    Effect::Exec { api }
                } else {
                    Effect::Argv { api, argv }
                });
            }
            s if (s.starts_with("execv")
                || s.starts_with("spawnv")
                || s.starts_with("posix_spawn"))
                && os_call =>
            {
                let list = args
                    .iter()
                    .filter(|a| a.key.is_none())
                    .find_map(|a| self.list(a.toks));
                self.out.push(match list {
                    Some(argv) => Effect::Argv { api, argv },
                    None => Effect::Exec { api },
                });
            }
            "spawn" if n.contains("pty") || self.imports.has("pty") => {
                self.command(api, Self::arg(&args, 0), true)
            }
            "exec" | "compile" if n == seg => self.code(api, Self::arg(&args, 0)),
            "eval" if n == seg => {
                if let Some(code) = Self::arg(&args, 0).and_then(|a| self.eval(a.toks).known()) {
                    self.out.push(Effect::Code { api, code });
                }
            }
            "rmtree" => self.path_effect(
                |api, path| Effect::DeleteTree { api, path },
                n,
                Self::arg(&args, 0).or(Self::kwarg(&args, "path")),
            ),
            "remove" | "unlink" | "rmdir" | "removedirs" if os_call => self.path_effect(
                |api, path| Effect::Delete { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "unlink" | "rmdir" if n.starts_with('.') => {
                let path = self.receiver(i);
                self.out.push(Effect::Delete { api, path });
            }
            "write_text" | "write_bytes" | "touch" | "mkdir" | "symlink_to" | "chmod"
                if n.starts_with('.') =>
            {
                let path = self.receiver(i);
                self.out.push(Effect::Write { api, path });
            }
            "read_text" | "read_bytes" if n.starts_with('.') => {
                let path = self.receiver(i);
                self.out.push(Effect::Read { api, path });
            }
            "open"
                if n == "open"
                    || n == "io.open"
                    || n == "codecs.open"
                    || n == "os.open"
                    || n.starts_with('.') =>
            {
                let (path, mode) = if n.starts_with('.') {
                    (
                        self.receiver(i),
                        Self::arg(&args, 0).or(Self::kwarg(&args, "mode")),
                    )
                } else {
                    (
                        Self::arg(&args, 0)
                            .or(Self::kwarg(&args, "file"))
                            .map_or_else(Val::unknown, |a| self.eval(a.toks)),
                        Self::arg(&args, 1)
                            .or(Self::kwarg(&args, "mode").or(Self::kwarg(&args, "flags"))),
                    )
                };
                let writes = mode.is_some_and(|m| {
                    let v = self.eval(m.toks);
                    v.known().is_some_and(|m| m.contains(['w', 'a', 'x', '+']))
                        || m.toks.iter().any(|t| matches!(t, Tok::Name(n) if n.contains("O_WRONLY") || n.contains("O_RDWR") || n.contains("O_CREAT") || n.contains("O_TRUNC")))
                });
                self.out.push(if writes {
                    Effect::Write { api, path }
                } else {
                    Effect::Read { api, path }
                });
            }
            "copy" | "copy2" | "copyfile" | "copytree" | "move"
                if n.contains("shutil") || self.imports.has("shutil") =>
            {
                if seg == "move" {
                    self.path_effect(
                        |api, path| Effect::Delete { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                }
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1).or(Self::kwarg(&args, "dst")),
                );
            }
            "rename" | "replace" if os_call => {
                self.path_effect(
                    |api, path| Effect::Delete { api, path },
                    n,
                    Self::arg(&args, 0),
                );
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1),
                );
            }
            "symlink" | "link" if os_call => self.path_effect(
                |api, path| Effect::Write { api, path },
                n,
                Self::arg(&args, 1),
            ),
            "chmod" | "chown" | "makedirs" | "mkdir" | "truncate" | "utime" if os_call => self
                .path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 0),
                ),
            "chdir" if os_call => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                self.out.push(Effect::Chdir { path });
            }
            "urlopen" | "urlretrieve" | "create_connection" => {
                self.out.push(Effect::Network { api })
            }
            _ => {}
        }
    }

    fn js(&mut self, i: usize, n: &str, seg: &str) {
        let has = |m: &str| self.imports.has(m);
        let child = has("child_process") || n.contains("child_process");
        let fs = has("fs")
            || has("fs/promises")
            || has("fs-extra")
            || n.starts_with("fs.")
            || n.contains("fs.promises");
        if matches!(seg, "XMLHttpRequest" | "WebSocket" | "EventSource") {
            self.out.push(Effect::Network {
                api: seg.to_owned(),
            });
            return;
        }
        let Some(args) = self.call_args(i) else {
            return;
        };
        let api = Self::api(n);
        match seg {
            "exec" | "execSync" if child => self.command(api, Self::arg(&args, 0), true),
            "spawn" | "spawnSync" | "execFile" | "execFileSync" | "fork"
                if child || n.starts_with("Bun.") =>
            {
                let first = Self::arg(&args, 0);
                if let Some(list) = first.and_then(|a| self.list(a.toks)) {
                    self.out.push(Effect::Argv { api, argv: list });
                    return;
                }
                let mut argv = vec![first.map_or_else(Val::unknown, |a| self.eval(a.toks))];
                match Self::arg(&args, 1).map(|a| self.list(a.toks)) {
                    Some(Some(rest)) => argv.extend(rest),
                    Some(None) => argv.push(Val::unknown()),
                    None => {}
                }
                let shell = args.iter().any(|a| has_key_true(a.toks, "shell"));
                if shell {
                    let mut cmd = Val::default();
                    for (k, a) in argv.into_iter().enumerate() {
                        if k > 0 {
                            cmd.push(Val::lit(" "));
                        }
                        cmd.push(a);
                    }
                    self.out.push(Effect::Shell { api, cmd });
                } else {
                    self.out.push(Effect::Argv { api, argv });
                }
            }
            "run" | "Command" if n.starts_with("Deno.") => self.out.push(Effect::Exec { api }),
            "eval" if n == seg => self.code(api, Self::arg(&args, 0)),
            "Function" if n == seg => self.code(api, args.last().copied()),
            "runInThisContext" | "runInNewContext" | "runInContext" => {
                self.code(api, Self::arg(&args, 0))
            }
            "rmSync" | "rm" | "rmdirSync" | "rmdir" if fs => {
                let recursive = args
                    .iter()
                    .skip(1)
                    .any(|a| has_key_true(a.toks, "recursive"));
                if recursive {
                    self.path_effect(
                        |api, path| Effect::DeleteTree { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                } else {
                    self.path_effect(
                        |api, path| Effect::Delete { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                }
            }
            "rimraf" | "removeSync" | "remove" | "emptyDirSync" | "emptyDir" | "sync"
                if (seg != "sync" || n.contains("rimraf")) && (seg != "remove" || fs) =>
            {
                self.path_effect(
                    |api, path| Effect::DeleteTree { api, path },
                    n,
                    Self::arg(&args, 0),
                );
            }
            "unlinkSync" | "unlink" if fs => self.path_effect(
                |api, path| Effect::Delete { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "writeFileSync" | "writeFile" | "appendFileSync" | "appendFile"
            | "createWriteStream" | "mkdirSync" | "chmodSync" | "chownSync" | "truncateSync"
            | "outputFileSync" | "outputFile" | "writeJsonSync" | "ensureDirSync" => self
                .path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 0),
                ),
            "copyFileSync" | "copyFile" | "cpSync" | "cp" | "symlinkSync" | "linkSync"
            | "copySync" | "moveSync"
                if fs || seg.ends_with("Sync") =>
            {
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1),
                )
            }
            "renameSync" | "rename" if fs => {
                self.path_effect(
                    |api, path| Effect::Delete { api, path },
                    n,
                    Self::arg(&args, 0),
                );
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1),
                );
            }
            "readFileSync" | "readFile" | "createReadStream" if fs || seg == "readFileSync" => self
                .path_effect(
                    |api, path| Effect::Read { api, path },
                    n,
                    Self::arg(&args, 0),
                ),
            "chdir" if n == "process.chdir" => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                self.out.push(Effect::Chdir { path });
            }
            "fetch" if n == seg || n == "globalThis.fetch" => {
                self.out.push(Effect::Network { api })
            }
            _ => {}
        }
    }

    fn perl(&mut self, i: usize, n: &str, seg: &str) {
        let Some(args) = self.call_args(i) else {
            return;
        };
        let api = Self::api(n);
        match seg {
            "system" | "exec" if n == seg || n.starts_with("CORE::") => {
                self.system_like(api, &args)
            }
            "readpipe" => self.command(api, Self::arg(&args, 0), true),
            "eval" if n == seg => {
                if let Some(a) = Self::arg(&args, 0)
                    && matches!(a.toks.first(), Some(Tok::Str(_)))
                {
                    self.code(api, Some(a));
                }
            }
            "rmtree" | "remove_tree" => {
                for a in args
                    .iter()
                    .filter(|a| a.key.is_none() && !matches!(a.toks.first(), Some(Tok::Punct('{'))))
                {
                    self.path_effect(|api, path| Effect::DeleteTree { api, path }, n, Some(*a));
                }
            }
            "unlink" | "rmdir" if n == seg => {
                for a in args.iter().filter(|a| a.key.is_none()) {
                    self.path_effect(|api, path| Effect::Delete { api, path }, n, Some(*a));
                }
            }
            "open" if n == seg => self.perl_open(api, &args),
            "copy" | "move" | "cp" | "mv" | "rename" | "symlink" | "link" => {
                if matches!(seg, "move" | "mv" | "rename") {
                    self.path_effect(
                        |api, path| Effect::Delete { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                }
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1),
                );
            }
            "mkdir" | "make_path" | "mkpath" => self.path_effect(
                |api, path| Effect::Write { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "chmod" | "chown" => {
                for a in args.iter().skip(if seg == "chmod" { 1 } else { 2 }) {
                    self.path_effect(|api, path| Effect::Write { api, path }, n, Some(*a));
                }
            }
            "chdir" => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                self.out.push(Effect::Chdir { path });
            }
            _ => {}
        }
    }

    /// Perl's `open`: 3-argument (`'>', PATH`, `'-|', CMD…`) or
    /// 2-argument (`">PATH"`, `"CMD |"`).
    fn perl_open(&mut self, api: String, args: &[Arg<'t>]) {
        let pos: Vec<Arg<'t>> = args.iter().filter(|a| a.key.is_none()).copied().collect();
        if pos.len() >= 3 {
            let mode = self.eval(pos[1].toks).known().unwrap_or_default();
            let mode = mode.trim();
            if mode.starts_with("-|") || mode.starts_with("|-") {
                if pos.len() == 3 {
                    self.command(api, Some(pos[2]), true);
                } else {
                    let argv = pos[2..].iter().map(|a| self.eval(a.toks)).collect();
                    self.out.push(Effect::Argv { api, argv });
                }
                return;
            }
            let path = self.eval(pos[2].toks);
            if mode.contains(['>', '+']) {
                self.out.push(Effect::Write { api, path });
            } else {
                self.out.push(Effect::Read { api, path });
            }
            return;
        }
        let Some(spec) = pos.get(1) else { return };
        let v = self.eval(spec.toks);
        let text = v.display();
        let t = text.trim();
        if t.ends_with('|') || t.starts_with('|') {
            let cmd = t.trim_matches('|').trim();
            let cmd = if v.known().is_some() {
                Val::lit(cmd)
            } else {
                v.clone()
            };
            self.out.push(Effect::Shell { api, cmd });
        } else if let Some(rest) = t
            .strip_prefix(">>")
            .or_else(|| t.strip_prefix('>'))
            .or_else(|| t.strip_prefix("+<"))
        {
            let path = if v.known().is_some() {
                Val::lit(rest.trim())
            } else {
                Val::unknown()
            };
            self.out.push(Effect::Write { api, path });
        } else {
            let rest = t.strip_prefix('<').unwrap_or(t).trim();
            let path = if v.known().is_some() {
                Val::lit(rest)
            } else {
                Val::unknown()
            };
            self.out.push(Effect::Read { api, path });
        }
    }

    fn ruby(&mut self, i: usize, n: &str, seg: &str) {
        if RUBY_NET
            .iter()
            .any(|m| n == *m || n.starts_with(&format!("{m}.")))
            && n.contains(['.', ':'])
        {
            self.out.push(Effect::Network { api: n.to_owned() });
        }
        let Some(args) = self.call_args(i) else {
            return;
        };
        let api = Self::api(n);
        match (n, seg) {
            (_, "system" | "exec" | "spawn")
                if n == seg || n.starts_with("Kernel.") || n.starts_with("Process.") =>
            {
                // An environment hash may come first.
                let args: Vec<Arg<'t>> = args
                    .iter()
                    .copied()
                    .filter(|a| !matches!(a.toks.first(), Some(Tok::Punct('{'))))
                    .collect();
                self.system_like(api, &args)
            }
            (_, "popen") if n.contains("IO") => self.command(api, Self::arg(&args, 0), true),
            (
                _,
                "capture2" | "capture2e" | "capture3" | "popen2" | "popen2e" | "popen3"
                | "pipeline",
            ) if n.contains("Open3") => self.system_like(api, &args),
            (_, "eval" | "instance_eval" | "class_eval" | "module_eval") => {
                self.code(api, Self::arg(&args, 0))
            }
            (
                _,
                "rm_rf" | "rm_r" | "remove_dir" | "remove_entry" | "remove_entry_secure" | "rmtree",
            ) => {
                let a = Self::arg(&args, 0);
                match a.and_then(|a| self.list(a.toks)) {
                    Some(list) => {
                        for path in list {
                            self.out.push(Effect::DeleteTree {
                                api: api.clone(),
                                path,
                            });
                        }
                    }
                    None => self.path_effect(|api, path| Effect::DeleteTree { api, path }, n, a),
                }
            }
            (_, "delete" | "unlink" | "rm" | "rm_f" | "rmdir")
                if n.starts_with("File") || n.starts_with("Dir") =>
            {
                self.path_effect(
                    |api, path| Effect::Delete { api, path },
                    n,
                    Self::arg(&args, 0),
                )
            }
            (_, "write" | "binwrite") if n.starts_with("File") || n.starts_with("IO") => self
                .path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 0),
                ),
            (_, "open" | "new") if n.starts_with("File") => {
                let mode = Self::arg(&args, 1)
                    .and_then(|m| self.eval(m.toks).known())
                    .unwrap_or_default();
                if mode.contains(['w', 'a', '+']) {
                    self.path_effect(
                        |api, path| Effect::Write { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                } else {
                    self.path_effect(
                        |api, path| Effect::Read { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                }
            }
            (_, "read" | "readlines" | "foreach" | "binread")
                if n.starts_with("File") || n.starts_with("IO") =>
            {
                self.path_effect(
                    |api, path| Effect::Read { api, path },
                    n,
                    Self::arg(&args, 0),
                )
            }
            (_, "cp" | "cp_r" | "mv" | "ln" | "ln_s" | "ln_sf" | "copy" | "rename" | "install")
                if n.starts_with("FileUtils") || n.starts_with("File") =>
            {
                if matches!(seg, "mv" | "rename") {
                    self.path_effect(
                        |api, path| Effect::Delete { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                }
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1),
                );
            }
            (_, "touch" | "mkdir" | "mkdir_p" | "makedirs")
                if n.starts_with("FileUtils") || n.starts_with("Dir") =>
            {
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 0),
                )
            }
            (_, "chmod" | "chmod_R" | "chown" | "chown_R")
                if n.starts_with("FileUtils") || n.starts_with("File") =>
            {
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    args.iter().rfind(|a| a.key.is_none()).copied(),
                )
            }
            (_, "chdir") if n.starts_with("Dir") => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                self.out.push(Effect::Chdir { path });
            }
            _ => {}
        }
    }

    fn php(&mut self, i: usize, n: &str, seg: &str) {
        let Some(args) = self.call_args(i) else {
            return;
        };
        let api = Self::api(n);
        match seg {
            "system" | "exec" | "shell_exec" | "passthru" | "popen" | "proc_open" if n == seg => {
                self.command(api, Self::arg(&args, 0), true)
            }
            "eval" if n == seg => self.code(api, Self::arg(&args, 0)),
            "unlink" | "rmdir" => self.path_effect(
                |api, path| Effect::Delete { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "file_put_contents" | "mkdir" | "touch" | "chmod" | "chown" => self.path_effect(
                |api, path| Effect::Write { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "copy" | "rename" | "symlink" | "link" => {
                if seg == "rename" {
                    self.path_effect(
                        |api, path| Effect::Delete { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                }
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1),
                );
            }
            "fopen" | "file_get_contents" | "file" | "readfile" => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                if path.display().contains("://") {
                    self.out.push(Effect::Network { api: api.clone() });
                }
                let mode = Self::arg(&args, 1)
                    .and_then(|m| self.eval(m.toks).known())
                    .unwrap_or_default();
                if seg == "fopen" && mode.contains(['w', 'a', 'x', 'c', '+']) {
                    self.out.push(Effect::Write { api, path });
                } else {
                    self.out.push(Effect::Read { api, path });
                }
            }
            "curl_init"
            | "fsockopen"
            | "pfsockopen"
            | "stream_socket_client"
            | "socket_create"
            | "get_headers"
            | "ftp_connect" => self.out.push(Effect::Network { api }),
            "chdir" => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                self.out.push(Effect::Chdir { path });
            }
            _ => {}
        }
    }

    fn lua(&mut self, i: usize, n: &str, seg: &str) {
        let Some(args) = self.call_args(i) else {
            return;
        };
        let api = Self::api(n);
        match n {
            "os.execute" | "io.popen" => self.command(api, Self::arg(&args, 0), true),
            "os.remove" => self.path_effect(
                |api, path| Effect::Delete { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "os.rename" => {
                self.path_effect(
                    |api, path| Effect::Delete { api, path },
                    n,
                    Self::arg(&args, 0),
                );
                self.path_effect(
                    |api, path| Effect::Write { api, path },
                    n,
                    Self::arg(&args, 1),
                );
            }
            "io.open" => {
                let mode = Self::arg(&args, 1)
                    .and_then(|m| self.eval(m.toks).known())
                    .unwrap_or_default();
                if mode.contains(['w', 'a', '+']) {
                    self.path_effect(
                        |api, path| Effect::Write { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                } else {
                    self.path_effect(
                        |api, path| Effect::Read { api, path },
                        n,
                        Self::arg(&args, 0),
                    );
                }
            }
            "io.lines" => self.path_effect(
                |api, path| Effect::Read { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "load" | "loadstring" => self.code(api, Self::arg(&args, 0)),
            _ if seg == "request" && n.contains("http") => self.out.push(Effect::Network { api }),
            _ => {}
        }
    }

    fn r(&mut self, i: usize, n: &str, seg: &str) {
        let Some(args) = self.call_args(i) else {
            return;
        };
        let api = Self::api(n);
        match seg {
            "system" => self.command(
                api,
                Self::arg(&args, 0).or(Self::kwarg(&args, "command")),
                true,
            ),
            "system2" => {
                let mut argv = vec![
                    Self::arg(&args, 0)
                        .or(Self::kwarg(&args, "command"))
                        .map_or_else(Val::unknown, |a| self.eval(a.toks)),
                ];
                if let Some(a) = Self::arg(&args, 1).or(Self::kwarg(&args, "args")) {
                    match self.list(a.toks) {
                        Some(rest) => argv.extend(rest),
                        None => argv.push(self.eval(a.toks)),
                    }
                }
                self.out.push(Effect::Argv { api, argv });
            }
            "unlink" => {
                let recursive = Self::kwarg(&args, "recursive").is_some_and(|a| is_true(a.toks));
                let a = Self::arg(&args, 0);
                let paths = a
                    .and_then(|a| self.list(a.toks))
                    .unwrap_or_else(|| vec![a.map_or_else(Val::unknown, |a| self.eval(a.toks))]);
                for path in paths {
                    self.out.push(if recursive {
                        Effect::DeleteTree {
                            api: api.clone(),
                            path,
                        }
                    } else {
                        Effect::Delete {
                            api: api.clone(),
                            path,
                        }
                    });
                }
            }
            "file.remove" => self.path_effect(
                |api, path| Effect::Delete { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "writeLines" | "saveRDS" | "write.csv" | "write.table" | "save" => self.path_effect(
                |api, path| Effect::Write { api, path },
                n,
                Self::kwarg(&args, "con")
                    .or(Self::kwarg(&args, "file"))
                    .or(Self::arg(&args, 1)),
            ),
            "file.create" | "dir.create" | "sink" => self.path_effect(
                |api, path| Effect::Write { api, path },
                n,
                Self::arg(&args, 0),
            ),
            "file.copy" | "file.rename" => self.path_effect(
                |api, path| Effect::Write { api, path },
                n,
                Self::arg(&args, 1).or(Self::kwarg(&args, "to")),
            ),
            "setwd" => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                self.out.push(Effect::Chdir { path });
            }
            "download.file" | "url" | "socketConnection" | "GET" | "POST" | "curl_download"
            | "getURL" => self.out.push(Effect::Network { api }),
            "readLines" | "read.csv" | "read.table" | "readRDS" | "fromJSON" => {
                let path = Self::arg(&args, 0).map_or_else(Val::unknown, |a| self.eval(a.toks));
                if path.display().contains("://") {
                    self.out.push(Effect::Network { api: api.clone() });
                }
                self.out.push(Effect::Read { api, path });
            }
            "eval" => {
                if let Some(Arg { toks, .. }) = Self::arg(&args, 0)
                    && let Some(Tok::Name(p)) = toks.first()
                    && p == "parse"
                    && let Some(inner) = self.call_args_at(toks, 0)
                    && let Some(text) = Self::kwarg(&inner, "text")
                {
                    self.code(api, Some(text));
                }
            }
            _ => {}
        }
    }

    /// The call arguments of a call at index `i` of another token slice.
    fn call_args_at(&self, toks: &'t [Tok], i: usize) -> Option<Vec<Arg<'t>>> {
        if toks.get(i + 1) != Some(&Tok::Punct('(')) {
            return None;
        }
        let end = matching(toks, i + 1)?;
        Some(split_args(&toks[i + 2..end]))
    }

    fn awk(&mut self, i: usize, n: &str, _seg: &str) {
        let t = self.toks;
        match n {
            "system" => {
                if let Some(args) = self.call_args(i) {
                    self.command("system()".into(), Self::arg(&args, 0), true);
                }
            }
            "getline" => {
                // `"cmd" | getline`: the operand before the pipe.
                if i >= 2 && t[i - 1] == Tok::Punct('|') {
                    let start = expr_start(t, i - 1);
                    let cmd = self.eval(&t[start..i - 1]);
                    self.out.push(if cmd.is_unknown() {
                        Effect::Exec {
                            api: "| getline".into(),
                        }
                    } else {
                        Effect::Shell {
                            api: "| getline".into(),
                            cmd,
                        }
                    });
                } else if t.get(i + 1) == Some(&Tok::Punct('<')) {
                    let end = expr_end(t, i + 2);
                    let path = self.eval(&t[i + 2..end]);
                    self.out.push(Effect::Read {
                        api: "getline <".into(),
                        path,
                    });
                }
            }
            "print" | "printf" => {
                // `print … > "file"`, `>> "file"`, `| "cmd"`.
                let end = expr_end(t, i + 1);
                let mut j = i + 1;
                let mut depth = 0i32;
                while j < end {
                    match &t[j] {
                        Tok::Punct('(') => depth += 1,
                        Tok::Punct(')') => depth -= 1,
                        Tok::Punct(c @ ('>' | '|')) if depth == 0 => {
                            let mut k = j + 1;
                            if t.get(k) == Some(&Tok::Punct('>')) {
                                k += 1;
                            }
                            let target = self.eval(&t[k..end]);
                            if *c == '|' {
                                self.out.push(if target.is_unknown() {
                                    Effect::Exec {
                                        api: "print |".into(),
                                    }
                                } else {
                                    Effect::Shell {
                                        api: "print |".into(),
                                        cmd: target,
                                    }
                                });
                            } else {
                                self.out.push(Effect::Write {
                                    api: "print >".into(),
                                    path: target,
                                });
                            }
                            break;
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => {}
        }
    }

    /// Network use through imported modules.
    fn network_imports(&mut self) {
        let list: &[&str] = match self.lang {
            Lang::Python => PY_NET,
            Lang::Js => JS_NET,
            Lang::Perl => PERL_NET,
            Lang::Ruby => RUBY_NET,
            Lang::Lua => &[
                "socket",
                "socket.http",
                "ssl.https",
                "http.request",
                "resty.http",
            ],
            Lang::R => &["httr", "httr2", "curl", "RCurl", "rvest", "jsonlite"],
            Lang::Php | Lang::Awk => &[],
        };
        let hit = self.imports.modules.iter().find(|m| {
            list.iter().any(|n| {
                m.as_str() == *n
                    || (n.ends_with("::") && m.starts_with(n))
                    || m.starts_with(&format!("{n}::"))
                    || m.starts_with(&format!("{n}."))
            })
        });
        if let Some(m) = hit {
            let m = m.clone();
            if !(self.lang == Lang::R && m == "jsonlite") {
                self.out.push(Effect::Network { api: m });
            }
        }
    }

    /// A list literal of values (`[…]`, `(…, …)`, `qw(…)`, `c(…)`,
    /// `%w()`), or `None`.
    fn list(&self, toks: &[Tok]) -> Option<Vec<Val>> {
        let toks = trim_parens_once(toks);
        match toks {
            [Tok::Punct('['), .., Tok::Punct(']')] => {
                let end = matching(toks, 0)?;
                if end != toks.len() - 1 {
                    return None;
                }
                let inner = &toks[1..end];
                if inner.is_empty() {
                    return Some(Vec::new());
                }
                Some(
                    split_args(inner)
                        .iter()
                        .map(|a| self.eval(a.toks))
                        .collect(),
                )
            }
            [Tok::Name(n), Tok::Punct('('), .., Tok::Punct(')')]
                if n == "c" && self.lang == Lang::R =>
            {
                let end = matching(toks, 1)?;
                Some(
                    split_args(&toks[2..end])
                        .iter()
                        .map(|a| self.eval(a.toks))
                        .collect(),
                )
            }
            [Tok::Name(n), Tok::Punct('('), .., Tok::Punct(')')]
                if n == "shlex.split" || n == "split" =>
            {
                let end = matching(toks, 1)?;
                let v = self.eval(&toks[2..end]);
                let text = v.known()?;
                Some(text.split_whitespace().map(Val::lit).collect())
            }
            [Tok::Str(v), Tok::Name(m), Tok::Punct('('), Tok::Punct(')')] if m == ".split" => {
                Some(v.known()?.split_whitespace().map(Val::lit).collect())
            }
            _ => None,
        }
    }

    /// The value of an expression: string literals, concatenation
    /// (`+`, `.`, `..`, juxtaposition), path joins, home and working
    /// directory lookups. Anything else is unknown.
    fn eval(&self, toks: &[Tok]) -> Val {
        let toks = trim_parens_once(toks);
        let mut out = Val::default();
        let mut i = 0;
        let mut join_next = false;
        let mut any = false;
        while i < toks.len() {
            // Operators between operands.
            match &toks[i] {
                Tok::Punct('+') => {
                    i += 1;
                    continue;
                }
                Tok::Punct('.') if matches!(self.lang, Lang::Perl | Lang::Php | Lang::Lua) => {
                    i += 1;
                    continue;
                }
                Tok::Punct('/') if self.lang == Lang::Python => {
                    join_next = true;
                    i += 1;
                    continue;
                }
                Tok::Punct(
                    ',' | ';' | '=' | '|' | '&' | '?' | ':' | '<' | '>' | '*' | '%' | '-' | '!',
                ) => {
                    return if any {
                        with_unknown(out)
                    } else {
                        Val::unknown()
                    };
                }
                _ => {}
            }
            let (v, next) = self.primary(toks, i);
            if next <= i {
                return Val::unknown();
            }
            i = next;
            if join_next {
                out = join_path(out, v);
                join_next = false;
            } else {
                out.push(v);
            }
            any = true;
        }
        if out.0.is_empty() {
            Val::unknown()
        } else {
            out
        }
    }

    /// One operand at `i` with its method calls and subscripts; returns
    /// its value and the index after it.
    fn primary(&self, toks: &[Tok], i: usize) -> (Val, usize) {
        let mut j = i + 1;
        let mut v = match &toks[i] {
            Tok::Str(v) => v.clone(),
            Tok::Punct('(') => {
                let Some(end) = matching(toks, i) else {
                    return (Val::unknown(), toks.len());
                };
                j = end + 1;
                self.eval(&toks[i + 1..end])
            }
            Tok::Punct('[' | '{') => {
                let end = matching(toks, i).unwrap_or(toks.len() - 1);
                j = end + 1;
                Val::unknown()
            }
            Tok::Name(n) => {
                let args = if toks.get(i + 1) == Some(&Tok::Punct('(')) {
                    let end = matching(toks, i + 1).unwrap_or(toks.len() - 1);
                    j = end + 1;
                    Some(split_args(&toks[i + 2..end]))
                } else {
                    None
                };
                self.call_value(n, args.as_deref())
            }
            _ => Val::unknown(),
        };
        // Postfix: `.method(…)`, `[…]`.
        loop {
            match toks.get(j) {
                Some(Tok::Name(m)) if m.starts_with('.') => {
                    let args = if toks.get(j + 1) == Some(&Tok::Punct('(')) {
                        let end = matching(toks, j + 1).unwrap_or(toks.len() - 1);
                        let a = split_args(&toks[j + 2..end]);
                        j = end + 1;
                        Some(a)
                    } else {
                        j += 1;
                        None
                    };
                    v = match (m.as_str(), args.as_deref()) {
                        (
                            ".expanduser" | ".resolve" | ".absolute" | ".strip" | ".trim" | ".to_s"
                            | ".as_posix" | ".__str__",
                            _,
                        ) => v,
                        (".joinpath", Some(a)) => {
                            a.iter().fold(v, |acc, x| join_path(acc, self.eval(x.toks)))
                        }
                        (
                            ".b64decode" | ".decodebytes" | ".decode64" | ".urlsafe_b64decode",
                            Some(a),
                        ) => {
                            match Self::arg(a, 0)
                                .and_then(|x| self.eval(x.toks).known())
                                .and_then(|s| crate::text::base64_decode(&s))
                            {
                                Some(bytes) => Val::lit(&String::from_utf8_lossy(&bytes)),
                                None => Val::unknown(),
                            }
                        }
                        (".decode", _) if v.known().is_some() => v,
                        (".home" | ".homedir", _) => Val::lit("~"),
                        (".cwd" | ".getcwd", _) => Val::lit("."),
                        _ => Val::unknown(),
                    };
                }
                Some(Tok::Punct('[')) => {
                    let end = matching(toks, j).unwrap_or(toks.len() - 1);
                    let key = self.eval(&toks[j + 1..end]).known();
                    v = if key.as_deref() == Some("HOME") && v == Val::lit(ENV_MARK) {
                        Val::lit("~")
                    } else {
                        Val::unknown()
                    };
                    j = end + 1;
                }
                Some(Tok::Punct('{')) if self.lang == Lang::Perl && v == Val::lit(ENV_MARK) => {
                    let end = matching(toks, j).unwrap_or(toks.len() - 1);
                    let key = match &toks[j + 1..end] {
                        [Tok::Name(k)] => Some(k.clone()),
                        other => self.eval(other).known(),
                    };
                    v = if key.as_deref() == Some("HOME") {
                        Val::lit("~")
                    } else {
                        Val::unknown()
                    };
                    j = end + 1;
                }
                _ => break,
            }
        }
        if v == Val::lit(ENV_MARK) {
            v = Val::unknown();
        }
        (v, j)
    }

    /// The value of a name or a call to it.
    fn call_value(&self, n: &str, args: Option<&[Arg<'_>]>) -> Val {
        let seg = last_seg(n);
        let first = || {
            args.and_then(|a| Self::arg(a, 0))
                .map_or_else(Val::unknown, |a| self.eval(a.toks))
        };
        let env_key = || {
            args.and_then(|a| Self::arg(a, 0))
                .and_then(|a| self.eval(a.toks).known())
        };
        match (n, seg, args) {
            (_, "environ" | "ENV" | "$ENV" | "$_SERVER" | "$_ENV", None) => Val::lit(ENV_MARK),
            ("process.env.HOME" | "os.environ.HOME", _, None) => Val::lit("~"),
            (_, "getenv" | "get" | "fetch" | "Sys.getenv", Some(_))
                if (seg != "get" && seg != "fetch")
                    || n.contains("environ")
                    || n.contains("ENV") =>
            {
                if env_key().as_deref() == Some("HOME") {
                    Val::lit("~")
                } else {
                    Val::unknown()
                }
            }
            (
                _,
                "expanduser" | "expand_path" | "path.expand" | "normpath" | "abspath" | "realpath"
                | "resolve" | "normalize" | "fspath" | "str" | "String",
                Some(a),
            ) if !a.is_empty() => {
                if seg == "resolve" && a.len() > 1 {
                    a.iter()
                        .fold(Val::default(), |acc, x| join_path(acc, self.eval(x.toks)))
                } else {
                    first()
                }
            }
            (
                _,
                "join" | "Path" | "PurePath" | "PosixPath" | "file.path" | "catfile" | "catdir",
                Some(a),
            ) if n != ".join" && !a.is_empty() => a
                .iter()
                .filter(|x| x.key.is_none())
                .fold(Val::default(), |acc, x| join_path(acc, self.eval(x.toks))),
            (_, "home" | "homedir" | "gethome", Some(_)) | ("Dir.home" | "__HOME__", _, _) => {
                Val::lit("~")
            }
            (_, "getcwd" | "cwd" | "getwd" | "pwd" | "getcwdu", Some(_))
            | ("Dir.pwd" | "__dirname" | "__DIR__", _, _) => Val::lit("."),
            ("os.curdir", _, None) => Val::lit("."),
            ("os.sep", _, None) => Val::lit("/"),
            (
                "b64decode"
                | "base64.b64decode"
                | "decodebytes"
                | "base64.decodebytes"
                | "atob"
                | "decode_base64"
                | "MIME::Base64::decode"
                | "Base64.decode64",
                _,
                Some(_),
            ) => match first().known().and_then(|s| crate::text::base64_decode(&s)) {
                Some(bytes) => Val::lit(&String::from_utf8_lossy(&bytes)),
                None => Val::unknown(),
            },
            ("Buffer.from", _, Some(a)) => {
                let enc = Self::arg(a, 1).and_then(|e| self.eval(e.toks).known());
                match (first().known(), enc.as_deref()) {
                    (Some(s), Some("base64")) => match crate::text::base64_decode(&s) {
                        Some(bytes) => Val::lit(&String::from_utf8_lossy(&bytes)),
                        None => Val::unknown(),
                    },
                    (Some(s), None | Some("utf8" | "utf-8")) => Val::lit(&s),
                    _ => Val::unknown(),
                }
            }
            _ => Val::unknown(),
        }
    }
}

/// Stands for the environment mapping until it is subscripted.
const ENV_MARK: &str = "\u{0}env";

/// `a / b` as paths: an absolute `b` replaces `a`.
fn join_path(a: Val, b: Val) -> Val {
    if a.0.is_empty() {
        return b;
    }
    if let Some(Piece::Lit(s)) = b.0.first()
        && s.starts_with('/')
    {
        return b;
    }
    let mut out = a;
    let ends_slash = matches!(out.0.last(), Some(Piece::Lit(s)) if s.ends_with('/'));
    if !ends_slash {
        out.push(Val::lit("/"));
    }
    out.push(b);
    out
}

fn with_unknown(mut v: Val) -> Val {
    v.push(Val::unknown());
    v
}

/// `True`, `true`, `TRUE`, `1`.
fn is_true(toks: &[Tok]) -> bool {
    matches!(toks, [Tok::Name(n)] if matches!(n.as_str(), "True" | "true" | "TRUE" | "T"))
        || matches!(toks, [Tok::Other])
}

/// An object literal with `key: true` (`{recursive: true}`).
fn has_key_true(toks: &[Tok], key: &str) -> bool {
    toks.windows(3).any(|w| {
        let k = match &w[0] {
            Tok::Name(n) => n.as_str() == key,
            Tok::Str(v) => v.known().as_deref() == Some(key),
            _ => false,
        };
        k && matches!(w[1], Tok::Punct(':' | '=')) && is_true(&w[2..3])
    })
}

/// Index of the bracket closing the one at `open`.
fn matching(t: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, tok) in t.iter().enumerate().skip(open) {
        match tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Index of the bracket opening the one closing at `close`.
fn matching_back(t: &[Tok], close: usize) -> Option<usize> {
    let mut depth = 0i32;
    for k in (0..=close).rev() {
        match t[k] {
            Tok::Punct(')' | ']' | '}') => depth += 1,
            Tok::Punct('(' | '[' | '{') => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits call arguments at top-level commas; `key=value` (Python, R)
/// and `key => value` keep their key.
fn split_args(t: &[Tok]) -> Vec<Arg<'_>> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (k, tok) in t.iter().enumerate() {
        match tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                out.push(arg_of(&t[start..k]));
                start = k + 1;
            }
            _ => {}
        }
    }
    if start < t.len() {
        out.push(arg_of(&t[start..]));
    }
    out
}

fn arg_of(t: &[Tok]) -> Arg<'_> {
    if let [Tok::Name(k), Tok::Punct('='), rest @ ..] = t
        && !rest.is_empty()
        && rest.first() != Some(&Tok::Punct('='))
    {
        return Arg {
            key: Some(k.as_str()),
            toks: rest,
        };
    }
    Arg { key: None, toks: t }
}

/// Drops one pair of parentheses around a whole expression.
fn trim_parens_once(t: &[Tok]) -> &[Tok] {
    if t.len() >= 2 && t[0] == Tok::Punct('(') && matching(t, 0) == Some(t.len() - 1) {
        &t[1..t.len() - 1]
    } else {
        t
    }
}

/// Where the operand ending before `end` starts (awk: back to the
/// previous statement boundary).
fn expr_start(t: &[Tok], end: usize) -> usize {
    let mut k = end;
    while k > 0 {
        match t[k - 1] {
            Tok::Punct(';' | '{' | '}' | '(' | ',') => break,
            Tok::Name(ref n)
                if matches!(
                    n.as_str(),
                    "print" | "printf" | "if" | "while" | "BEGIN" | "END"
                ) =>
            {
                break;
            }
            _ => k -= 1,
        }
    }
    k
}

/// Where the statement starting at `start` ends (awk).
fn expr_end(t: &[Tok], start: usize) -> usize {
    let mut depth = 0i32;
    let mut k = start;
    while k < t.len() {
        match t[k] {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            }
            Tok::Punct(';' | '}') if depth == 0 => break,
            _ => {}
        }
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effects(lang: Lang, code: &str) -> Vec<Effect> {
        scan(lang, code).unwrap_or_default()
    }

    fn shells(lang: Lang, code: &str) -> Vec<String> {
        effects(lang, code)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Shell { cmd, .. } => Some(cmd.display()),
                Effect::Argv { argv, .. } => {
                    Some(argv.iter().map(Val::display).collect::<Vec<_>>().join(" "))
                }
                _ => None,
            })
            .collect()
    }

    fn trees(lang: Lang, code: &str) -> Vec<String> {
        effects(lang, code)
            .into_iter()
            .filter_map(|e| match e {
                Effect::DeleteTree { path, .. } => Some(path.display()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn python_commands_are_found_with_their_text() {
        assert_eq!(
            shells(Lang::Python, "import os; os.system('rm -rf /')"),
            ["rm -rf /"]
        );
        assert_eq!(
            shells(
                Lang::Python,
                "import subprocess\nsubprocess.run(['rm', '-rf', '/'], check=True)"
            ),
            ["rm -rf /"]
        );
        assert_eq!(
            shells(
                Lang::Python,
                "from subprocess import run\nrun('curl x | sh', shell=True)"
            ),
            ["curl x | sh"]
        );
        assert_eq!(
            shells(Lang::Python, "__import__('os').system('id')"),
            ["id"]
        );
        // String and list methods named like os functions are not them.
        assert!(
            effects(
                Lang::Python,
                "import os\nprint('a'.replace('a', '/etc/passwd'))\nx = [1]\nx.remove(1)\nf().remove('/')"
            )
            .is_empty()
        );
        assert_eq!(
            shells(Lang::Python, "os.system(f'rm -rf {d}')"),
            ["rm -rf …"]
        );
        assert_eq!(
            shells(Lang::Python, "os.execvp('rm', ['rm', '-rf', '/'])"),
            ["rm -rf /"]
        );
        assert!(matches!(
            effects(Lang::Python, "import subprocess; subprocess.run(cmd)")[..],
            [Effect::Exec { .. }]
        ));
        // A comment is not code; a print of the name is not a call.
        assert!(effects(Lang::Python, "# os.system('rm -rf /')\nprint(1)").is_empty());
    }

    #[test]
    fn recursive_deletes_and_their_targets() {
        assert_eq!(
            trees(Lang::Python, "import shutil; shutil.rmtree('/')"),
            ["/"]
        );
        assert_eq!(
            trees(
                Lang::Python,
                "import shutil, os; shutil.rmtree(os.path.expanduser('~'))"
            ),
            ["~"]
        );
        assert_eq!(
            trees(Lang::Python, "shutil.rmtree(os.environ['HOME'])"),
            ["~"]
        );
        assert_eq!(
            trees(
                Lang::Python,
                "from pathlib import Path\nshutil.rmtree(Path.home() / 'x')"
            ),
            ["~/x"]
        );
        assert_eq!(
            trees(
                Lang::Python,
                "shutil.rmtree(os.path.join(os.getcwd(), 'build'))"
            ),
            ["./build"]
        );
        assert_eq!(trees(Lang::Python, "shutil.rmtree(d)"), ["…"]);
        assert_eq!(
            trees(
                Lang::Js,
                "require('fs').rmSync(require('os').homedir(), {recursive: true, force: true})"
            ),
            ["~"]
        );
        assert!(trees(Lang::Js, "const fs = require('fs'); fs.rmSync('a.txt')").is_empty());
        assert_eq!(
            trees(Lang::Ruby, "require 'fileutils'; FileUtils.rm_rf(Dir.home)"),
            ["~"]
        );
        assert_eq!(
            trees(Lang::Perl, "use File::Path; rmtree($ENV{HOME})"),
            ["~"]
        );
        assert_eq!(trees(Lang::R, "unlink('~', recursive = TRUE)"), ["~"]);
    }

    #[test]
    fn other_languages_run_commands() {
        assert_eq!(shells(Lang::Perl, r#"system("rm -rf /")"#), ["rm -rf /"]);
        assert_eq!(shells(Lang::Perl, "system 'rm', '-rf', '/';"), ["rm -rf /"]);
        assert_eq!(
            shells(Lang::Perl, "my $x = `id`; open(my $f, '-|', 'ls -la')"),
            ["id", "ls -la"]
        );
        assert_eq!(
            shells(Lang::Js, "require('child_process').execSync('rm -rf ~')"),
            ["rm -rf ~"]
        );
        assert_eq!(
            shells(
                Lang::Js,
                "const {spawn} = require('child_process'); spawn('rm', ['-rf', '/'])"
            ),
            ["rm -rf /"]
        );
        assert_eq!(
            shells(Lang::Ruby, "system('rm -rf /'); %x(id)"),
            ["rm -rf /", "id"]
        );
        assert_eq!(shells(Lang::Php, "shell_exec('rm -rf /');"), ["rm -rf /"]);
        assert_eq!(shells(Lang::Lua, "os.execute('rm -rf /')"), ["rm -rf /"]);
        assert_eq!(
            shells(Lang::R, "system2('rm', c('-rf', '/'))"),
            ["rm -rf /"]
        );
        assert_eq!(
            shells(Lang::Awk, r#"BEGIN{system("rm -rf ~")}"#),
            ["rm -rf ~"]
        );
        assert_eq!(shells(Lang::Awk, r#"{ print $0 | "sh" }"#), ["sh"]);
        assert_eq!(
            shells(Lang::Awk, r#"BEGIN { "date" | getline d }"#),
            ["date"]
        );
        // JS `exec` without child_process is a regex method.
        assert!(shells(Lang::Js, "/a/.exec('rm -rf /')").is_empty());
    }

    #[test]
    fn writes_reads_network_and_code() {
        let e = effects(Lang::Python, "open('/etc/hosts', 'w').write('x')");
        assert!(
            matches!(&e[..], [Effect::Write { path, .. }] if path.known().as_deref() == Some("/etc/hosts")),
            "{e:?}"
        );
        let e = effects(Lang::Python, "print(open('README.md').read())");
        assert!(matches!(&e[..], [Effect::Read { .. }]), "{e:?}");
        let e = effects(
            Lang::Python,
            "import urllib.request\nurllib.request.urlopen('https://x')",
        );
        assert!(
            e.iter().any(|e| matches!(e, Effect::Network { .. })),
            "{e:?}"
        );
        let e = effects(Lang::Js, "fetch('https://example.com').then(r => r.text())");
        assert!(matches!(&e[..], [Effect::Network { .. }]), "{e:?}");
        let e = effects(Lang::Python, "exec(\"import os\\nos.system('ls')\")");
        assert!(
            matches!(&e[..], [Effect::Code { code, .. }] if code.contains("os.system")),
            "{e:?}"
        );
        let e = effects(
            Lang::Python,
            "import base64\nexec(base64.b64decode('b3Muc3lzdGVtKCdybSAtcmYgLycp'))",
        );
        assert!(
            matches!(&e[..], [Effect::Code { code, .. }] if code == "os.system('rm -rf /')"),
            "{e:?}"
        );
        let e = effects(Lang::Awk, r#"{ print $1 > "/etc/passwd" }"#);
        assert!(
            matches!(&e[..], [Effect::Write { path, .. }] if path.known().as_deref() == Some("/etc/passwd")),
            "{e:?}"
        );
        assert!(
            effects(Lang::Awk, "{ if ($1 > 3) print $2 }")
                .iter()
                .all(|e| !matches!(e, Effect::Write { .. }))
        );
        assert!(effects(Lang::Python, "print(1)").is_empty());
        assert!(effects(Lang::Js, "console.log(1)").is_empty());
        assert!(effects(Lang::Awk, "{print $1}").is_empty());
    }
}
