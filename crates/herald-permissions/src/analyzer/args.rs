//! How a command's words are read: options and their values, positional
//! arguments, subcommands. Every family parses its arguments with these,
//! so a spelling they miss is missed everywhere.

use crate::shell::Word;

/// An option word (`-x`, `--long`): not `-` alone, and not a word only
/// known at run time.
pub(super) fn is_opt(w: &Word) -> bool {
    w.text.len() > 1 && w.text.starts_with('-') && !w.dynamic
}

/// The words' texts joined by single spaces.
pub(super) fn join(words: &[Word]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    s
}

/// The last path component of a command name (`/usr/bin/rm` → `rm`).
pub(super) fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Positional arguments: everything not an option, honouring `--` and
/// skipping the value of options listed in `with_value` (`-m`, `--mode`;
/// `--mode=x` carries its own).
pub(super) fn positionals<'w>(args: &'w [Word], with_value: &[&str]) -> Vec<&'w Word> {
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
pub(super) fn has_flag(args: &[Word], short: &[char], long: &[&str]) -> bool {
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
pub(super) fn opt_value(args: &[Word], short: Option<&str>, long: &[&str]) -> Option<Word> {
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
pub(super) fn first_positional(args: &[Word]) -> Option<&str> {
    args.iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str())
}

/// How many leading words of `args` are options (with their values).
pub(super) fn skip_options(args: &[Word], with_value: &[&str]) -> usize {
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

/// Whether an argument plausibly names a file (for the credentials check).
pub(super) fn looks_like_path(t: &str) -> bool {
    t.contains('/')
        || t.starts_with('.')
        || t.ends_with(".pem")
        || t.ends_with(".key")
        || t.ends_with(".p12")
        || t.ends_with(".pfx")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::lit).collect()
    }

    #[test]
    fn flags_match_clusters_and_long_options_until_the_end_of_options() {
        let r = ['r', 'R'];
        let long = ["--recursive"];
        assert!(has_flag(&words("-fr x"), &r, &long));
        assert!(has_flag(&words("x --recursive"), &r, &long));
        assert!(has_flag(&words("--recursive=yes"), &r, &long));
        assert!(!has_flag(&words("-f x"), &r, &long));
        assert!(!has_flag(&words("-- -r"), &r, &long));
        assert!(!has_flag(&words("- r"), &r, &long));
        let dynamic = Word {
            text: "-r".into(),
            dynamic: true,
            ..Word::default()
        };
        assert!(!has_flag(&[dynamic], &r, &long));
    }

    #[test]
    fn positionals_skip_options_and_their_values() {
        let texts = |line: &str, with_value: &[&str]| -> Vec<String> {
            positionals(&words(line), with_value)
                .into_iter()
                .map(|w| w.text.clone())
                .collect()
        };
        assert_eq!(texts("-m 755 a b", &["-m"]), ["a", "b"]);
        assert_eq!(texts("--mode=755 a", &["--mode"]), ["a"]);
        assert_eq!(texts("-m 755 a", &[]), ["755", "a"]);
        assert_eq!(texts("a -- -b", &[]), ["a", "-b"]);
    }

    #[test]
    fn option_values_in_every_spelling() {
        let value = |line: &str| opt_value(&words(line), Some("-o"), &["--output"]).map(|w| w.text);
        assert_eq!(value("-o out x").as_deref(), Some("out"));
        assert_eq!(value("-oout x").as_deref(), Some("out"));
        assert_eq!(value("--output out").as_deref(), Some("out"));
        assert_eq!(value("--output=out").as_deref(), Some("out"));
        assert_eq!(value("x -- -o out"), None);
        assert_eq!(value("x y"), None);
    }

    #[test]
    fn skip_options_stops_at_the_first_operand() {
        assert_eq!(skip_options(&words("-n 5 -v cmd x"), &["-n"]), 3);
        assert_eq!(skip_options(&words("-- cmd"), &[]), 1);
        assert_eq!(skip_options(&words("cmd -x"), &[]), 0);
        assert_eq!(skip_options(&words("-a -b"), &[]), 2);
        // A value option at the end does not run past the words.
        assert_eq!(skip_options(&words("-n"), &["-n"]), 1);
    }

    #[test]
    fn names_subcommands_and_paths() {
        assert_eq!(basename("/usr/bin/rm"), "rm");
        assert_eq!(basename("rm"), "rm");
        assert_eq!(first_positional(&words("-C dir push")), Some("dir"));
        assert_eq!(join(&words("git  push\torigin")), "git push origin");
        assert!(looks_like_path("./x") && looks_like_path("server.key"));
        assert!(!looks_like_path("main"));
    }
}
