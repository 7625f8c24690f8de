//! Permission rules: `tool`, `tool-glob` or `tool(argument-glob)`.
//!
//! * `terminal(GLOB)`: GLOB is a command-string glob; `*` matches any
//!   characters, `/` and spaces included. It is matched against each simple
//!   command's normalised text and against the whole command.
//! * `read_file(GLOB)`, `write_file(GLOB)`, `patch(GLOB)`,
//!   `search_files(GLOB)`: a path glob (`**` any depth, `*` within one
//!   segment, leading `~` expanded) matched against the normalised absolute
//!   path; a relative GLOB is matched against the path relative to the
//!   working directory.
//! * `execute_code(GLOB)`: matched against the script text.
//! * `web_extract(domain:HOST)`, `browser_navigate(domain:HOST)`: the
//!   host of each URL the call reaches; `domain:docs.rs` covers docs.rs
//!   and its subdomains, `domain:*.example.org` is a host glob.
//! * any other `tool(GLOB)`: matched against the arguments as compact JSON.
//! * `tool` alone, or a tool-name glob (`mcp__fs__*`), matches any
//!   arguments.
//!
//! The rule an approval saves is the narrowest that covers the call:
//! [`exact_text`] / [`exact_paths`] write the call's own text or paths
//! with every glob character escaped (`[*]`, `\*`), so the rule matches
//! that call and nothing else. A `terminal` rule without wildcards that
//! equals a whole command line allows every simple command in it.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use crate::RuleError;

pub(crate) const PATH_TOOLS: &[&str] = &["read_file", "write_file", "patch", "search_files"];

#[derive(Debug, Clone)]
enum ToolPattern {
    Exact(String),
    Glob(GlobMatcher),
}

#[derive(Debug, Clone)]
pub(crate) enum ArgPattern {
    /// No argument pattern: any arguments.
    Any,
    /// A command-string glob (terminal), or text glob (execute_code, JSON),
    /// with the literal text every match starts with (checked first: most
    /// texts fail there without running the glob).
    Text(GlobMatcher, String),
    /// A path glob; `relative` ones match the path relative to the cwd.
    Path { glob: GlobMatcher, relative: bool },
    /// `domain:HOST`: the hosts of the URLs a web tool reaches; `bare`
    /// (a pattern without wildcards) also covers its subdomains.
    Domain {
        glob: GlobMatcher,
        bare: Option<String>,
    },
}

/// The tools whose rules may name a `domain:`.
pub(crate) const HOST_TOOLS: &[&str] = &["web_extract", "browser_navigate"];

/// Where a rule came from (named in reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    User,
    Project,
    Session,
}

impl Source {
    pub fn describe(self) -> &'static str {
        match self {
            Self::User => "your permission rules",
            Self::Project => "the project's .herald/permissions.toml",
            Self::Session => "an approval for this session",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub text: String,
    pub source: Source,
    tool: ToolPattern,
    pub arg: ArgPattern,
    /// The text the argument pattern matches when it has no wildcard.
    pub exact: Option<String>,
    /// The calls it allows may use the network although confined calls
    /// may not (`{rule = "…", network = true}`).
    pub network: bool,
}

fn err(rule: &str, why: impl Into<String>) -> RuleError {
    RuleError {
        rule: rule.to_owned(),
        why: why.into(),
    }
}

impl Rule {
    pub fn parse(text: &str, source: Source, home: Option<&Path>) -> Result<Self, RuleError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(err(
                text,
                "the rule is empty; write `tool` or `tool(pattern)`",
            ));
        }
        let (name, arg) = match t.find('(') {
            Some(open) => {
                let Some(inner) = t[open + 1..].strip_suffix(')') else {
                    return Err(err(
                        text,
                        "a rule with `(` must end with `)`, as in `terminal(git push*)`",
                    ));
                };
                if inner.trim().is_empty() {
                    return Err(err(
                        text,
                        "the argument pattern is empty; write the tool name alone to match any arguments",
                    ));
                }
                (&t[..open], Some(inner))
            }
            None => {
                if t.contains(')') {
                    return Err(err(text, "unbalanced `)`"));
                }
                (t, None)
            }
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(err(text, "the tool name is missing before `(`"));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | '?')))
        {
            return Err(err(
                text,
                format!(
                    "the tool name contains `{bad}`; it may contain letters, digits, `_`, `-`, `.` and the globs `*` `?`"
                ),
            ));
        }
        let tool = if name.contains(['*', '?']) {
            let g = GlobBuilder::new(name)
                .literal_separator(false)
                .build()
                .map_err(|e| err(text, format!("bad tool-name glob: {e}")))?;
            ToolPattern::Glob(g.compile_matcher())
        } else {
            ToolPattern::Exact(name.to_owned())
        };
        let arg = match arg {
            None => ArgPattern::Any,
            Some(a) if PATH_TOOLS.contains(&name) => {
                let expanded = crate::paths::expand_tilde(a.trim(), home).ok_or_else(|| {
                    err(
                        text,
                        "`~` in the pattern needs a known home directory (and only `~` or `~/…` is supported)",
                    )
                })?;
                let relative = !expanded.starts_with('/')
                    && !expanded.starts_with("**")
                    && !expanded.starts_with("{/");
                let g = GlobBuilder::new(&expanded)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| err(text, format!("bad path glob: {e}")))?;
                ArgPattern::Path {
                    glob: g.compile_matcher(),
                    relative,
                }
            }
            Some(a) if a.trim().starts_with("domain:") => {
                let host = a.trim()["domain:".len()..].trim().to_ascii_lowercase();
                if host.is_empty() || host.contains(['/', ':', ' ']) {
                    return Err(err(
                        text,
                        "`domain:` takes a host name or host glob, as in `web_extract(domain:docs.rs)`",
                    ));
                }
                let g = GlobBuilder::new(&host)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| err(text, format!("bad host glob: {e}")))?;
                let bare = (!host.contains(TEXT_GLOB)).then_some(host);
                ArgPattern::Domain {
                    glob: g.compile_matcher(),
                    bare,
                }
            }
            Some(a) => {
                let g = GlobBuilder::new(a)
                    .literal_separator(false)
                    .backslash_escape(false)
                    .build()
                    .map_err(|e| err(text, format!("bad pattern: {e}")))?;
                ArgPattern::Text(g.compile_matcher(), literal_prefix(a))
            }
        };
        let exact = match (&arg, t.find('(')) {
            (ArgPattern::Text(..), Some(open)) => literal_of(&t[open + 1..t.len() - 1]),
            _ => None,
        };
        Ok(Self {
            text: t.to_owned(),
            source,
            tool,
            arg,
            exact,
            network: false,
        })
    }

    pub fn matches_tool(&self, tool: &str) -> bool {
        match &self.tool {
            ToolPattern::Exact(n) => n == tool,
            ToolPattern::Glob(g) => g.is_match(tool),
        }
    }

    /// Matches a text argument (command, script, JSON).
    pub fn matches_text(&self, text: &str) -> bool {
        match &self.arg {
            ArgPattern::Any => true,
            ArgPattern::Text(g, prefix) => text.starts_with(prefix.as_str()) && g.is_match(text),
            ArgPattern::Path { glob, .. } => glob.is_match(text),
            ArgPattern::Domain { .. } => false,
        }
    }

    /// Matches a host a web tool reaches (`domain:` rules; a rule without
    /// an argument pattern matches every host).
    pub fn matches_host(&self, host: &str) -> bool {
        match &self.arg {
            ArgPattern::Any => true,
            ArgPattern::Domain { glob, bare } => {
                let host = host.trim_end_matches('.').to_ascii_lowercase();
                glob.is_match(&host)
                    || bare
                        .as_deref()
                        .is_some_and(|b| host.ends_with(&format!(".{b}")))
            }
            ArgPattern::Text(..) | ArgPattern::Path { .. } => false,
        }
    }

    /// Matches a path argument in any of its spellings.
    pub fn matches_path(&self, spellings: &[&Path], cwd: &Path) -> bool {
        match &self.arg {
            ArgPattern::Any => true,
            ArgPattern::Text(g, _) => spellings.iter().any(|p| g.is_match(p)),
            ArgPattern::Domain { .. } => false,
            ArgPattern::Path { glob, relative } => spellings.iter().any(|p| {
                if *relative {
                    p.strip_prefix(cwd).is_ok_and(|r| glob.is_match(r))
                } else {
                    glob.is_match(p)
                }
            }),
        }
    }
}

/// The characters with a meaning in a text glob.
const TEXT_GLOB: &[char] = &['*', '?', '[', ']', '{', '}'];

/// `tool(TEXT)` matching exactly `text` (a command line, a script, a
/// call's arguments as JSON): every glob character written as a
/// one-character class (`[*]`).
pub(crate) fn exact_text(tool: &str, text: &str) -> String {
    let mut out = String::with_capacity(tool.len() + text.len() + 2);
    out.push_str(tool);
    out.push('(');
    for ch in text.chars() {
        if TEXT_GLOB.contains(&ch) {
            out.push('[');
            out.push(ch);
            out.push(']');
        } else {
            out.push(ch);
        }
    }
    out.push(')');
    out
}

/// `tool(PATH)` matching exactly these absolute paths (`{a,b}` for
/// several), glob characters written as one-character classes.
pub(crate) fn exact_paths(tool: &str, paths: &[&Path]) -> String {
    let escape = |p: &Path| {
        let mut out = String::new();
        for ch in p.to_string_lossy().chars() {
            match ch {
                '*' | '?' | '[' | ']' | '{' | '}' | ',' => {
                    out.push('[');
                    out.push(ch);
                    out.push(']');
                }
                '\\' => out.push_str("\\\\"),
                _ => out.push(ch),
            }
        }
        out
    };
    match paths {
        [one] => format!("{tool}({})", escape(one)),
        many => {
            let parts: Vec<String> = many.iter().map(|p| escape(p)).collect();
            format!("{tool}({{{}}})", parts.join(","))
        }
    }
}

/// The text a text glob matches when it has no wildcard (a one-character
/// class stands for its character), else `None`.
fn literal_of(glob: &str) -> Option<String> {
    let mut out = String::with_capacity(glob.len());
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' | '?' | '{' | '}' => return None,
            '[' => {
                // `[c]`: one character, itself.
                if chars.get(i + 2) == Some(&']')
                    && chars.get(i + 1).is_some_and(|c| *c != '!' && *c != '^')
                {
                    out.push(chars[i + 1]);
                    i += 3;
                    continue;
                }
                return None;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

/// The leading characters of a text glob that only match themselves
/// (stops at anything with a meaning in a glob, conservatively).
fn literal_prefix(glob: &str) -> String {
    glob.chars()
        .take_while(|c| {
            c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | '/' | '=' | ':' | '@')
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn rule(t: &str) -> Rule {
        Rule::parse(t, Source::User, Some(Path::new("/home/user"))).unwrap()
    }

    #[test]
    fn domain_rules_match_hosts_and_refuse_urls() {
        let r = Rule::parse("web_extract(domain:docs.rs)", Source::User, None).unwrap();
        assert!(r.matches_host("docs.rs"));
        assert!(r.matches_host("API.docs.rs."));
        assert!(!r.matches_host("notdocs.rs"));
        assert!(!r.matches_text(r#"{"urls":["https://docs.rs"]}"#));
        let g = Rule::parse("browser_navigate(domain:*.example.org)", Source::User, None).unwrap();
        assert!(g.matches_host("a.example.org"));
        assert!(!g.matches_host("example.org"));
        for bad in [
            "web_extract(domain:)",
            "web_extract(domain:https://docs.rs)",
            "web_extract(domain:docs.rs/path)",
        ] {
            let err = Rule::parse(bad, Source::User, None).unwrap_err();
            assert!(err.why.contains("host name"), "{bad}: {err}");
        }
    }

    #[test]
    fn parses_and_matches_terminal_globs() {
        let r = rule("terminal(git push*)");
        assert!(r.matches_tool("terminal"));
        assert!(r.matches_text("git push"));
        assert!(r.matches_text("git push --force origin main"));
        assert!(!r.matches_text("git pull"));
        let r = rule("terminal(rm -rf /tmp/*)");
        assert!(r.matches_text("rm -rf /tmp/a/b c"));
    }

    #[test]
    fn path_globs() {
        let r = rule("write_file(/etc/**)");
        assert!(r.matches_path(&[Path::new("/etc/hosts")], Path::new("/w")));
        assert!(r.matches_path(&[Path::new("/etc/a/b")], Path::new("/w")));
        assert!(!r.matches_path(&[Path::new("/etcx")], Path::new("/w")));
        let r = rule("write_file(/w/*.rs)");
        assert!(!r.matches_path(&[Path::new("/w/a/b.rs")], Path::new("/w")));
        let r = rule("read_file(~/.ssh/*)");
        assert!(r.matches_path(&[Path::new("/home/user/.ssh/id_rsa")], Path::new("/w")));
        let r = rule("write_file(src/**)");
        assert!(r.matches_path(&[Path::new("/w/src/a.rs")], Path::new("/w")));
        assert!(!r.matches_path(&[Path::new("/x/src/a.rs")], Path::new("/w")));
    }

    #[test]
    fn tool_name_globs_and_bare_names() {
        let r = rule("mcp__fs__*");
        assert!(r.matches_tool("mcp__fs__read"));
        assert!(!r.matches_tool("mcp__git__log"));
        assert!(r.matches_text("anything"));
        assert!(rule("execute_code").matches_tool("execute_code"));
    }

    #[test]
    fn exact_rules_match_their_text_and_nothing_else() {
        for text in [
            "rm -rf build/",
            "ls *.rs && echo [x] {a,b} ?",
            "find . -name '*.o' -exec rm {} +",
            "printf '%s\\n' ]] [[ [!x] [^y]",
            "python3 -c \"print('a(b)')\"\nsecond line",
        ] {
            let r = rule(&exact_text("terminal", text));
            assert!(r.matches_text(text), "{text}: {}", r.text);
            assert_eq!(r.exact.as_deref(), Some(text), "{}", r.text);
            assert!(!r.matches_text(&format!("{text} x")), "{}", r.text);
            assert!(!r.matches_text(&text.replace(' ', "  ")), "{}", r.text);
        }
        assert_eq!(
            exact_text("terminal", "rm -rf build/"),
            "terminal(rm -rf build/)"
        );
        assert_eq!(rule("terminal(rm *)").exact, None);
        assert_eq!(rule("terminal(ls [ab])").exact, None);
        let r = rule(&exact_paths("write_file", &[Path::new("/opt/a*b/c.toml")]));
        assert!(r.matches_path(&[Path::new("/opt/a*b/c.toml")], Path::new("/w")));
        assert!(!r.matches_path(&[Path::new("/opt/axb/c.toml")], Path::new("/w")));
        let both = [Path::new("/a/x,y"), Path::new("/b/z")];
        let r = rule(&exact_paths("read_file", &both));
        assert!(r.matches_path(&[both[0]], Path::new("/w")));
        assert!(r.matches_path(&[both[1]], Path::new("/w")));
        assert!(!r.matches_path(&[Path::new("/a/x")], Path::new("/w")));
    }

    #[test]
    fn invalid_rules_name_the_rule_and_why() {
        for (bad, why) in [
            ("", "empty"),
            ("terminal(", "must end with"),
            ("terminal()", "empty"),
            ("(x)", "missing"),
            ("ter minal", "contains"),
            ("write_file([)", "bad path glob"),
            ("terminal(a[)", "bad pattern"),
        ] {
            let e = Rule::parse(bad, Source::User, None).unwrap_err();
            assert_eq!(e.rule, bad);
            assert!(e.why.contains(why), "{bad}: {}", e.why);
            assert!(e.to_string().contains("invalid permission rule"));
        }
    }
}
