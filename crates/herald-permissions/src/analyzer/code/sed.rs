//! Reads a sed script far enough to find what is not editing text: the
//! `e` command (runs a command, or the pattern space), the `e` flag of
//! `s` (runs the edited line), `w`/`W` and the `w` flag (write a file),
//! `r`/`R` (read one).

/// One thing a sed script does besides editing text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// `e COMMAND`; `None`: `e` alone runs the pattern space.
    Run(Option<String>),
    /// `s/…/…/e`: runs the edited line; the replacement when it is the
    /// whole command (no `&` or back-references).
    SubstituteRun(Option<String>),
    Write(String),
    Read(String),
    /// The rest of the script could not be read.
    Unparsed,
}

/// The effects of `script`, in order.
pub(crate) fn effects(script: &str) -> Vec<Effect> {
    let s: Vec<char> = script.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let to_eol = |i: &mut usize| -> String {
        let start = *i;
        while *i < s.len() && s[*i] != '\n' {
            *i += 1;
        }
        s[start..*i].iter().collect::<String>().trim().to_owned()
    };
    while i < s.len() {
        let c = s[i];
        if c.is_whitespace() || c == ';' || c == '{' || c == '}' || c == '!' {
            i += 1;
            continue;
        }
        // Addresses: numbers, `$`, `/re/`, `\cREc`, `first~step`, `addr,+N`.
        if c.is_ascii_digit() || c == '$' || c == ',' || c == '~' || c == '+' {
            i += 1;
            continue;
        }
        if c == '/' || c == '\\' {
            let delim = if c == '\\' {
                i += 1;
                match s.get(i) {
                    Some(d) => *d,
                    None => break,
                }
            } else {
                '/'
            };
            i += 1;
            if skip_part(&s, &mut i, delim).is_none() {
                out.push(Effect::Unparsed);
                break;
            }
            // `I` / `M` address flags.
            while i < s.len() && matches!(s[i], 'I' | 'M') {
                i += 1;
            }
            continue;
        }
        i += 1;
        match c {
            '#' | ':' => {
                to_eol(&mut i);
            }
            'e' => {
                let cmd = to_eol(&mut i);
                out.push(Effect::Run((!cmd.is_empty()).then_some(cmd)));
            }
            'w' | 'W' => {
                let f = to_eol(&mut i);
                out.push(Effect::Write(f));
            }
            'r' | 'R' => {
                let f = to_eol(&mut i);
                out.push(Effect::Read(f));
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; `a\` continues over lines
                // ending in a backslash.
                loop {
                    let line = to_eol(&mut i);
                    if !line.ends_with('\\') || i >= s.len() {
                        break;
                    }
                    i += 1;
                }
            }
            'b' | 't' | 'T' | 'v' | 'q' | 'Q' | 'l' | 'L' => {
                while i < s.len() && !matches!(s[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            's' | 'y' => {
                let Some(&delim) = s.get(i) else {
                    out.push(Effect::Unparsed);
                    break;
                };
                i += 1;
                let (Some(_), Some(replacement)) =
                    (skip_part(&s, &mut i, delim), skip_part(&s, &mut i, delim))
                else {
                    out.push(Effect::Unparsed);
                    break;
                };
                if c == 'y' {
                    continue;
                }
                // Flags up to the end of the command; `w FILE` ends the line.
                let mut run = false;
                while i < s.len() && !matches!(s[i], ';' | '\n' | '}') {
                    match s[i] {
                        'e' => run = true,
                        'w' => {
                            i += 1;
                            let f = to_eol(&mut i);
                            out.push(Effect::Write(f));
                            break;
                        }
                        _ => {}
                    }
                    i += 1;
                }
                if run {
                    let whole = !replacement.contains('&')
                        && !replacement
                            .chars()
                            .zip(replacement.chars().skip(1))
                            .any(|(a, b)| a == '\\' && b.is_ascii_digit());
                    out.push(Effect::SubstituteRun(
                        whole.then(|| unescape(&replacement, delim)),
                    ));
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z' | 'F' => {}
            _ => {
                out.push(Effect::Unparsed);
                break;
            }
        }
    }
    out
}

/// Skips one `…delim` part (the cursor after the opening delimiter);
/// returns its raw text.
fn skip_part(s: &[char], i: &mut usize, delim: char) -> Option<String> {
    let start = *i;
    while *i < s.len() {
        if s[*i] == '\\' {
            *i += 2;
            continue;
        }
        if s[*i] == delim {
            let part: String = s[start..*i].iter().collect();
            *i += 1;
            return Some(part);
        }
        *i += 1;
    }
    None
}

/// A replacement's escapes: `\/` (the delimiter), `\\`, `\n`.
fn unescape(r: &str, delim: char) -> String {
    let mut out = String::new();
    let mut chars = r.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(e) if e == delim || e == '\\' => out.push(e),
                Some(e) => {
                    out.push('\\');
                    out.push(e);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_writes_and_plain_edits() {
        assert_eq!(
            effects("1e rm -rf /"),
            [Effect::Run(Some("rm -rf /".into()))]
        );
        assert_eq!(effects("e"), [Effect::Run(None)]);
        assert_eq!(
            effects("s/.*/rm -rf \\//e"),
            [Effect::SubstituteRun(Some("rm -rf /".into()))]
        );
        assert_eq!(effects("s/x/& y/e"), [Effect::SubstituteRun(None)]);
        assert_eq!(
            effects("s/a/b/gw out.txt"),
            [Effect::Write("out.txt".into())]
        );
        assert_eq!(
            effects("/x/w /etc/passwd"),
            [Effect::Write("/etc/passwd".into())]
        );
        assert!(effects("1,5p").is_empty());
        assert!(effects("s/e/w/g; /^#/d; $!N; y/abc/xyz/").is_empty());
        assert!(effects("/start/,/end/{s/a/b/;p}").is_empty());
        assert!(effects("1i\\\nhello e world").is_empty());
        assert!(effects("\\,x,d").is_empty());
        assert_eq!(effects("k"), [Effect::Unparsed]);
    }
}
