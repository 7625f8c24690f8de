//! Where an archive or compression tool writes: `tar`, `unzip` and `7z`
//! (into `-C`/`-d` or the working directory), `gzip`, `xz`, `zstd`, `zip`
//! and the line-ending converters (rewriting their operands). Listing,
//! testing and writing to stdout only read.

use std::path::Path;

use super::args::{has_flag, opt_value, positionals};
use super::{Analyzer, Judge};
use crate::shell::{Severity, Short, Word};

impl Analyzer<'_> {
    /// `tar`: `t` lists; `x` extracts into `-C DIR` or the working
    /// directory; `c`/`r`/`u` write the archive named by `-f`.
    pub(super) fn tar(&mut self, args: &[Word], j: &mut Judge, cmd_text: &str, cwd: Option<&Path>) {
        let c = Short(cmd_text);
        let first = args.first().map(|a| a.text.as_str()).unwrap_or("");
        let bundled = !first.starts_with('-') && !first.is_empty();
        let mode_has = |ch: char, long: &str| {
            (bundled && first.contains(ch)) || has_flag(args, &[ch], &[long])
        };
        if mode_has('t', "--list") {
            return;
        }
        let extract = mode_has('x', "--extract") || mode_has('x', "--get");
        let create =
            mode_has('c', "--create") || mode_has('r', "--append") || mode_has('u', "--update");
        let file = opt_value(args, Some("-f"), &["--file"]).or_else(|| {
            if bundled && first.contains('f') {
                args.get(1).cloned()
            } else {
                None
            }
        });
        if extract {
            match opt_value(args, Some("-C"), &["--directory"]) {
                Some(d) => self.write_target(j, &d, cwd, cmd_text, "extracts into"),
                None => self.write_cwd(j, cwd, cmd_text),
            }
        }
        if create && let Some(f) = file.filter(|f| f.text != "-") {
            self.write_target(j, &f, cwd, cmd_text, "writes the archive");
        }
        if extract || create {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` works with an archive inside the working directory")
            });
        }
    }

    /// `unzip`, `7z`: extract into `-d`/`-o DIR` or the working directory;
    /// `-l` / `7z l` list.
    pub(super) fn unzip(
        &mut self,
        args: &[Word],
        j: &mut Judge,
        cmd_text: &str,
        cwd: Option<&Path>,
    ) {
        let c = Short(cmd_text);
        if has_flag(args, &['l'], &[]) || args.first().is_some_and(|a| a.text == "l") {
            // Lists the archive.
        } else {
            let dest =
                opt_value(args, Some("-d"), &[]).or_else(|| opt_value(args, Some("-o"), &[]));
            match dest {
                Some(d) => self.write_target(j, &d, cwd, cmd_text, "extracts into"),
                None => self.write_cwd(j, cwd, cmd_text),
            }
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` extracts an archive")
            });
        }
    }

    /// `gzip`, `xz`, `zstd`, `bzip2`, `zip`, `dos2unix`, … : rewrite their
    /// operands, unless they write to stdout, list or test.
    pub(super) fn compress(
        &mut self,
        args: &[Word],
        j: &mut Judge,
        cmd_text: &str,
        cwd: Option<&Path>,
    ) {
        let c = Short(cmd_text);
        if has_flag(args, &['c', 'l', 't'], &["--stdout", "--list", "--test"]) {
            // To stdout or listing.
        } else {
            for t in positionals(args, &["-o", "-S", "--suffix"]) {
                self.write_target(j, t, cwd, cmd_text, "rewrites");
            }
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` compresses or converts files")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::strictest;
    use crate::shell::Severity;

    #[test]
    fn tar_lists_extracts_and_creates() {
        assert_eq!(strictest("tar tzf release.tgz").0, Severity::ReadOnly);
        assert_eq!(
            strictest("tar -xzf release.tgz"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(
            strictest("tar xf release.tar -C /usr/local/lib"),
            (Severity::Risky, "outside-workspace")
        );
        assert_eq!(
            strictest("tar czf out.tgz src"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(
            strictest("tar --create --file /opt/out.tar src"),
            (Severity::Risky, "outside-workspace")
        );
    }

    #[test]
    fn unzip_extracts_where_it_is_told() {
        assert_eq!(strictest("unzip -l a.zip").0, Severity::ReadOnly);
        assert_eq!(strictest("unzip a.zip"), (Severity::Safe, "safe-list"));
        assert_eq!(
            strictest("unzip a.zip -d /opt/app"),
            (Severity::Risky, "outside-workspace")
        );
    }

    #[test]
    fn compressors_rewrite_their_operands() {
        assert_eq!(strictest("gzip -c big.log").0, Severity::ReadOnly);
        assert_eq!(strictest("xz -t a.xz").0, Severity::ReadOnly);
        assert_eq!(strictest("zstd big.log"), (Severity::Safe, "safe-list"));
        assert_eq!(strictest("gzip /etc/passwd"), (Severity::Floor, "floor"));
        assert_eq!(
            strictest("dos2unix ~/.bashrc"),
            (Severity::Risky, "protected-path")
        );
    }
}
