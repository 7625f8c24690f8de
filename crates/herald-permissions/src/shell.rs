//! Splits a shell command into every simple command with tree-sitter-bash
//! and unquotes words: the walking half of the [`Analyzer`]. Judging each
//! simple command lives in [`crate::analyzer`].
//!
//! The walk is an abstract execution in source order: it tracks `cd` (the
//! directory relative paths resolve against) and variables assigned static
//! values, so `X=rm; $X -rf /` and `cd /; rm -rf *` are judged as what they
//! do. What it cannot resolve is marked dynamic and, where it decides what
//! runs, asks.

use std::cell::RefCell;

use tree_sitter::{Node, Parser, Tree};

use crate::analyzer::Analyzer;
use crate::paths;

/// How far `bash -c`, `eval` and text piped into a shell may nest.
const MAX_SCRIPT_DEPTH: u32 = 6;
/// How deep the syntax tree may nest before the walk gives up (asks).
const MAX_NODE_DEPTH: u32 = 150;
/// Longer command lines are not parsed (they ask).
const MAX_SCRIPT_LEN: usize = 100_000;

/// How many recent parse trees each thread keeps (agents repeat commands:
/// `cargo test`, `git status`). Parsing is a pure function of the text, so
/// memoising it changes no decision; everything after the parse (paths,
/// symlinks, rules) is judged afresh on every call.
const PARSE_CACHE: usize = 32;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
    static TREES: RefCell<Vec<(String, Tree)>> = const { RefCell::new(Vec::new()) };
}

/// Parses with this thread's parser (created on first use), through a small
/// most-recently-used cache of trees.
fn parse(src: &str) -> Option<Tree> {
    let hit = TREES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let i = cache.iter().position(|(s, _)| s == src)?;
        let entry = cache.remove(i);
        let tree = entry.1.clone();
        cache.insert(0, entry);
        Some(tree)
    });
    if hit.is_some() {
        return hit;
    }
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(p);
        }
        let parser = slot.as_mut()?;
        parser.reset();
        parser.parse(src, None)
    })?;
    TREES.with(|cache| {
        let mut cache = cache.borrow_mut();
        cache.truncate(PARSE_CACHE - 1);
        cache.insert(0, (src.to_owned(), tree.clone()));
    });
    Some(tree)
}

/// How strict one simple command's judgement is, least strict first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    /// Only reads: runs in every mode.
    ReadOnly,
    /// Writes inside the workspace or runs a build/test tool: runs confined
    /// in workspace-write.
    Safe,
    /// Network, installs, `git push`, recursive deletes, writes outside the
    /// workspace, unknown commands: asks in workspace-write.
    Risky,
    /// Cannot be judged statically: asks in every mode.
    Unresolved,
    /// The catastrophic floor: denied in every mode.
    Floor,
}

/// The judgement of one simple command.
#[derive(Debug, Clone)]
pub(crate) struct Finding {
    pub severity: Severity,
    /// Built-in rule name (`floor`, `network`, `safe-list`, …).
    pub rule: &'static str,
    /// Empty for "`text` only reads": see [`Finding::reason`].
    pub reason: String,
    /// Words after wrapper stripping, joined by single spaces.
    pub text: String,
    /// All words, wrappers included.
    pub full_text: String,
    /// Run through sudo/doas: allow rules must match `full_text`.
    pub privileged: bool,
}

impl Finding {
    /// The sentence for this judgement, formatted on demand.
    pub fn reason(&self) -> std::borrow::Cow<'_, str> {
        if self.reason.is_empty() {
            format!("`{}` only reads", short(&self.text)).into()
        } else {
            self.reason.as_str().into()
        }
    }
}

/// What flows out of a statement on stdout, as far as the check can tell.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stream {
    /// It carries data from the network (names the downloader).
    pub download: Option<String>,
    /// Its exact text, when computable (`echo`, `printf`, `base64 -d`, …).
    pub known: Option<String>,
    /// It is the content of these files (`cat a b`).
    pub files: Option<Vec<String>>,
    /// It comes from a pipe (not a terminal).
    pub piped: bool,
}

/// One unquoted shell word.
#[derive(Debug, Clone, Default)]
pub(crate) struct Word {
    /// The text after unquoting, with resolvable expansions substituted and
    /// unresolvable ones left as written.
    pub text: String,
    /// Contains an expansion that could not be resolved statically.
    pub dynamic: bool,
    /// Contains unquoted glob characters.
    pub glob: bool,
    /// Contains unquoted braces (`{a,b}`).
    pub braces: bool,
    /// A process substitution (`<(…)`): what it produces.
    pub stream: Option<Box<Stream>>,
    /// Part of it comes from the network (`"$(curl …)"`): names the
    /// downloader.
    pub download: Option<String>,
    /// It stands for the paths `find` finds below it (`{}` of `-exec`),
    /// not for itself.
    pub found: bool,
}

impl Word {
    pub fn lit(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            ..Self::default()
        }
    }
}

/// A redirection of one simple command.
#[derive(Debug, Clone)]
pub(crate) struct Redirect {
    pub write: bool,
    pub target: Word,
    /// It receives the command's stdout (`>`, `1>`, `&>`).
    pub stdout: bool,
    /// It appends (`>>`).
    pub append: bool,
}

pub(crate) fn text_of<'s>(n: Node<'_>, src: &'s str) -> &'s str {
    src.get(n.byte_range()).unwrap_or("")
}

/// [`short`] of a text, computed only when displayed.
#[derive(Clone, Copy)]
pub(crate) struct Short<'a>(pub &'a str);

impl std::fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&short(self.0))
    }
}

/// Shortens a command or path for a reason sentence.
pub(crate) fn short(s: &str) -> String {
    if s.len() <= 80 && !s.contains(['\n', '\t', '\r']) && !s.contains("  ") && s.trim() == s {
        return s.to_owned();
    }
    // The words joined by single spaces, cut to 77 characters and `...`
    // when longer than 80, built without joining the whole text.
    let mut out = String::with_capacity(84);
    let mut chars = 0usize;
    let mut cut = 0usize;
    let mut push = |out: &mut String, c: char| -> bool {
        out.push(c);
        chars += 1;
        if chars == 77 {
            cut = out.len();
        }
        chars > 80
    };
    for (i, word) in s.split_whitespace().enumerate() {
        for c in (i > 0).then_some(' ').into_iter().chain(word.chars()) {
            if push(&mut out, c) {
                out.truncate(cut);
                out.push_str("...");
                return out;
            }
        }
    }
    out
}

impl<'e> Analyzer<'e> {
    pub fn push(&mut self, severity: Severity, rule: &'static str, reason: String, text: &str) {
        self.findings.push(Finding {
            severity,
            rule,
            reason,
            text: text.to_owned(),
            full_text: text.to_owned(),
            privileged: false,
        });
    }

    /// Parses and walks one script (the command line, or a nested
    /// `bash -c` string / `eval` text / text piped into a shell).
    pub fn script(&mut self, src: &str) -> Stream {
        if src.len() > MAX_SCRIPT_LEN {
            self.push(
                Severity::Unresolved,
                "unresolved",
                format!(
                    "the command is {} bytes long, too long to analyse",
                    src.len()
                ),
                &short(src),
            );
            return Stream::default();
        }
        let Some(tree) = parse(src) else {
            self.push(
                Severity::Unresolved,
                "unresolved",
                "the command could not be parsed".into(),
                &short(src),
            );
            return Stream::default();
        };
        let root = tree.root_node();
        if root.has_error() {
            let at = first_error(root).map(|n| text_of(n, src)).unwrap_or("");
            self.push(
                Severity::Unresolved,
                "unresolved",
                format!(
                    "the command does not parse as shell (near `{}`), so it cannot be checked",
                    short(at)
                ),
                &short(src),
            );
            // `{rm,-rf,/}` does not parse as a statement but bash runs it
            // after brace expansion: judge the expanded words too.
            if at.contains('{') && at.contains(',') {
                let expanded: Vec<String> = at
                    .split_whitespace()
                    .flat_map(crate::text::expand_braces)
                    .collect();
                let expanded = expanded.join(" ");
                if expanded != at {
                    self.nested_script(&expanded, at);
                }
            }
        }
        self.node(root, src)
    }

    /// Runs a nested script one level deeper.
    pub fn nested_script(&mut self, src: &str, what: &str) -> Stream {
        if self.script_depth >= MAX_SCRIPT_DEPTH {
            self.push(
                Severity::Unresolved,
                "unresolved",
                format!("{what} nests shells more than {MAX_SCRIPT_DEPTH} deep"),
                &short(src),
            );
            return Stream::default();
        }
        self.script_depth += 1;
        let saved_stdin = std::mem::take(&mut self.stdin);
        let saved_cwd = self.cwd.clone();
        let out = self.script(src);
        self.stdin = saved_stdin;
        self.cwd = saved_cwd;
        self.script_depth -= 1;
        out
    }

    /// Walks one node; returns what the statement writes to stdout.
    pub fn node(&mut self, n: Node<'_>, src: &str) -> Stream {
        if self.node_depth >= MAX_NODE_DEPTH {
            self.push(
                Severity::Unresolved,
                "unresolved",
                "the command nests too deeply to analyse".into(),
                &short(text_of(n, src)),
            );
            return Stream::default();
        }
        self.node_depth += 1;
        let out = self.node_inner(n, src);
        self.node_depth -= 1;
        out
    }

    fn node_inner(&mut self, n: Node<'_>, src: &str) -> Stream {
        match n.kind() {
            "command" => self.command(n, src, &[]),
            "redirected_statement" => self.redirected(n, src),
            "pipeline" => self.pipeline(n, src),
            "subshell" => {
                let saved = (self.cwd.clone(), self.vars.clone());
                let out = self.children(n, src);
                (self.cwd, self.vars) = saved;
                out
            }
            "variable_assignment" => {
                self.assignment(n, src, true);
                Stream::default()
            }
            "declaration_command" => {
                self.declaration(n, src);
                Stream::default()
            }
            "function_definition" => {
                self.function(n, src);
                Stream::default()
            }
            "for_statement" => {
                if let Some(var) = n.child_by_field_name("variable") {
                    self.vars.insert(text_of(var, src).to_owned(), None);
                }
                let mut c = n.walk();
                for child in n.named_children(&mut c) {
                    if n.child_by_field_name("variable") == Some(child) {
                        continue;
                    }
                    if is_word_kind(child.kind()) {
                        let _ = self.word(child, src);
                    } else {
                        self.node(child, src);
                    }
                }
                Stream::default()
            }
            "comment" | "heredoc_body" | "heredoc_start" | "heredoc_end" | "variable_name"
            | "file_descriptor" => Stream::default(),
            "ERROR" => {
                // Reported once by `script`; still walk what is inside so a
                // floor command next to a syntax error is denied.
                self.children(n, src);
                Stream::default()
            }
            k if is_word_kind(k) => {
                // A word in statement position (case values, test operands):
                // unquote it for the substitutions it runs.
                let _ = self.word(n, src);
                Stream::default()
            }
            _ => self.children(n, src),
        }
    }

    /// Walks all named children; the output is the last one's when there
    /// is exactly one statement.
    fn children(&mut self, n: Node<'_>, src: &str) -> Stream {
        let mut c = n.walk();
        let statements = n
            .named_children(&mut c)
            .filter(|k| k.kind() != "comment")
            .count();
        let mut out = Stream::default();
        for k in n.named_children(&mut c) {
            let o = self.node(k, src);
            out = if statements == 1 {
                o
            } else {
                Stream::default()
            };
        }
        out
    }

    fn pipeline(&mut self, n: Node<'_>, src: &str) -> Stream {
        let outer = self.stdin.clone();
        let mut c = n.walk();
        let mut cur = outer.clone();
        for (i, stage) in n
            .named_children(&mut c)
            .filter(|k| k.kind() != "comment")
            .enumerate()
        {
            self.stdin = if i == 0 {
                outer.clone()
            } else {
                Stream {
                    piped: true,
                    ..cur.clone()
                }
            };
            let out = self.node(stage, src);
            // Downloaded data stays downloaded through any filter.
            let download = out
                .download
                .or_else(|| if i == 0 { None } else { cur.download.clone() });
            cur = Stream {
                download,
                piped: true,
                ..out
            };
        }
        self.stdin = outer;
        cur
    }

    fn redirected(&mut self, n: Node<'_>, src: &str) -> Stream {
        let mut redirects: Vec<Node<'_>> = Vec::new();
        let mut body = None;
        for (field, child) in with_fields(n) {
            match field {
                Some("redirect") => redirects.push(child),
                Some("body") if body.is_none() => body = Some(child),
                _ => {}
            }
        }
        match body {
            Some(body) if body.kind() == "command" => self.command(body, src, &redirects),
            body => {
                // A compound statement or bare redirection: judge the
                // redirections on their own, with the body's stdin.
                let (redirs, stdin, trailing) = self.redirects(&redirects, src);
                let saved = self.stdin.clone();
                if let Some(s) = stdin {
                    self.stdin = s;
                }
                let out = match body {
                    Some(b) => self.node(b, src),
                    None => Stream::default(),
                };
                self.stdin = saved;
                if !redirs.is_empty() {
                    let text = short(text_of(n, src));
                    self.judge_redirects_only(&redirs, &text);
                }
                self.trailing(&trailing, out, src)
            }
        }
    }

    /// Unquotes redirection targets; returns the write/read targets and
    /// the stdin they set (here-strings, here-documents, `< file`).
    pub fn redirects<'t>(
        &mut self,
        nodes: &[Node<'t>],
        src: &str,
    ) -> (Vec<Redirect>, Option<Stream>, Vec<Node<'t>>) {
        let mut trailing = Vec::new();
        let mut out = Vec::new();
        let mut stdin = None;
        let mut stack: Vec<Node<'_>> = nodes.to_vec();
        stack.reverse();
        while let Some(r) = stack.pop() {
            match r.kind() {
                "file_redirect" => {
                    // One pass: the operator (last anonymous child), the
                    // destinations and the descriptor.
                    let mut op = "";
                    let mut fd_node = None;
                    let mut dests: Vec<Node<'_>> = Vec::new();
                    for (field, child) in with_fields(r) {
                        match field {
                            Some("destination") => dests.push(child),
                            Some("descriptor") if fd_node.is_none() => fd_node = Some(child),
                            _ => {}
                        }
                        if !child.is_named() {
                            op = child.kind();
                        }
                    }
                    for d in dests {
                        let w = self.word(d, src);
                        let write = match op {
                            "<" => false,
                            "<&" | ">&" | "<&-" | ">&-" => {
                                // fd duplication (`2>&1`, `>&-`) is not a file;
                                // `>& file` is.
                                !(w.text.chars().all(|c| c.is_ascii_digit()) || w.text == "-")
                                    && op == ">&"
                            }
                            _ => true,
                        };
                        if op == "<" {
                            stdin = Some(Stream {
                                files: (!w.dynamic).then(|| vec![w.text.clone()]),
                                piped: true,
                                ..Stream::default()
                            });
                        }
                        if write || op == "<" || op == "<>" {
                            let fd = fd_node.map(|d| text_of(d, src));
                            out.push(Redirect {
                                write,
                                target: w,
                                stdout: matches!(fd, None | Some("1"))
                                    && matches!(op, ">" | ">>" | ">|" | "&>" | "&>>"),
                                append: matches!(op, ">>" | "&>>"),
                            });
                        }
                    }
                }
                "herestring_redirect" => {
                    let mut c = r.walk();
                    let mut text = String::new();
                    let mut dynamic = false;
                    for child in r.named_children(&mut c) {
                        let w = self.word(child, src);
                        dynamic |= w.dynamic;
                        text = w.text;
                    }
                    stdin = Some(Stream {
                        known: (!dynamic).then(|| format!("{text}\n")),
                        piped: true,
                        ..Stream::default()
                    });
                }
                "heredoc_redirect" => {
                    let mut c = r.walk();
                    let mut known = None;
                    for child in r.named_children(&mut c) {
                        match child.kind() {
                            "heredoc_body" => {
                                let mut c2 = child.walk();
                                let mut dynamic = false;
                                for part in child.named_children(&mut c2) {
                                    if part.kind() != "heredoc_content" {
                                        dynamic = true;
                                        let _ = self.word(part, src);
                                    }
                                }
                                if !dynamic {
                                    known = Some(text_of(child, src).to_owned());
                                }
                            }
                            "file_redirect" | "herestring_redirect" => stack.push(child),
                            "heredoc_start" | "heredoc_end" => {}
                            // tree-sitter-bash nests what follows the
                            // here-document operator on its line (`| bash`,
                            // `&& rm …`) inside this node: run it after the
                            // command.
                            _ => trailing.push(child),
                        }
                    }
                    stdin = Some(Stream {
                        known,
                        piped: true,
                        ..Stream::default()
                    });
                }
                _ => {}
            }
        }
        (out, stdin, trailing)
    }

    /// Statements that tree-sitter nested inside a here-document redirect:
    /// a pipeline continues from the command's output; anything else runs
    /// after it.
    fn trailing(&mut self, trailing: &[Node<'_>], out: Stream, src: &str) -> Stream {
        let mut last = out.clone();
        for t in trailing {
            if t.kind() == "pipeline" {
                let saved = std::mem::replace(
                    &mut self.stdin,
                    Stream {
                        piped: true,
                        ..out.clone()
                    },
                );
                last = self.node(*t, src);
                self.stdin = saved;
            } else {
                last = self.node(*t, src);
            }
        }
        last
    }

    fn command(&mut self, n: Node<'_>, src: &str, extra: &[Node<'_>]) -> Stream {
        let mut words: Vec<Word> = Vec::new();
        let mut redirect_nodes: Vec<Node<'_>> = extra.to_vec();
        let mut tainted = self.path_tainted;
        let parts: Vec<(Option<&str>, Node<'_>)> = with_fields(n).collect();
        let mut skip_next = false;
        for (k, &(field, child)) in parts.iter().enumerate() {
            if std::mem::take(&mut skip_next) {
                continue;
            }
            // tree-sitter splits `-rf$IFS~` after the `$`: a word that
            // ends in `$` and the word right after it are one word.
            let arg_node = match (field, child.kind()) {
                (Some("name"), _) => match child.named_child(0) {
                    Some(one) if child.named_child_count() == 1 => Some(one),
                    _ => None,
                },
                (Some("argument"), _) if child.is_named() => Some(child),
                _ => None,
            };
            if let Some(node) = arg_node
                && node.kind() == "concatenation"
                && let Some(&(Some("argument"), next)) = parts.get(k + 1)
                && next.start_byte() == node.end_byte()
                && text_of(node, src).ends_with('$')
                && next.kind() == "word"
            {
                let mut c = node.walk();
                let mut pieces: Vec<Node<'_>> = node.children(&mut c).collect();
                pieces.push(next);
                self.split_pieces(&pieces, src, &mut words);
                skip_next = true;
                continue;
            }
            match (field, child.kind()) {
                (_, "variable_assignment") => {
                    // `X=1 cmd`: for this command only.
                    if let Some(name) = child.child_by_field_name("name") {
                        tainted |= is_taint_var(text_of(name, src));
                    }
                    if let Some(v) = child.child_by_field_name("value") {
                        let _ = self.word(v, src);
                    }
                }
                (Some("name"), _) => match arg_node {
                    Some(one) => self.argument(one, src, &mut words),
                    None => {
                        let w = self.word(child, src);
                        words.push(w);
                    }
                },
                (Some("argument"), _) if child.is_named() => {
                    self.argument(child, src, &mut words);
                }
                (Some("redirect"), _)
                | (_, "file_redirect" | "herestring_redirect" | "heredoc_redirect") => {
                    redirect_nodes.push(child);
                }
                _ => {}
            }
        }
        let (redirects, stdin, trailing) = self.redirects(&redirect_nodes, src);
        let saved = self.stdin.clone();
        if let Some(s) = stdin {
            self.stdin = s;
        }
        let saved_taint = self.path_tainted;
        self.path_tainted = tainted;
        let out = self.simple(words, &redirects, 0);
        self.path_tainted = saved_taint;
        self.stdin = saved;
        self.trailing(&trailing, out, src)
    }

    /// Unquotes one argument, splitting unquoted expansions with known
    /// values into several words as the shell does.
    /// Brace expansion (`{rm,-rf,/}` is three words) follows.
    fn argument(&mut self, child: Node<'_>, src: &str, words: &mut Vec<Word>) {
        let start = words.len();
        if child.kind() == "concatenation" {
            self.split_concatenation(child, src, words);
        } else {
            let w = self.word(child, src);
            let splits = matches!(
                child.kind(),
                "simple_expansion" | "expansion" | "command_substitution"
            );
            let ifs = self.ifs();
            let fields = || w.text.split(|c| ifs.contains(c)).filter(|t| !t.is_empty());
            if splits && !w.dynamic && fields().nth(1).is_some() {
                words.extend(fields().map(|t| Word {
                    text: t.to_owned(),
                    glob: t.contains(['*', '?', '[']),
                    ..Word::default()
                }));
            } else if splits && !w.dynamic && w.text.trim().is_empty() {
                // Expands to nothing: no word. (A value of only
                // non-blank IFS characters stays one word: judged as
                // written, the stricter reading.)
            } else {
                words.push(w);
            }
        }
        // Brace expansion of what was just added.
        let added: Vec<Word> = words.drain(start..).collect();
        for w in added {
            if w.braces && !w.dynamic {
                let expanded = crate::text::expand_braces(&w.text);
                if expanded.len() > 1 {
                    words.extend(expanded.into_iter().map(|t| Word {
                        glob: w.glob && t.contains(['*', '?', '[']),
                        text: t,
                        ..Word::default()
                    }));
                    continue;
                }
            }
            words.push(w);
        }
    }

    /// The characters unquoted expansions are split at (`IFS`, by
    /// default space, tab and newline).
    fn ifs(&self) -> String {
        match self.vars.get("IFS") {
            Some(Some(v)) => v.clone(),
            _ => " \t\n".to_owned(),
        }
    }

    /// An unquoted concatenation, split where its unquoted expansions
    /// hold `IFS` characters, as the shell splits it:
    /// `rm${IFS}-rf${IFS}/` is the three words `rm -rf /`.
    fn split_concatenation(&mut self, n: Node<'_>, src: &str, words: &mut Vec<Word>) {
        let mut c = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut c).collect();
        self.split_pieces(&kids, src, words);
    }

    /// [`Analyzer::split_concatenation`] of the pieces of one word.
    fn split_pieces(&mut self, kids: &[Node<'_>], src: &str, words: &mut Vec<Word>) {
        let ifs = self.ifs();
        let mut fields: Vec<Word> = vec![Word::default()];
        let mut split = false;
        let mut dollar = false;
        for &k in kids {
            let cur = fields.len() - 1;
            if !k.is_named() {
                let t = text_of(k, src);
                dollar = t == "$";
                if !dollar {
                    fields[cur].text.push_str(t);
                }
                continue;
            }
            let after_dollar = std::mem::take(&mut dollar);
            // tree-sitter reads `$IFS~` as `$` and the word `IFS~`: the
            // leading name is an expansion.
            let (value, rest) = if matches!(k.kind(), "simple_expansion" | "expansion") {
                (Some(self.expansion(k, src)), "")
            } else if after_dollar && k.kind() == "word" {
                let t = text_of(k, src);
                let end = t
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .unwrap_or(t.len());
                if end == 0 {
                    (None, "")
                } else {
                    (Some(self.variable(&t[..end])), &t[end..])
                }
            } else {
                (None, "")
            };
            match value {
                None => self.word_into(k, src, &mut fields[cur], false),
                Some(Some(v)) => {
                    for (i, part) in v.split(|ch| ifs.contains(ch)).enumerate() {
                        if i > 0 {
                            split = true;
                            fields.push(Word::default());
                        }
                        let last = fields.len() - 1;
                        fields[last].glob |= part.contains(['*', '?', '[']);
                        fields[last].text.push_str(part);
                    }
                    let last = fields.len() - 1;
                    fields[last].text.push_str(rest);
                }
                Some(None) => {
                    fields[cur].dynamic = true;
                    fields[cur].text.push_str(text_of(k, src));
                }
            }
        }
        if split {
            fields.retain(|f| !f.text.is_empty() || f.dynamic);
            // A field the split starts with `~` is judged as home (bash
            // would not expand it; the stricter reading).
            for f in fields.iter_mut().skip(1) {
                if f.text.starts_with('~')
                    && let Some(e) = paths::expand_tilde(&f.text, self.env.home)
                {
                    f.text = e.into_owned();
                }
            }
        }
        words.extend(fields);
    }

    fn assignment(&mut self, n: Node<'_>, src: &str, persist: bool) {
        let name = n
            .child_by_field_name("name")
            .map(|x| text_of(x, src).to_owned())
            .unwrap_or_default();
        let value = match n.child_by_field_name("value") {
            Some(v) if v.kind() == "array" => {
                let mut c = v.walk();
                for e in v.named_children(&mut c) {
                    let _ = self.word(e, src);
                }
                None
            }
            Some(v) => {
                let w = self.word(v, src);
                (!w.dynamic).then_some(w.text)
            }
            None => Some(String::new()),
        };
        // `X+=y` appends: the result is only known if both are.
        let appends = {
            let mut c = n.walk();
            n.children(&mut c)
                .any(|k| !k.is_named() && k.kind() == "+=")
        };
        let value = if appends {
            match (self.vars.get(&name).cloned().flatten(), value) {
                (Some(a), Some(b)) => Some(a + &b),
                _ => None,
            }
        } else {
            value
        };
        if is_taint_var(&name) {
            self.path_tainted = true;
        }
        if persist && !name.is_empty() {
            self.vars.insert(name, value);
        }
    }

    fn declaration(&mut self, n: Node<'_>, src: &str) {
        let mut c = n.walk();
        for child in n.named_children(&mut c) {
            match child.kind() {
                "variable_assignment" => self.assignment(child, src, true),
                "variable_name" => {
                    // `export X` / `local X`: keeps the value; `local X`
                    // without value makes it empty.
                }
                k if is_word_kind(k) => {
                    let _ = self.word(child, src);
                }
                _ => {
                    self.node(child, src);
                }
            }
        }
    }

    fn function(&mut self, n: Node<'_>, src: &str) {
        let name = n
            .child_by_field_name("name")
            .map(|x| text_of(x, src).to_owned())
            .unwrap_or_default();
        let Some(body) = n.child_by_field_name("body") else {
            return;
        };
        if fork_bomb(&name, body, src) {
            self.push(
                Severity::Floor,
                "floor",
                format!(
                    "`{}` is a fork bomb (function `{name}` calls itself in a pipe or in the background)",
                    short(text_of(n, src))
                ),
                &short(text_of(n, src)),
            );
        }
        self.functions.push(name);
        // The body is judged as if it ran (it usually does).
        self.node(body, src);
    }

    /// Unquotes one word-like node.
    pub fn word(&mut self, n: Node<'_>, src: &str) -> Word {
        let mut w = Word::default();
        self.word_into(n, src, &mut w, false);
        w
    }

    fn word_into(&mut self, n: Node<'_>, src: &str, w: &mut Word, quoted: bool) {
        let raw = text_of(n, src);
        match n.kind() {
            "word" => {
                let first = w.text.is_empty();
                let (glob, braces) = unescape_unquoted_into(raw, &mut w.text);
                if first && !quoted && w.text.starts_with('~') {
                    match paths::expand_tilde(&w.text, self.env.home) {
                        Some(e) => w.text = e.into_owned(),
                        None => w.dynamic = true,
                    }
                }
                w.glob |= glob;
                w.braces |= braces;
            }
            "number" => w.text.push_str(raw),
            "raw_string" => {
                w.text.push_str(
                    raw.strip_prefix('\'')
                        .unwrap_or(raw)
                        .strip_suffix('\'')
                        .unwrap_or(raw),
                );
            }
            "ansi_c_string" => {
                let inner = raw
                    .strip_prefix("$'")
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(raw);
                w.text.push_str(&crate::text::unescape(inner, true).0);
            }
            "string" | "translated_string" => {
                let mut c = n.walk();
                for k in n.named_children(&mut c) {
                    if k.kind() == "string_content" {
                        w.text.push_str(&unescape_dquoted(text_of(k, src)));
                    } else {
                        self.word_into(k, src, w, true);
                    }
                }
            }
            "concatenation" => {
                let mut c = n.walk();
                for k in n.children(&mut c) {
                    if k.is_named() {
                        self.word_into(k, src, w, quoted);
                    } else {
                        // Anonymous pieces (`$` before `$"…"`, braces).
                        let t = text_of(k, src);
                        if t != "$" {
                            w.text.push_str(t);
                        }
                    }
                }
            }
            "simple_expansion" | "expansion" => match self.expansion(n, src) {
                Some(v) => {
                    if !quoted {
                        w.glob |= v.contains(['*', '?', '[']);
                    }
                    w.text.push_str(&v);
                }
                None => {
                    w.dynamic = true;
                    w.text.push_str(raw);
                }
            },
            "command_substitution" => {
                let saved = (self.cwd.clone(), self.vars.clone());
                let out = self.children(n, src);
                (self.cwd, self.vars) = saved;
                if out.download.is_some() {
                    w.download = out.download.clone();
                }
                match out.known {
                    Some(t) => w.text.push_str(t.trim_end_matches('\n')),
                    None => {
                        w.dynamic = true;
                        w.text.push_str(raw);
                    }
                }
            }
            "process_substitution" => {
                let saved = (self.cwd.clone(), self.vars.clone());
                let out = self.children(n, src);
                (self.cwd, self.vars) = saved;
                w.stream = Some(Box::new(out));
                w.dynamic = true;
                w.text.push_str(raw);
            }
            "brace_expression" => {
                w.braces = true;
                w.text.push_str(raw);
            }
            "arithmetic_expansion" => {
                self.children(n, src);
                w.dynamic = true;
                w.text.push_str(raw);
            }
            _ => {
                // Anything else (extglob, arrays, …): run what it contains
                // and treat the value as unknown.
                self.children(n, src);
                w.dynamic = true;
                w.text.push_str(raw);
            }
        }
    }

    /// The value of `$X` / `${X}` when statically known.
    fn expansion(&mut self, n: Node<'_>, src: &str) -> Option<String> {
        let mut c = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut c).collect();
        let names: Vec<&Node<'_>> = kids.iter().filter(|k| k.is_named()).collect();
        let plain = match n.kind() {
            "simple_expansion" => names.len() == 1,
            _ => kids.len() == 3 && names.len() == 1,
        };
        if !plain {
            // `${X:-$(cmd)}` and friends: run nested substitutions.
            for k in names {
                if k.kind() != "variable_name" {
                    let _ = self.word(*k, src);
                }
            }
            return None;
        }
        let name_node = names.first()?;
        if name_node.kind() != "variable_name" {
            return None;
        }
        let name = text_of(**name_node, src);
        self.variable(name)
    }

    /// The value of variable `name` when statically known.
    fn variable(&self, name: &str) -> Option<String> {
        match self.vars.get(name) {
            Some(v) => v.clone(),
            None => match name {
                "IFS" => Some(" \t\n".to_owned()),
                "HOME" => self.env.home.and_then(|h| h.to_str()).map(str::to_owned),
                "PWD" => self
                    .cwd
                    .as_ref()
                    .and_then(|c| c.to_str())
                    .map(str::to_owned),
                _ => None,
            },
        }
    }
}

/// The children of `n` with their field names (one cursor pass; asking
/// each child's field name separately is quadratic).
fn with_fields<'t>(n: Node<'t>) -> WithFields<'t> {
    let mut c = n.walk();
    let more = c.goto_first_child();
    WithFields { c, more }
}

/// Iterator of [`with_fields`].
struct WithFields<'t> {
    c: tree_sitter::TreeCursor<'t>,
    more: bool,
}

impl<'t> Iterator for WithFields<'t> {
    type Item = (Option<&'t str>, Node<'t>);

    fn next(&mut self) -> Option<Self::Item> {
        if !self.more {
            return None;
        }
        let item = (self.c.field_name(), self.c.node());
        self.more = self.c.goto_next_sibling();
        Some(item)
    }
}

/// PATH-like variables: changing them changes what a command name runs.
fn is_taint_var(name: &str) -> bool {
    matches!(
        name,
        "PATH" | "LD_PRELOAD" | "LD_LIBRARY_PATH" | "BASH_ENV" | "ENV" | "DYLD_INSERT_LIBRARIES"
    )
}

pub(crate) fn is_word_kind(k: &str) -> bool {
    matches!(
        k,
        "word"
            | "number"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "brace_expression"
    )
}

fn first_error(n: Node<'_>) -> Option<Node<'_>> {
    if n.is_error() || n.is_missing() {
        return Some(n);
    }
    let mut c = n.walk();
    let kids: Vec<Node<'_>> = n.children(&mut c).collect();
    kids.into_iter()
        .filter(|k| k.has_error() || k.is_missing())
        .find_map(first_error)
}

/// A function that calls itself inside a pipeline or in the background.
fn fork_bomb(name: &str, body: Node<'_>, src: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let mut calls_self = false;
    let mut multiplies = false;
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "pipeline" => multiplies = true,
            "command"
                if n.child_by_field_name("name")
                    .is_some_and(|x| text_of(x, src) == name) =>
            {
                calls_self = true;
            }
            _ => {}
        }
        let mut c = n.walk();
        for k in n.children(&mut c) {
            if !k.is_named() && k.kind() == "&" {
                multiplies = true;
            }
            stack.push(k);
        }
    }
    calls_self && multiplies
}

/// Unquotes an unquoted word onto `out`: backslash escapes; reports
/// unescaped glob characters and braces.
fn unescape_unquoted_into(raw: &str, out: &mut String) -> (bool, bool) {
    out.reserve(raw.len());
    let mut glob = false;
    let mut braces = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(e) => out.push(e),
            },
            '*' | '?' | '[' => {
                glob = true;
                out.push(c);
            }
            '{' => {
                braces = true;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    (glob, braces)
}

/// Unquotes the literal part of a double-quoted string.
fn unescape_dquoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\\' | '"' | '$' | '`') => {
                    out.extend(chars.next());
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::analyzer::{Env, analyse};
    use crate::paths::Workspace;

    fn env_ws() -> Workspace<'static> {
        Workspace::new(Path::new("/work/project"), &[])
    }

    fn words_of(cmd: &str) -> Vec<Vec<String>> {
        // Collect the words of every simple command by analysing and
        // reading back the findings' texts.
        let ws = env_ws();
        let env = Env {
            home: Some(Path::new("/home/user")),
            ws: &ws,
        };
        analyse(cmd, Path::new("/work/project"), &env)
            .into_iter()
            .map(|f| f.text.split(' ').map(str::to_owned).collect())
            .collect()
    }

    fn texts(cmd: &str) -> Vec<String> {
        words_of(cmd).into_iter().map(|w| w.join(" ")).collect()
    }

    #[test]
    fn splits_lists_pipelines_subshells_and_substitutions() {
        let t = texts("ls && (cd /tmp; rm x) || { echo a | wc -l; } ; echo $(whoami) `id`");
        for want in ["ls", "cd /tmp", "rm x", "echo a", "wc -l", "whoami", "id"] {
            assert!(t.iter().any(|x| x == want), "{want} in {t:?}");
        }
        let t = texts("diff <(sort a) <(sort b)");
        assert!(
            t.iter().filter(|x| x.starts_with("sort")).count() == 2,
            "{t:?}"
        );
    }

    #[test]
    fn unquotes_words() {
        let t = texts(r#"'rm' r\m "r"m r''m $'\x72m' "a\"b" 'x y'"#);
        assert_eq!(t[0], r#"rm rm rm rm rm a"b x y"#);
        let t = texts("echo ~/x ${HOME}/y $HOME \"$HOME\"");
        assert_eq!(t[0], "echo /home/user/x /home/user/y /home/user /home/user");
    }

    #[test]
    fn tracks_variables_and_splits_unquoted_expansions() {
        let t = texts("X='rm -rf'; $X /tmp/a");
        assert!(t.iter().any(|x| x == "rm -rf /tmp/a"), "{t:?}");
        let t = texts("Y=$(date); echo $Y");
        assert!(t.iter().any(|x| x == "echo $Y"), "{t:?}");
    }

    #[test]
    fn words_are_split_and_brace_expanded_as_the_shell_does() {
        let t = texts("rm${IFS}-rf${IFS}/tmp/x");
        assert!(t.iter().any(|x| x == "rm -rf /tmp/x"), "{t:?}");
        let t = texts("rm$IFS-rf$IFS/tmp/y");
        assert!(t.iter().any(|x| x == "rm -rf /tmp/y"), "{t:?}");
        let t = texts("X=a,b; IFS=,; echo $X");
        assert!(t.iter().any(|x| x == "echo a b"), "{t:?}");
        let t = texts("mkdir -p src/{a,b} && cp f{,.bak}");
        assert!(t.iter().any(|x| x == "mkdir -p src/a src/b"), "{t:?}");
        assert!(t.iter().any(|x| x == "cp f f.bak"), "{t:?}");
        // Quoted blanks stay in one word; braces without a comma stay.
        let t = texts("echo \"a${IFS}b\" {} @{u}");
        assert!(t.iter().any(|x| x == "echo a \t\nb {} @{u}"), "{t:?}");
        let t = texts("{rm,-rf,/tmp/z}");
        assert!(t.iter().any(|x| x == "rm -rf /tmp/z"), "{t:?}");
    }

    #[test]
    fn static_command_substitution_is_resolved() {
        let t = texts("$(echo rm) -rf /tmp/x");
        assert!(t.iter().any(|x| x == "rm -rf /tmp/x"), "{t:?}");
    }

    #[test]
    fn parse_errors_are_unresolved() {
        let ws = env_ws();
        let env = Env {
            home: None,
            ws: &ws,
        };
        let f = analyse("echo \"unterminated", Path::new("/w"), &env);
        assert!(f.iter().any(|f| f.severity == Severity::Unresolved));
    }

    #[test]
    fn short_matches_the_joined_and_cut_spelling() {
        fn reference(s: &str) -> String {
            let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            if one_line.chars().count() > 80 {
                let cut: String = one_line.chars().take(77).collect();
                format!("{cut}...")
            } else {
                one_line
            }
        }
        let long = "é".repeat(79);
        for s in [
            "",
            "  ",
            " a  b ",
            "ls\n-la",
            &"x".repeat(80),
            &"x".repeat(81),
            &format!("{} {}", "a".repeat(76), "bcdef"),
            &format!("{}  {}", "a".repeat(40), "b".repeat(45)),
            &format!("{long} \t z"),
            &format!("{}\n", "y".repeat(100)),
        ] {
            assert_eq!(short(s), reference(s), "{s:?}");
        }
    }

    #[test]
    fn detects_fork_bombs() {
        let ws = env_ws();
        let env = Env {
            home: None,
            ws: &ws,
        };
        for cmd in [
            ":(){ :|:& };:",
            "bomb() { bomb | bomb & }; bomb",
            "f(){ f & f; }; f",
        ] {
            let f = analyse(cmd, Path::new("/w"), &env);
            assert!(f.iter().any(|f| f.severity == Severity::Floor), "{cmd}");
        }
        let f = analyse("f() { echo hi; }; f", Path::new("/w"), &env);
        assert!(f.iter().all(|f| f.severity != Severity::Floor));
    }

    #[test]
    fn parser_is_reused_per_thread_and_trees_are_memoised() {
        assert!(parse("ls").is_some());
        assert!(parse("echo hi | wc").is_some());
        PARSER.with(|p| assert!(p.borrow().is_some()));
        let a = parse("echo memo").unwrap();
        let b = parse("echo memo").unwrap();
        assert_eq!(a.root_node().to_sexp(), b.root_node().to_sexp());
        for i in 0..(PARSE_CACHE * 2) {
            parse(&format!("echo {i}")).unwrap();
        }
        TREES.with(|c| assert_eq!(c.borrow().len(), PARSE_CACHE));
    }
}
