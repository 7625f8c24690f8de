//! What allow rule would let this command run: the `terminal(…)` rule a
//! verdict that asks offers the user.

use super::args::basename;
use super::tables::SUBCOMMAND_TOOLS;
use crate::shell::Word;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(prefix: &str, rest: &str) -> Option<String> {
        let words = |s: &str| s.split_whitespace().map(Word::lit).collect::<Vec<_>>();
        suggest(&words(prefix), &words(rest))
    }

    #[test]
    fn tools_with_subcommands_are_named_up_to_the_subcommand() {
        assert_eq!(
            rule("", "git push --force origin main").as_deref(),
            Some("terminal(git push*)")
        );
        // Global options and their values stay, so the rule matches.
        assert_eq!(
            rule("", "git -C sub push").as_deref(),
            Some("terminal(git -C sub push*)")
        );
        // No subcommand: the tool alone.
        assert_eq!(
            rule("", "cargo --version").as_deref(),
            Some("terminal(cargo *)")
        );
    }

    #[test]
    fn other_commands_are_named_alone_and_wrappers_kept() {
        assert_eq!(
            rule("", "curl -sSL https://example.com").as_deref(),
            Some("terminal(curl *)")
        );
        assert_eq!(
            rule("sudo", "apt-get install -y jq").as_deref(),
            Some("terminal(sudo apt-get install*)")
        );
    }

    #[test]
    fn no_rule_for_a_name_known_only_at_run_time() {
        let dynamic = Word {
            text: "$CMD".into(),
            dynamic: true,
            ..Word::default()
        };
        assert_eq!(suggest(&[], &[dynamic]), None);
        assert_eq!(suggest(&[], &[]), None);
    }
}
