//! Small text evaluators used to see through commands that build their own
//! text: base64 decoding, `printf`/`echo` formatting, ANSI-C (`$'…'`)
//! escapes and brace expansion.

/// Decodes standard or URL-safe base64 as leniently as `base64 -d` reads
/// it: whitespace ignored, padding optional, stray low bits allowed. `None`
/// when it is not base64 at all.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    use base64::alphabet::{STANDARD, URL_SAFE};
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const ENGINES: [GeneralPurpose; 2] = [
        GeneralPurpose::new(&STANDARD, LENIENT),
        GeneralPurpose::new(&URL_SAFE, LENIENT),
    ];
    let compact: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    ENGINES
        .iter()
        .find_map(|engine| engine.decode(&compact).ok())
}

/// Interprets backslash escapes as `echo -e`, `printf` and `$'…'` do.
/// `stop_at_c`: `\c` ends the output (echo -e, printf %b).
pub(crate) fn unescape(s: &str, ansi_c: bool) -> (String, bool) {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            'e' | 'E' => out.push('\x1b'),
            '\\' => out.push('\\'),
            '\'' if ansi_c => out.push('\''),
            '"' if ansi_c => out.push('"'),
            '?' if ansi_c => out.push('?'),
            'c' if !ansi_c => return (out, true),
            'x' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    out.push_str("\\x");
                } else {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            'u' | 'U' => {
                let max = if e == 'u' { 4 } else { 8 };
                let mut v = 0u32;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            v = v.saturating_mul(16).saturating_add(d);
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            '0'..='7' => {
                // `\0NNN` (echo/printf %b) or `\NNN` ($'…', printf format).
                let mut v = e.to_digit(8).unwrap_or(0);
                let max = if e == '0' && !ansi_c { 3 } else { 2 };
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    (out, false)
}

/// What `echo ARGS` prints (bash's builtin: `-n`, `-e`, `-E` flags).
pub(crate) fn echo(args: &[&str]) -> String {
    let mut newline = true;
    let mut escapes = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c)) {
            for c in a[1..].chars() {
                match c {
                    'n' => newline = false,
                    'e' => escapes = true,
                    _ => escapes = false,
                }
            }
            i += 1;
        } else {
            break;
        }
    }
    let mut out = args[i..].join(" ");
    if escapes {
        let (s, stop) = unescape(&out, false);
        out = s;
        if stop {
            return out;
        }
    }
    if newline {
        out.push('\n');
    }
    out
}

/// What `printf FORMAT ARGS` prints, for the common conversions. The format
/// is reused while arguments remain, as printf does.
pub(crate) fn printf(args: &[&str]) -> String {
    let mut args = args;
    if args.first() == Some(&"--") {
        args = &args[1..];
    }
    let Some((fmt, mut rest)) = args.split_first() else {
        return String::new();
    };
    let mut out = String::new();
    for _round in 0..64 {
        let consumed_before = rest.len();
        let chars: Vec<char> = fmt.chars().collect();
        let mut i = 0;
        let mut literal = String::new();
        while i < chars.len() {
            let c = chars[i];
            if c == '%' {
                if chars.get(i + 1) == Some(&'%') {
                    literal.push('%');
                    i += 2;
                    continue;
                }
                out.push_str(&unescape(&literal, true).0);
                literal.clear();
                // Skip flags, width, precision.
                i += 1;
                while i < chars.len() && "-+ #0123456789.*".contains(chars[i]) {
                    i += 1;
                }
                let conv = chars.get(i).copied().unwrap_or('s');
                i += 1;
                let arg = match rest.split_first() {
                    Some((a, r)) => {
                        rest = r;
                        *a
                    }
                    None => "",
                };
                match conv {
                    'b' => {
                        let (s, stop) = unescape(arg, false);
                        out.push_str(&s);
                        if stop {
                            return out;
                        }
                    }
                    'c' => out.extend(arg.chars().next()),
                    'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'f' | 'g' | 'e' => {
                        out.push_str(if arg.is_empty() { "0" } else { arg });
                    }
                    _ => out.push_str(arg),
                }
                continue;
            }
            literal.push(c);
            i += 1;
        }
        out.push_str(&unescape(&literal, true).0);
        if rest.is_empty() || rest.len() == consumed_before {
            break;
        }
    }
    out
}

/// Bash brace expansion of one word (`/{usr,etc}` → `/usr`, `/etc`;
/// `{1..3}`), capped at 64 results. A word without a valid brace pair is
/// returned as is.
pub(crate) fn expand_braces(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(word, &mut out, 0);
    out
}

fn expand_into(word: &str, out: &mut Vec<String>, depth: usize) {
    if out.len() >= 64 || depth > 8 {
        out.push(word.to_owned());
        return;
    }
    let bytes = word.as_bytes();
    // Find the first `{` with a matching `}` containing a top-level `,` or `..`.
    for open in 0..bytes.len() {
        if bytes[open] != b'{' {
            continue;
        }
        let mut level = 0;
        let mut commas = Vec::new();
        let mut close = None;
        for (j, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => level += 1,
                b'}' => {
                    level -= 1;
                    if level == 0 {
                        close = Some(j);
                        break;
                    }
                }
                b',' if level == 1 => commas.push(j),
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        let pre = &word[..open];
        let post = &word[close + 1..];
        let inner = &word[open + 1..close];
        let mut alts: Vec<String> = Vec::new();
        if !commas.is_empty() {
            let mut start = open + 1;
            for c in commas.iter().copied().chain(std::iter::once(close)) {
                alts.push(word[start..c].to_owned());
                start = c + 1;
            }
        } else if let Some((a, b)) = inner.split_once("..") {
            match (a.parse::<i64>(), b.parse::<i64>()) {
                (Ok(a), Ok(b)) if (a - b).abs() < 64 => {
                    let range: Vec<i64> = if a <= b {
                        (a..=b).collect()
                    } else {
                        (b..=a).rev().collect()
                    };
                    alts.extend(range.into_iter().map(|n| n.to_string()));
                }
                _ => {
                    let (ca, cb) = (a.chars().next(), b.chars().next());
                    match (ca, cb) {
                        (Some(x), Some(y)) if a.len() == 1 && b.len() == 1 => {
                            let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
                            alts.extend((lo..=hi).take(64).map(String::from));
                        }
                        _ => continue,
                    }
                }
            }
        } else {
            continue;
        }
        for alt in alts {
            expand_into(&format!("{pre}{alt}{post}"), out, depth + 1);
            if out.len() >= 64 {
                return;
            }
        }
        return;
    }
    out.push(word.to_owned());
}

/// Shell-glob match of a whole path: `*` and `?` do not cross `/`,
/// `[…]` matches one character of a class. Used to see whether a globbed
/// argument could name a floor path.
pub(crate) fn wild_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    wild(&p, &t, 0)
}

fn wild(p: &[char], t: &[char], depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match p.first() {
        None => t.is_empty(),
        Some('*') => {
            let rest = &p[1..];
            let mut i = 0;
            loop {
                if wild(rest, &t[i..], depth + 1) {
                    return true;
                }
                if i >= t.len() || t[i] == '/' {
                    return false;
                }
                i += 1;
            }
        }
        Some('?') => !t.is_empty() && t[0] != '/' && wild(&p[1..], &t[1..], depth + 1),
        Some('[') => {
            let Some(close) = p.iter().skip(2).position(|&c| c == ']').map(|i| i + 2) else {
                return !t.is_empty() && t[0] == '[' && wild(&p[1..], &t[1..], depth + 1);
            };
            let Some(&c) = t.first() else { return false };
            let class = &p[1..close];
            let (negate, class) = match class.first() {
                Some('!' | '^') => (true, &class[1..]),
                _ => (false, class),
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    hit |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negate && c != '/' && wild(&p[close + 1..], &t[1..], depth + 1)
        }
        Some(&c) => !t.is_empty() && t[0] == c && wild(&p[1..], &t[1..], depth + 1),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn base64() {
        assert_eq!(base64_decode("cm0gLXJmIC8=").unwrap(), b"rm -rf /");
        assert_eq!(base64_decode("cm0gLXJmIC8K\n").unwrap(), b"rm -rf /\n");
        assert_eq!(base64_decode("aGk").unwrap(), b"hi");
        assert_eq!(base64_decode("Pz8_").unwrap(), b"???");
        assert_eq!(base64_decode("Pz8/").unwrap(), b"???");
        assert!(base64_decode("a!b").is_none());
        assert!(base64_decode("abcde").is_none());
    }

    #[test]
    fn echo_and_printf() {
        assert_eq!(echo(&["rm", "-rf", "/"]), "rm -rf /\n");
        assert_eq!(echo(&["-n", "x"]), "x");
        assert_eq!(echo(&["-e", "a\\nb"]), "a\nb\n");
        assert_eq!(printf(&["rm -rf /"]), "rm -rf /");
        assert_eq!(printf(&["%s %s\\n", "rm", "-rf"]), "rm -rf\n");
        assert_eq!(printf(&["%s\\n", "a", "b"]), "a\nb\n");
        assert_eq!(printf(&["\\x72\\x6d -rf /"]), "rm -rf /");
        assert_eq!(printf(&["%b", "r\\0155 x"]), "rm x");
    }

    #[test]
    fn ansi_c() {
        assert_eq!(unescape("\\x72\\155", true).0, "rm");
        assert_eq!(unescape("a\\'b", true).0, "a'b");
    }

    #[test]
    fn wildcards() {
        assert!(wild_match("/*", "/usr"));
        assert!(!wild_match("/*", "/usr/bin"));
        assert!(wild_match("/us?", "/usr"));
        assert!(wild_match("/etc/pass[w]d", "/etc/passwd"));
        assert!(wild_match("/etc/pa*", "/etc/passwd"));
        assert!(!wild_match("/etc/x*", "/etc/passwd"));
    }

    #[test]
    fn braces() {
        assert_eq!(expand_braces("/{usr,etc}"), vec!["/usr", "/etc"]);
        assert_eq!(expand_braces("a{1..3}"), vec!["a1", "a2", "a3"]);
        assert_eq!(expand_braces("{}"), vec!["{}"]);
        assert_eq!(expand_braces("x{a,{b,c}}y"), vec!["xay", "xby", "xcy"]);
    }
}
