//! Decides whether a tool call runs, asks a human first, or is denied.
//!
//! A [`Policy`] is built once per session from the mode, the user's and the
//! project's rules and a few facts about the machine; [`Policy::check`] is a
//! pure function of a call and the working directory, cheap enough to run on
//! every call. The only I/O is resolving symlinks of the paths it judges.
//!
//! # Decision order
//!
//! Strictest first; the first step that decides wins:
//!
//! 1. **Floor** (`rule: "floor"`, deny): recursive delete of `/`, `~`, a
//!    system directory or everything in one (`/*`) in any spelling, or of
//!    the working directory itself, an ancestor of it or everything in it;
//!    `mkfs`, `wipefs`, `dd` or any write onto a block device; fork bombs;
//!    recursive `chmod`/`chown` of those directories; downloaded data run by
//!    a shell or interpreter (`curl … | sh`, `bash <(curl …)`,
//!    `sh -c "$(curl …)"`, `curl -o x.sh … && sh x.sh`); writes to
//!    `/etc/passwd`-class files and `/boot` — also when inline interpreter
//!    code, an awk program, a sed script, git configuration or an
//!    `execute_code` script does it. No mode and no rule changes it.
//! 2. **Deny rules** (user `deny`, project `project_deny`).
//! 3. **Ask rules** (user `ask`, project `project_ask`; project files can
//!    only add these two kinds).
//! 4. **Unresolved** (`rule: "unresolved"`, ask in every mode, no allow
//!    rule overrides it): a shell command the check cannot see through — a
//!    command name only known at run time (`$CMD`), `eval` of computed
//!    text, text of unknown origin piped into a shell, a recursive delete of
//!    a path it cannot place, or anything that does not parse.
//! 5. **Allow rules** (user `allow`, plus [`Policy::add_allow`]). For
//!    `terminal`, every simple command that is not read-only must be allowed
//!    (by a rule or by step 6), so `terminal(git push*)` does not let
//!    `git push && rm -rf x` run; a rule without wildcards equal to the
//!    whole command line allows all of it. Rules in `allow_network` also
//!    give the confined calls they allow the network ([`Verdict::network`]).
//! 6. **Mode default**:
//!    * read-only commands and reads run in every mode (reads of private
//!      keys and credential files ask, except in full-access);
//!    * `read-only`: anything else asks;
//!    * `workspace-write`: writes inside the working directory, the
//!      writable roots and temp, and commands on the built-in safe list
//!      (build/test tools, local git, file edits) run — commands confined
//!      (`confine: true`); network, installs, `git push`, destructive git,
//!      recursive deletes, writes outside the workspace or to protected
//!      files (shell start-up files, `~/.ssh`, `/etc`, `.git/` internals),
//!      `sudo` and unknown commands ask; without a sandbox every
//!      non-read-only command asks;
//!    * `full-access`: everything runs, unconfined.
//!
//! An `ask` verdict offers the narrowest rule that allows exactly that
//! call ([`Verdict::allow_rule`]): the command line, paths or arguments
//! with glob characters escaped; none where no rule can allow it.
//!
//! Shell commands are parsed with tree-sitter-bash into every simple
//! command (lists, pipelines, subshells, groups, substitutions, function
//! bodies, here-documents, `bash -c`/`eval` strings, text piped into a
//! shell when it can be computed — `echo`, `printf`, `base64 -d`),
//! wrappers (`sudo`, `env`, `xargs`, `timeout`, `nice`, `find -exec`, …)
//! are stripped, and each is classified; the strictest decides. Words are
//! split on `IFS` and brace-expanded as bash does. Code handed to an
//! interpreter is scanned for the commands it runs, the trees it deletes,
//! the files it writes and its network use.

mod analyzer;
mod mode;
mod paths;
mod policy;
mod rules;
mod shell;
mod text;
mod verdict;

pub use mode::{Mode, ParseModeError};
pub use policy::{CallInfo, Policy, PolicyConfig, RuleError};
pub use verdict::{Decision, Verdict};
