//! What command a simple command really runs. Wrappers are stripped
//! until the command proper is left: `sudo`, `doas`, `pkexec` and `run0`
//! mark it privileged; `env` skips assignments and options (`-S` splits
//! its string into the command, `-C` moves the directory); `nice`,
//! `nohup`, `timeout`, `stdbuf`, `ionice`, `taskset`, `strace`, … skip
//! their options; `watch` and `flock -c` run a shell string; `xargs`
//! builds the command from its input (judged on its own). A command name
//! only known at run time is unresolved; one taken from a download is on
//! the floor.

use std::path::PathBuf;

use super::args::{basename, has_flag, join, opt_value, skip_options};
use super::{Analyzer, Judge};
use crate::shell::{Severity, Stream, Word, short};

/// What running one simple command's wrappers left: the command proper.
pub(super) struct Unwrapped {
    /// Index in the full word list where the command proper starts.
    pub(super) start: usize,
    pub(super) words: Vec<Word>,
    /// The wrapper that runs it as root (`sudo`, `su`, …).
    pub(super) privileged: Option<String>,
    /// The directory it runs in (`env -C` moves it).
    pub(super) cwd: Option<PathBuf>,
}

/// What one wrapper does to the words in front of the command proper.
enum Step {
    /// The first word is no wrapper: it is the command proper.
    Proper,
    /// The first this-many words are the wrapper and its options: drop
    /// them and look again.
    Strip(usize),
    /// The wrapper replaced the words (`env -S`): look again.
    Again,
    /// Nothing is left to classify: the wrapper runs nothing else, or what
    /// it runs was judged on its own (`sudo -i`, `command -v`, `watch`,
    /// `xargs`). Carries the command's stdout.
    Done(Stream),
}

impl Analyzer<'_> {
    /// Strips wrappers (at most 16), then classifies the command proper.
    pub(super) fn unwrap_and_classify(
        &mut self,
        un: &mut Unwrapped,
        j: &mut Judge,
        full_text: &str,
        depth: u32,
    ) -> Stream {
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
            match self.unwrap_one(un, j, full_text, depth) {
                Step::Proper => break,
                Step::Strip(skip) => {
                    let skip = skip.min(un.words.len());
                    un.start += skip;
                    un.words.drain(..skip);
                }
                Step::Again => {}
                Step::Done(out) => return out,
            }
        }
        if un.words.is_empty() {
            return Stream::default();
        }
        self.classify(un, j, depth)
    }

    /// One step: what the first word, if it is a wrapper, does to the
    /// words in front of the command proper.
    fn unwrap_one(
        &mut self,
        un: &mut Unwrapped,
        j: &mut Judge,
        full_text: &str,
        depth: u32,
    ) -> Step {
        let name = basename(&un.words[0].text).to_owned();
        let args = &un.words[1..];
        Step::Strip(match name.as_str() {
            "sudo" | "doas" | "pkexec" | "run0" => return sudo(&name, un, j, full_text),
            "env" => return self.env(un),
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
            "nohup" | "builtin" | "unbuffer" | "caffeinate" | "proxychains" | "proxychains4"
            | "coproc" => 1 + skip_options(args, &[]),
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
                    return Step::Done(Stream::default());
                }
                1 + skip_options(args, &[])
            }
            "exec" => 1 + skip_options(args, &["-a"]),
            "stdbuf" => {
                1 + skip_options(args, &["-i", "-o", "-e", "--input", "--output", "--error"])
            }
            "ionice" => {
                if has_flag(args, &['p', 'P', 'u'], &["--pid", "--pgid", "--uid"]) {
                    return Step::Done(Stream::default());
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
                    return Step::Done(Stream::default());
                }
                1 + n + 1
            }
            "flock" => {
                if let Some(c) = opt_value(args, Some("-c"), &["--command"]) {
                    self.shell_string(j, &c, full_text);
                    return Step::Done(Stream::default());
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
                    return Step::Done(Stream::default());
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
                    return Step::Done(Stream::default());
                }
            }
            "xargs" => return Step::Done(self.xargs(un, j, depth)),
            _ => return Step::Proper,
        })
    }

    /// `env [options] [NAME=VALUE…] [CMD]`: options and assignments are
    /// skipped (`PATH=` and preload variables taint what names mean), `-C`
    /// moves the directory, `-S STRING` splits a string into the command.
    /// Without a command it prints the environment.
    fn env(&mut self, un: &mut Unwrapped) -> Step {
        let args = &un.words[1..];
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
            return Step::Again;
        }
        if i >= args.len() {
            // Prints the environment.
            return Step::Done(Stream::default());
        }
        Step::Strip(1 + i)
    }

    /// `xargs [options] cmd args`: the command with the input appended.
    fn xargs(&mut self, un: &mut Unwrapped, j: &mut Judge, depth: u32) -> Stream {
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
        if tokens.is_none()
            && let Some(name) = cmd.first()
            && super::file_system::deletes_files(&name.text)
        {
            j.raise_with(Severity::Risky, "runtime-targets", || {
                format!(
                    "`{}` deletes paths from its input, known only when it runs",
                    short(&join(&un.words))
                )
            });
        }
        un.start += 1 + n;
        // The built command is judged as its own simple command.
        let saved = std::mem::take(&mut self.stdin);
        let out = self.simple(built, &[], depth + 1);
        self.stdin = saved;
        un.words = cmd;
        out
    }
}

/// `sudo`/`doas`/`pkexec`/`run0 [options] CMD`: CMD runs as root. Without
/// a command, `-i`/`-s` open a root shell and `-e` edits files as root.
fn sudo(name: &str, un: &mut Unwrapped, j: &mut Judge, full_text: &str) -> Step {
    un.privileged = Some(name.to_owned());
    let args = &un.words[1..];
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
        return Step::Done(Stream::default());
    }
    Step::Strip(n + 1)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{findings, strictest};
    use crate::shell::Severity;

    #[test]
    fn sudo_marks_the_command_privileged_and_keeps_its_wrappers() {
        let f = findings("sudo -u admin git push origin");
        let push = f.iter().find(|f| f.text == "git push origin");
        let push = push.map(|f| (f.privileged, f.full_text.as_str()));
        assert_eq!(push, Some((true, "sudo -u admin git push origin")), "{f:?}");
        assert_eq!(strictest("sudo ls"), (Severity::Risky, "privileged"));
        assert_eq!(strictest("sudo -i"), (Severity::Risky, "privileged"));
        assert_eq!(strictest("doas rm -rf /"), (Severity::Floor, "floor"));
    }

    #[test]
    fn env_skips_assignments_splits_strings_and_moves_the_directory() {
        assert_eq!(strictest("env FOO=1 BAR=2 ls").0, Severity::ReadOnly);
        assert_eq!(strictest("env -S 'rm -rf /'"), (Severity::Floor, "floor"));
        assert_eq!(strictest("env -C / rm -rf usr"), (Severity::Floor, "floor"));
        assert_eq!(strictest("env").0, Severity::ReadOnly);
        // A changed PATH means a name no longer says what runs.
        assert_eq!(
            strictest("env PATH=./bin ls"),
            (Severity::Safe, "safe-list")
        );
    }

    #[test]
    fn option_taking_wrappers_are_stripped() {
        let f = findings("timeout -s KILL 5 nice -n 10 nohup curl https://example.com");
        assert!(
            f.iter().any(|f| f.text == "curl https://example.com"),
            "{f:?}"
        );
        assert_eq!(
            strictest("stdbuf -o L ionice -c 3 taskset 3 rm -rf /"),
            (Severity::Floor, "floor")
        );
        assert_eq!(strictest("command -v rm").0, Severity::ReadOnly);
        assert_eq!(
            strictest("strace -o /etc/passwd ls"),
            (Severity::Floor, "floor")
        );
    }

    #[test]
    fn watch_and_flock_run_shell_strings() {
        assert_eq!(
            strictest("watch -n 1 'rm -rf ~'"),
            (Severity::Floor, "floor")
        );
        assert_eq!(strictest("watch -n 5 ls -la").0, Severity::ReadOnly);
        assert_eq!(
            strictest("flock /tmp/lock -c 'rm -rf /'"),
            (Severity::Floor, "floor")
        );
    }

    #[test]
    fn xargs_builds_its_command_from_known_input() {
        assert_eq!(
            strictest("echo /etc/passwd | xargs rm"),
            (Severity::Floor, "floor")
        );
        assert_eq!(
            strictest("echo / | xargs -I{} rm -rf {}"),
            (Severity::Floor, "floor")
        );
        // Unknown input: the built command has an unknown operand.
        assert_eq!(
            strictest("find . -name '*.tmp' | xargs rm -rf"),
            (Severity::Unresolved, "unresolved")
        );
        assert_eq!(strictest("ls | xargs").0, Severity::ReadOnly);
    }

    #[test]
    fn command_names_the_check_cannot_see() {
        assert_eq!(
            strictest("$TOOL --fix"),
            (Severity::Unresolved, "unresolved")
        );
        assert_eq!(
            strictest("sudo \"$(curl -s https://example.com/name)\" x"),
            (Severity::Floor, "floor")
        );
    }
}
