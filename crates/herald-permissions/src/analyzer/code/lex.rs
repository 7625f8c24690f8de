//! Splits interpreter code into the few kinds of tokens the scan needs:
//! names (dotted, `::` included), string literals with their interpolated
//! parts marked unknown, command literals (backticks, `qx{}`, `%x()`),
//! punctuation. Comments are dropped. One lexer serves every language;
//! [`Lang`] switches comment markers, quote forms and interpolation.

/// The language of a piece of code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    Js,
    Perl,
    Ruby,
    Php,
    Lua,
    R,
    Awk,
}

impl Lang {
    /// The language an interpreter's name runs.
    pub(crate) fn of_interpreter(name: &str) -> Option<Self> {
        Some(match name {
            n if n.starts_with("python") || n.starts_with("pypy") => Self::Python,
            "node" | "nodejs" | "bun" | "deno" => Self::Js,
            "perl" => Self::Perl,
            "ruby" => Self::Ruby,
            "php" => Self::Php,
            "lua" | "luajit" => Self::Lua,
            "Rscript" => Self::R,
            "awk" | "gawk" | "mawk" | "nawk" => Self::Awk,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Js => "javascript",
            Self::Perl => "perl",
            Self::Ruby => "ruby",
            Self::Php => "php",
            Self::Lua => "lua",
            Self::R => "R",
            Self::Awk => "awk",
        }
    }
}

/// One piece of a string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Lit(String),
    /// A part only known at run time (an interpolation, a variable).
    Dyn,
}

/// A value the scan computed: literal pieces and unknown parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Val(pub Vec<Piece>);

impl Val {
    pub(crate) fn lit(s: &str) -> Self {
        Self(vec![Piece::Lit(s.to_owned())])
    }

    pub(crate) fn unknown() -> Self {
        Self(vec![Piece::Dyn])
    }

    /// The whole value, when no part of it is unknown.
    pub(crate) fn known(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Dyn => return None,
            }
        }
        Some(out)
    }

    /// Nothing of it is known.
    pub(crate) fn is_unknown(&self) -> bool {
        self.0.iter().all(|p| matches!(p, Piece::Dyn))
    }

    pub(crate) fn push(&mut self, other: Val) {
        for p in other.0 {
            match (self.0.last_mut(), p) {
                (Some(Piece::Lit(a)), Piece::Lit(b)) => a.push_str(&b),
                (Some(Piece::Dyn), Piece::Dyn) => {}
                (_, p) => self.0.push(p),
            }
        }
    }

    /// The value as shell text, its unknown parts written as a variable
    /// the shell check cannot resolve (so they are judged as unknown).
    pub(crate) fn shell_text(&self) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Dyn => out.push_str(UNKNOWN_VAR),
            }
        }
        out
    }

    /// For messages: the value with its unknown parts as `…`.
    pub(crate) fn display(&self) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Dyn => out.push('…'),
            }
        }
        out
    }
}

/// How an unknown part of a command string is spelled for the shell check.
pub(crate) const UNKNOWN_VAR: &str = "${__runtime_value}";

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier with its dots and `::`: `os.path.join`,
    /// `File::Path::rmtree`, `.system` (a method on what precedes it),
    /// `$ENV`.
    Name(String),
    /// A string literal.
    Str(Val),
    /// A command literal: backticks, `qx{}`, `%x()`.
    Cmd(Val),
    /// A number or a regular expression literal.
    Other,
    Punct(char),
}

/// Most tokens a piece of code is split into (longer code asks).
pub(crate) const MAX_TOKENS: usize = 200_000;

/// Splits `src` into tokens; `None` when it is too long.
pub(crate) fn lex(lang: Lang, src: &str) -> Option<Vec<Tok>> {
    let mut l = Lexer {
        lang,
        s: src.as_bytes(),
        src,
        i: 0,
        out: Vec::new(),
    };
    l.run();
    (l.out.len() <= MAX_TOKENS).then_some(l.out)
}

struct Lexer<'a> {
    lang: Lang,
    s: &'a [u8],
    src: &'a str,
    i: usize,
    out: Vec<Tok>,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> u8 {
        self.s.get(self.i + k).copied().unwrap_or(0)
    }

    fn run(&mut self) {
        while self.i < self.s.len() && self.out.len() <= MAX_TOKENS {
            let b = self.s[self.i];
            if b.is_ascii_whitespace() {
                self.i += 1;
                continue;
            }
            if self.comment() {
                continue;
            }
            if self.quoted() {
                continue;
            }
            if is_ident_start(b)
                || (b == b'$' && self.sigil_name())
                || (b == b'@' && self.lang == Lang::Perl && is_ident_start(self.peek(1)))
            {
                self.name();
                continue;
            }
            if b == b'.' && is_ident_start(self.peek(1)) && self.after_operand() {
                // A method on what precedes it: `).system`, `'x'.join`.
                self.i += 1;
                let start = self.out.len();
                self.name();
                if let Some(Tok::Name(n)) = self.out.get_mut(start) {
                    n.insert(0, '.');
                }
                continue;
            }
            if b.is_ascii_digit() {
                while self.i < self.s.len() && (is_ident(self.s[self.i]) || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                self.out.push(Tok::Other);
                continue;
            }
            if b == b'/' && self.regex_allowed() && self.regex() {
                continue;
            }
            self.i += 1;
            if b.is_ascii() {
                self.out.push(Tok::Punct(b as char));
            }
        }
    }

    /// Whether the last token ends an operand (so `/` divides and `.`
    /// starts a method).
    fn after_operand(&self) -> bool {
        matches!(
            self.out.last(),
            Some(
                Tok::Name(_) | Tok::Str(_) | Tok::Cmd(_) | Tok::Other | Tok::Punct(')' | ']' | '}')
            )
        )
    }

    fn regex_allowed(&self) -> bool {
        matches!(self.lang, Lang::Js | Lang::Perl | Lang::Ruby | Lang::Awk) && !self.after_operand()
    }

    /// `/regex/flags`; false (nothing consumed) when it does not close on
    /// the line.
    fn regex(&mut self) -> bool {
        let mut j = self.i + 1;
        while j < self.s.len() {
            match self.s[j] {
                b'\\' => j += 2,
                b'\n' => return false,
                b'/' => {
                    j += 1;
                    while j < self.s.len() && self.s[j].is_ascii_alphabetic() {
                        j += 1;
                    }
                    self.i = j;
                    self.out.push(Tok::Other);
                    return true;
                }
                _ => j += 1,
            }
        }
        false
    }

    /// `$name` (and `@name` in Perl) as a name: a variable.
    fn sigil_name(&self) -> bool {
        matches!(
            self.lang,
            Lang::Perl | Lang::Php | Lang::Awk | Lang::Js | Lang::Ruby
        ) && (is_ident_start(self.peek(1))
            || (self.lang == Lang::Awk && self.peek(1).is_ascii_digit()))
    }

    fn name(&mut self) {
        let start = self.i;
        if matches!(self.s[self.i], b'$' | b'@') {
            self.i += 1;
        }
        loop {
            while self.i < self.s.len() && is_ident(self.s[self.i]) {
                self.i += 1;
            }
            if self.peek(0) == b'.'
                && is_ident_start(self.peek(1))
                && self.lang != Lang::Perl
                && self.lang != Lang::Php
            {
                self.i += 1;
                continue;
            }
            if self.peek(0) == b':' && self.peek(1) == b':' && is_ident_start(self.peek(2)) {
                self.i += 2;
                continue;
            }
            break;
        }
        let text = &self.src[start..self.i];
        // Perl and Ruby quote-like operators: `qx{…}`, `%x(…)` come here
        // as names.
        if self.lang == Lang::Perl
            && matches!(text, "q" | "qq" | "qx" | "qw")
            && self.perl_quote(text)
        {
            return;
        }
        self.out.push(Tok::Name(text.to_owned()));
    }

    /// `q{…}`, `qq{…}`, `qx{…}`, `qw(…)` (the name is consumed).
    fn perl_quote(&mut self, op: &str) -> bool {
        let mut j = self.i;
        while j < self.s.len() && self.s[j] == b' ' {
            j += 1;
        }
        let Some(&open) = self.s.get(j) else {
            return false;
        };
        if open.is_ascii_alphanumeric()
            || open.is_ascii_whitespace()
            || open == b'_'
            || open == b','
            || open == b';'
            || open == b'='
            || open == b')'
        {
            return false;
        }
        self.i = j;
        let close = closing(open);
        let interpolate = op != "q" && op != "qw" && open != b'\'';
        let v = self.body(open, close, interpolate, true);
        self.out.push(match op {
            "qx" => Tok::Cmd(v),
            _ => Tok::Str(v),
        });
        true
    }

    /// Drops a comment at the cursor; true if there was one.
    fn comment(&mut self) -> bool {
        let b = self.s[self.i];
        let line = match self.lang {
            Lang::Python | Lang::Perl | Lang::Ruby | Lang::R | Lang::Awk => b == b'#',
            Lang::Php => b == b'#' || (b == b'/' && self.peek(1) == b'/'),
            Lang::Js => b == b'/' && self.peek(1) == b'/',
            Lang::Lua => b == b'-' && self.peek(1) == b'-',
        };
        // `$#array` and `s#a#b#` in Perl are not comments.
        if line
            && self.lang == Lang::Perl
            && self.i > 0
            && matches!(self.s[self.i - 1], b'$' | b's' | b'y' | b'm')
        {
            return false;
        }
        if line {
            while self.i < self.s.len() && self.s[self.i] != b'\n' {
                self.i += 1;
            }
            return true;
        }
        if b == b'/' && self.peek(1) == b'*' && matches!(self.lang, Lang::Js | Lang::Php) {
            match self.src[self.i + 2..].find("*/") {
                Some(end) => self.i += 2 + end + 2,
                None => self.i = self.s.len(),
            }
            return true;
        }
        false
    }

    /// A string or command literal at the cursor; true if consumed.
    fn quoted(&mut self) -> bool {
        let b = self.s[self.i];
        match self.lang {
            Lang::Python => {
                // Prefixes: r, b, f, u and pairs of them.
                let mut j = self.i;
                let mut raw = false;
                let mut fmt = false;
                while j < self.s.len()
                    && j - self.i < 2
                    && matches!(self.s[j].to_ascii_lowercase(), b'r' | b'b' | b'f' | b'u')
                {
                    raw |= self.s[j].eq_ignore_ascii_case(&b'r');
                    fmt |= self.s[j].eq_ignore_ascii_case(&b'f');
                    j += 1;
                }
                let Some(&q) = self.s.get(j) else {
                    return false;
                };
                if q != b'\'' && q != b'"' {
                    return false;
                }
                if j > self.i && self.i > 0 && is_ident(self.s[self.i - 1]) {
                    return false;
                }
                self.i = j;
                let triple = self.peek(1) == q && self.peek(2) == q;
                let v = if triple {
                    self.i += 3;
                    self.until_triple(q, raw, fmt)
                } else {
                    self.body(q, q, fmt, !raw)
                };
                self.out.push(Tok::Str(v));
                true
            }
            Lang::Js => match b {
                b'\'' | b'"' => {
                    let v = self.body(b, b, false, true);
                    self.out.push(Tok::Str(v));
                    true
                }
                b'`' => {
                    let v = self.body(b, b, true, true);
                    self.out.push(Tok::Str(v));
                    true
                }
                _ => false,
            },
            Lang::Perl | Lang::Php => match b {
                b'\'' => {
                    let v = self.body(b, b, false, false);
                    self.out.push(Tok::Str(v));
                    true
                }
                b'"' => {
                    let v = self.body(b, b, true, true);
                    self.out.push(Tok::Str(v));
                    true
                }
                b'`' => {
                    let v = self.body(b, b, true, true);
                    self.out.push(Tok::Cmd(v));
                    true
                }
                _ => false,
            },
            Lang::Ruby => match b {
                b'\'' => {
                    let v = self.body(b, b, false, false);
                    self.out.push(Tok::Str(v));
                    true
                }
                b'"' => {
                    let v = self.body(b, b, true, true);
                    self.out.push(Tok::Str(v));
                    true
                }
                b'`' => {
                    let v = self.body(b, b, true, true);
                    self.out.push(Tok::Cmd(v));
                    true
                }
                b'%' if matches!(self.peek(1), b'x' | b'q' | b'Q' | b'w' | b'W')
                    && !self.peek(2).is_ascii_alphanumeric()
                    && !self.peek(2).is_ascii_whitespace()
                    && self.peek(2) != 0 =>
                {
                    let kind = self.peek(1);
                    let open = self.peek(2);
                    self.i += 2;
                    let v = self.body(open, closing(open), kind != b'q' && kind != b'w', true);
                    self.out.push(if kind == b'x' {
                        Tok::Cmd(v)
                    } else {
                        Tok::Str(v)
                    });
                    true
                }
                _ => false,
            },
            Lang::Lua => match b {
                b'\'' | b'"' => {
                    let v = self.body(b, b, false, true);
                    self.out.push(Tok::Str(v));
                    true
                }
                b'[' if self.peek(1) == b'[' => {
                    let end = self.src[self.i + 2..]
                        .find("]]")
                        .map_or(self.s.len(), |e| self.i + 2 + e);
                    let text = self.src[self.i + 2..end].to_owned();
                    self.i = (end + 2).min(self.s.len());
                    self.out.push(Tok::Str(Val::lit(&text)));
                    true
                }
                _ => false,
            },
            Lang::R => match b {
                b'\'' | b'"' => {
                    let v = self.body(b, b, false, true);
                    self.out.push(Tok::Str(v));
                    true
                }
                _ => false,
            },
            Lang::Awk => match b {
                b'"' => {
                    let v = self.body(b, b, false, true);
                    self.out.push(Tok::Str(v));
                    true
                }
                _ => false,
            },
        }
    }

    /// The body of a literal whose opening delimiter is at the cursor,
    /// up to `close` (nesting `open` when they differ). `interpolate`:
    /// `${…}`, `#{…}`, `{…}` (f-strings) and `$name` are unknown parts;
    /// `escapes`: backslash escapes are decoded.
    fn body(&mut self, open: u8, close: u8, interpolate: bool, escapes: bool) -> Val {
        self.i += 1;
        let mut v = Val::default();
        let mut lit = String::new();
        let mut depth = 0usize;
        let fstring = interpolate && self.lang == Lang::Python;
        while self.i < self.s.len() {
            let b = self.s[self.i];
            if b == b'\\' {
                let end = (self.i + 2).min(self.s.len());
                let esc = &self.src[self.i..next_char_boundary(self.src, end)];
                if escapes {
                    lit.push_str(esc);
                } else if self.peek(1) == close || self.peek(1) == b'\\' {
                    lit.push(self.peek(1) as char);
                } else {
                    lit.push_str(esc);
                }
                self.i += esc.len().max(1);
                continue;
            }
            if b == open && open != close {
                depth += 1;
            } else if b == close {
                if depth == 0 {
                    self.i += 1;
                    break;
                }
                depth -= 1;
            }
            if interpolate {
                let dyn_len = if fstring {
                    if b == b'{' && self.peek(1) == b'{' {
                        lit.push('{');
                        self.i += 2;
                        continue;
                    }
                    if b == b'}' && self.peek(1) == b'}' {
                        lit.push('}');
                        self.i += 2;
                        continue;
                    }
                    (b == b'{').then(|| self.balanced(b'{', b'}'))
                } else {
                    match (self.lang, b, self.peek(1)) {
                        (Lang::Js | Lang::Perl | Lang::Php, b'$', b'{') => {
                            Some(self.balanced_at(self.i + 1, b'{', b'}'))
                        }
                        (Lang::Ruby, b'#', b'{') => Some(self.balanced_at(self.i + 1, b'{', b'}')),
                        (Lang::Php, b'{', b'$') => Some(self.balanced(b'{', b'}')),
                        (Lang::Perl | Lang::Php, b'$', n) if is_ident_start(n) || n == b'{' => {
                            Some(self.var_len())
                        }
                        (Lang::Perl, b'@', n) if is_ident_start(n) => Some(self.var_len()),
                        _ => None,
                    }
                };
                if let Some(len) = dyn_len {
                    flush(&mut v, &mut lit, escapes);
                    v.push(Val::unknown());
                    self.i += len.max(1);
                    continue;
                }
            }
            let ch_end = next_char_boundary(self.src, self.i + 1);
            lit.push_str(&self.src[self.i..ch_end]);
            self.i = ch_end;
        }
        flush(&mut v, &mut lit, escapes);
        v
    }

    /// A triple-quoted Python string (the cursor after the opening quotes).
    fn until_triple(&mut self, q: u8, raw: bool, fmt: bool) -> Val {
        let quote = [q, q, q];
        let quote = std::str::from_utf8(&quote).unwrap_or("'''");
        let end = self.src[self.i..]
            .find(quote)
            .map_or(self.s.len(), |e| self.i + e);
        let body = &self.src[self.i..end];
        self.i = (end + 3).min(self.s.len());
        let mut v = Val::default();
        if fmt {
            let mut lit = String::new();
            let mut chars = body.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '{' {
                    if chars.peek() == Some(&'{') {
                        chars.next();
                        lit.push('{');
                        continue;
                    }
                    flush(&mut v, &mut lit, !raw);
                    v.push(Val::unknown());
                    let mut depth = 1;
                    for c in chars.by_ref() {
                        match c {
                            '{' => depth += 1,
                            '}' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                    continue;
                }
                lit.push(c);
            }
            flush(&mut v, &mut lit, !raw);
        } else {
            let mut lit = body.to_owned();
            flush(&mut v, &mut lit, !raw);
        }
        v
    }

    /// Length of a balanced `{…}` at the cursor.
    fn balanced(&self, open: u8, close: u8) -> usize {
        self.balanced_at(self.i, open, close)
    }

    /// Length from the cursor to the end of the balanced `{…}` opening
    /// at `at`.
    fn balanced_at(&self, at: usize, open: u8, close: u8) -> usize {
        let mut depth = 0;
        let mut j = at;
        while j < self.s.len() {
            if self.s[j] == open {
                depth += 1;
            } else if self.s[j] == close {
                depth -= 1;
                if depth == 0 {
                    return j + 1 - self.i;
                }
            }
            j += 1;
        }
        self.s.len() - self.i
    }

    /// Length of `$name`, `$name{…}`, `$name[…]`, `${…}` at the cursor.
    fn var_len(&self) -> usize {
        let mut j = self.i + 1;
        if self.s.get(j) == Some(&b'{') {
            return self.balanced_at(j, b'{', b'}');
        }
        while j < self.s.len() && is_ident(self.s[j]) {
            j += 1;
        }
        while j < self.s.len() && (self.s[j] == b'{' || self.s[j] == b'[') {
            let close = if self.s[j] == b'{' { b'}' } else { b']' };
            let len = self.balanced_at(j, self.s[j], close);
            j = self.i + len;
        }
        j - self.i
    }
}

/// Moves a literal collected so far into `v`, decoding escapes.
fn flush(v: &mut Val, lit: &mut String, escapes: bool) {
    if lit.is_empty() {
        return;
    }
    let text = if escapes {
        crate::text::unescape(lit, true).0
    } else {
        std::mem::take(lit)
    };
    lit.clear();
    v.push(Val::lit(&text));
}

fn next_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The closing delimiter of a bracketing one.
fn closing(open: u8) -> u8 {
    match open {
        b'(' => b')',
        b'[' => b']',
        b'{' => b'}',
        b'<' => b'>',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(lang: Lang, src: &str) -> Vec<String> {
        lex(lang, src)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|t| match t {
                Tok::Str(v) | Tok::Cmd(v) => Some(v.display()),
                _ => None,
            })
            .collect()
    }

    fn names(lang: Lang, src: &str) -> Vec<String> {
        lex(lang, src)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|t| match t {
                Tok::Name(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn python_strings_prefixes_and_comments() {
        assert_eq!(
            strs(Lang::Python, r#"os.system('rm -rf /') # os.system("x")"#),
            ["rm -rf /"]
        );
        assert_eq!(
            strs(Lang::Python, r#"f"rm {p} x" + r'\n' + """a'b""""#),
            ["rm … x", "\\n", "a'b"]
        );
        assert_eq!(
            names(Lang::Python, "import os; os.path.join(a)"),
            ["import", "os", "os.path.join", "a"]
        );
        assert_eq!(
            names(Lang::Python, "__import__('os').system('x')"),
            ["__import__", ".system"]
        );
    }

    #[test]
    fn interpolation_in_other_languages_is_unknown() {
        assert_eq!(strs(Lang::Js, "exec(`rm -rf ${dir}`)"), ["rm -rf …"]);
        assert_eq!(
            strs(Lang::Perl, r#"system("rm -rf $dir"); `ls`; qx{id}"#),
            ["rm -rf …", "ls", "id"]
        );
        assert_eq!(
            strs(Lang::Ruby, r#"system("rm #{x}"); %x(ls)"#),
            ["rm …", "ls"]
        );
        assert_eq!(
            strs(Lang::Perl, r#"system('rm -rf $HOME')"#),
            ["rm -rf $HOME"]
        );
    }

    #[test]
    fn regex_literals_and_comments_hide_nothing_they_should_not() {
        assert_eq!(strs(Lang::Awk, r#"/"/ { system("ls") }"#), ["ls"]);
        assert_eq!(
            strs(Lang::Js, "// system('x')\n/* y */ a / b; exec('id')"),
            ["id"]
        );
        assert!(strs(Lang::Lua, "-- os.execute('x')\nos.execute([[ls]])") == ["ls"]);
    }
}
