//! Asking before a command destroys something: on a terminal the person
//! answers `[y/N]`; without one (a script, a pipe) nobody can, so the
//! command needs `--yes` and otherwise stops with a usage error before
//! anything is changed.

use std::io::{BufRead, IsTerminal, Write};

use crate::CliError;

/// Whether to go on with what `question` describes: `yes` (the `--yes`
/// flag) goes on without asking; otherwise `show` prints what is at stake
/// and the person at the terminal is asked on stderr, anything but
/// `y`/`yes` being a no. Without a terminal on stdin it is a usage error
/// naming `--yes` (and nothing is shown).
pub(crate) fn confirm(question: &str, yes: bool, show: impl FnOnce()) -> Result<bool, CliError> {
    if yes {
        return Ok(true);
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(CliError::usage(anyhow::anyhow!(
            "{} — standard input is not a terminal, so nobody can answer: pass --yes to go ahead without asking, or --dry-run to only list",
            question.trim_end_matches('?')
        )));
    }
    show();
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(|err| CliError::failed(anyhow::anyhow!("cannot read the answer: {err}")))?;
    Ok(is_yes(&answer))
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_y_or_yes_agrees() {
        assert!(is_yes("y\n"));
        assert!(is_yes(" YES "));
        assert!(!is_yes("\n"));
        assert!(!is_yes("no"));
        assert!(!is_yes("yep"));
    }
}
