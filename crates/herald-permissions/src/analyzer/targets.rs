//! What writing, deleting or reading a path a command names means: on the
//! floor (system account files, `/boot`, devices, a recursive delete of
//! `/`, home or a system directory), protected (shell start-up files,
//! `~/.ssh`, `/etc`, `.git/` internals), outside the workspace, inside it,
//! or a credential read. Also where relative paths lead: `cd`, `pushd`,
//! `popd` and `-C DIR` options.

use std::path::{Path, PathBuf};

use super::args::is_opt;
use super::{Analyzer, Judge};
use crate::paths::{self, WriteClass};
use crate::shell::{Severity, Short, Word, short};
use crate::text;

impl Analyzer<'_> {
    /// Resolves a directory argument (cd, -C) to a new cwd.
    pub(super) fn dir_of(&self, w: &Word, cwd: Option<&Path>) -> Option<PathBuf> {
        if w.dynamic {
            return None;
        }
        let expanded = paths::expand_tilde(&w.text, self.env.home)?;
        let p = Path::new(expanded.as_ref());
        if p.is_absolute() {
            Some(paths::lexical(Path::new("/"), p))
        } else {
            cwd.map(|c| paths::lexical(c, p))
        }
    }

    /// `cd DIR`, `pushd DIR`, `popd`: where later relative paths resolve
    /// (`None` when the check cannot follow: `cd -`, `popd`).
    pub(super) fn change_dir(&mut self, n: &str, args: &[Word]) {
        if n == "popd" {
            self.cwd = None;
            return;
        }
        let target = args.iter().find(|a| !is_opt(a));
        self.cwd = match target {
            None => self.env.home.map(Path::to_path_buf),
            Some(a) if a.text == "-" => None,
            Some(a) => self.dir_of(a, self.cwd.clone().as_deref()),
        };
    }

    /// A write to the working directory (`tar x`, `unzip`, `patch`).
    pub(super) fn write_cwd(&mut self, j: &mut Judge, cwd: Option<&Path>, cmd_text: &str) {
        let w = match cwd {
            Some(c) => Word::lit(&c.to_string_lossy()),
            None => Word {
                text: ".".into(),
                dynamic: true,
                ..Word::default()
            },
        };
        self.write_target(j, &w, cwd, cmd_text, "writes into");
    }

    /// A write (or non-recursive delete) of `w`: judged by where it lands.
    pub(super) fn write_target(
        &mut self,
        j: &mut Judge,
        w: &Word,
        cwd: Option<&Path>,
        cmd_text: &str,
        verb: &str,
    ) {
        let c = Short(cmd_text);
        if w.stream.is_some() {
            return;
        }
        if w.dynamic {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!(
                    "`{c}` {verb} `{}`, a path only known at run time (the sandbox confines it)",
                    short(&w.text)
                )
            });
            return;
        }
        let texts = if w.braces {
            text::expand_braces(&w.text)
        } else {
            vec![w.text.clone()]
        };
        for t in texts {
            if w.glob && t.contains(['*', '?', '[']) {
                self.glob_write(j, &t, cwd, c, verb);
                continue;
            }
            let Some(r) = paths::resolve(cwd, &t, self.env.home) else {
                j.raise_with(
                    Severity::Safe,
                    "safe-list",
                    || format!("`{c}` {verb} `{t}`, which the check cannot place (after a `cd` it could not follow)"),
                );
                continue;
            };
            if paths::is_harmless_device(&r.lexical) {
                continue;
            }
            if paths::is_net_pseudo_device(&r.lexical) {
                j.raise_with(Severity::Risky, "network", || {
                    format!("`{c}` {verb} {}, a network connection", r.display())
                });
                continue;
            }
            match paths::classify_write(&r, self.env.ws, self.env.home) {
                WriteClass::Floor(why) => j.raise_with(Severity::Floor, "floor", || {
                    format!("`{c}` {why}: {verb} {}", r.display())
                }),
                WriteClass::Protected(why) => {
                    j.raise_with(Severity::Risky, "protected-path", || {
                        format!("`{c}` {verb} {}: {why}", r.display())
                    })
                }
                WriteClass::Outside => j.raise_with(Severity::Risky, "outside-workspace", || {
                    format!(
                        "`{c}` {verb} {}, outside the working directory and writable roots",
                        r.display()
                    )
                }),
                WriteClass::Inside => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` {verb} {} inside the workspace", r.display())
                }),
            }
        }
    }

    /// A globbed write target: judged as a write into its literal parent
    /// directory, and on the floor if the glob can name a floor file.
    fn glob_write(
        &mut self,
        j: &mut Judge,
        pattern: &str,
        cwd: Option<&Path>,
        c: Short<'_>,
        verb: &str,
    ) {
        let abs = match paths::expand_tilde(pattern, self.env.home) {
            Some(p) if p.starts_with('/') => p.into_owned(),
            Some(p) => match cwd {
                Some(d) => format!("{}/{p}", d.display()),
                None => {
                    j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` {verb} `{pattern}` (the sandbox confines it)")
                    });
                    return;
                }
            },
            None => {
                j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` {verb} `{pattern}` (the sandbox confines it)")
                });
                return;
            }
        };
        for floor in [
            "/etc/passwd",
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/group",
            "/etc/sudoers",
            "/dev/sda",
            "/dev/nvme0n1",
            "/dev/vda",
            "/dev/xvda",
            "/dev/hda",
            "/dev/mmcblk0",
        ] {
            if text::wild_match(&abs, floor) {
                j.raise_with(Severity::Floor, "floor", || {
                    format!("`{c}` {verb} `{pattern}`, which can name {floor}")
                });
                return;
            }
        }
        let cut = abs.find(['*', '?', '[']).unwrap_or(abs.len());
        let parent = abs[..cut]
            .rsplit_once('/')
            .map(|(p, _)| if p.is_empty() { "/" } else { p })
            .unwrap_or("/");
        let w = Word::lit(parent);
        // The parent directory's own class, phrased as writes inside it.
        let mut inner = Judge::new();
        self.write_target(&mut inner, &w, cwd, c.0, verb);
        let sev = inner.sev.max(if inner.sev == Severity::ReadOnly {
            Severity::Safe
        } else {
            inner.sev
        });
        if sev == Severity::Safe {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` {verb} `{pattern}` inside the workspace")
            });
        } else {
            j.raise(inner.sev, inner.rule, inner.reason);
        }
    }

    /// A recursive delete / chmod / chown of `w`.
    pub(super) fn recursive_target(
        &mut self,
        j: &mut Judge,
        w: &Word,
        cwd: Option<&Path>,
        cmd_text: &str,
        verb: &str,
    ) {
        let c = Short(cmd_text);
        if w.dynamic {
            j.raise_with(Severity::Unresolved, "unresolved", || {
                format!(
                    "`{c}` {verb} `{}`, a path only known at run time",
                    short(&w.text)
                )
            });
            return;
        }
        let texts = if w.braces {
            text::expand_braces(&w.text)
        } else {
            vec![w.text.clone()]
        };
        for t in texts {
            if w.glob && t.contains(['*', '?', '[']) {
                let abs = match paths::expand_tilde(&t, self.env.home) {
                    Some(p) if p.starts_with('/') => Some(p.into_owned()),
                    Some(p) => cwd.map(|d| format!("{}/{p}", d.display())),
                    None => None,
                };
                let Some(abs) = abs else {
                    j.raise_with(Severity::Unresolved, "unresolved", || {
                        format!("`{c}` {verb} `{t}`, which the check cannot place")
                    });
                    continue;
                };
                let abs_lex = paths::lexical(Path::new("/"), Path::new(&abs))
                    .display()
                    .to_string();
                // The glob can name a floor directory itself…
                let mut floor_dirs: Vec<String> = vec!["/".into()];
                floor_dirs.extend(
                    [
                        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt",
                        "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "/tmp", "/mnt",
                        "/media", "/run", "/snap",
                    ]
                    .iter()
                    .map(|s| s.to_string()),
                );
                if let Some(h) = self.env.home {
                    floor_dirs.push(h.display().to_string());
                }
                let names_floor = floor_dirs
                    .iter()
                    .any(|d| text::wild_match(&abs_lex, d) || text::wild_match(&abs, d));
                // …or everything in one (`/*`, `~/*`, `/usr/*`).
                let (parent, last) = abs_lex.rsplit_once('/').unwrap_or(("", &abs_lex));
                let parent = if parent.is_empty() { "/" } else { parent };
                let wildcard_only = last.chars().all(|ch| matches!(ch, '*' | '?' | '.'))
                    && !parent.contains(['*', '?', '[']);
                let parent_floor = wildcard_only
                    && paths::resolve(None, parent, self.env.home)
                        .is_some_and(|r| paths::is_floor_dir(&r, self.env.home));
                if names_floor || parent_floor {
                    j.raise_with(Severity::Floor, "floor", || {
                        format!(
                            "`{c}` {verb} `{t}`, which covers {}",
                            if parent_floor {
                                parent
                            } else {
                                "a system or home directory"
                            }
                        )
                    });
                } else {
                    self.glob_write(j, &t, cwd, c, verb);
                }
                continue;
            }
            let Some(r) = paths::resolve(cwd, &t, self.env.home) else {
                j.raise_with(Severity::Unresolved, "unresolved", || {
                    format!("`{c}` {verb} `{t}`, which the check cannot place")
                });
                continue;
            };
            if paths::is_floor_dir(&r, self.env.home) {
                j.raise_with(Severity::Floor, "floor", || {
                    format!("`{c}` {verb} {}, a system or home directory", r.display())
                });
            } else {
                self.write_target(
                    j,
                    &Word::lit(&r.lexical.to_string_lossy()),
                    cwd,
                    cmd_text,
                    verb,
                );
            }
        }
    }

    /// A read of `w`: asks for credentials and private keys.
    pub(super) fn read_target(
        &mut self,
        j: &mut Judge,
        w: &Word,
        cwd: Option<&Path>,
        cmd_text: &str,
    ) {
        if w.dynamic || w.stream.is_some() {
            return;
        }
        // Lexical spelling first; the kernel's only when the path itself is
        // a symlink (a read through a symlinked parent directory is not
        // followed here; read_file resolves fully).
        let Some(expanded) = paths::expand_tilde(&w.text, self.env.home) else {
            return;
        };
        let p = Path::new(expanded.as_ref());
        let lexical = match (p.is_absolute(), cwd) {
            (true, _) => paths::lexical(Path::new("/"), p),
            (false, Some(c)) => paths::lexical(c, p),
            (false, None) => return,
        };
        let is_link = paths::is_symlink(&lexical);
        let r = paths::Resolved {
            canonical: if is_link {
                paths::canonical(&lexical)
            } else {
                lexical.clone()
            },
            lexical,
        };
        if let Some(why) = paths::credential(&r, self.env.home, self.env.ws) {
            j.raise_with(Severity::Risky, "credentials", || {
                format!("`{}` reads {why}", short(cmd_text))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::strictest;
    use crate::shell::Severity;

    #[test]
    fn a_write_is_judged_by_where_it_lands() {
        assert_eq!(
            strictest("echo x > /etc/passwd"),
            (Severity::Floor, "floor")
        );
        assert_eq!(strictest("echo x > /dev/sda"), (Severity::Floor, "floor"));
        assert_eq!(
            strictest("echo x >> ~/.bashrc"),
            (Severity::Risky, "protected-path")
        );
        assert_eq!(
            strictest("echo x > .git/hooks/pre-commit"),
            (Severity::Risky, "protected-path")
        );
        assert_eq!(
            strictest("echo x > /opt/out.txt"),
            (Severity::Risky, "outside-workspace")
        );
        assert_eq!(strictest("echo x > out.txt"), (Severity::Safe, "safe-list"));
        assert_eq!(
            strictest("echo x > /tmp/out.txt"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(strictest("echo x > /dev/null").0, Severity::ReadOnly);
        assert_eq!(
            strictest("echo x > /dev/tcp/example.com/80"),
            (Severity::Risky, "network")
        );
    }

    #[test]
    fn globbed_and_braced_writes_cover_every_name_they_can_make() {
        assert_eq!(strictest("echo x > /etc/pass*"), (Severity::Floor, "floor"));
        assert_eq!(
            strictest("touch {a,/etc/shadow}"),
            (Severity::Floor, "floor")
        );
        assert_eq!(strictest("touch src/*.rs"), (Severity::Safe, "safe-list"));
    }

    #[test]
    fn recursive_targets_on_the_floor() {
        for cmd in [
            "rm -rf /",
            "rm -rf ~",
            "rm -rf /*",
            "rm -rf ~/*",
            "rm -rf /usr/*",
            "rm -rf /u*",
            "rm -rf /home/user/..",
            "chmod -R 777 /etc",
        ] {
            assert_eq!(strictest(cmd), (Severity::Floor, "floor"), "{cmd}");
        }
        assert_eq!(
            strictest("rm -rf build/*"),
            (Severity::Risky, "recursive-delete")
        );
    }

    #[test]
    fn recursive_targets_the_check_cannot_place_are_unresolved() {
        assert_eq!(
            strictest("rm -rf \"$DIR\""),
            (Severity::Unresolved, "unresolved")
        );
        // After `cd -` relative paths lead nowhere the check knows.
        assert_eq!(
            strictest("cd -; rm -rf build"),
            (Severity::Unresolved, "unresolved")
        );
    }

    #[test]
    fn cd_moves_where_relative_paths_lead() {
        assert_eq!(strictest("cd /; rm -rf usr"), (Severity::Floor, "floor"));
        // `cd` alone goes home; `..` of home is a floor directory.
        assert_eq!(strictest("cd; rm -rf .."), (Severity::Floor, "floor"));
        assert_eq!(
            strictest("cd /opt && touch x"),
            (Severity::Risky, "outside-workspace")
        );
        assert_eq!(
            strictest("pushd /opt; popd; rm -rf x"),
            (Severity::Unresolved, "unresolved")
        );
    }

    #[test]
    fn reading_credentials_asks() {
        assert_eq!(
            strictest("cat ~/.ssh/id_ed25519"),
            (Severity::Risky, "credentials")
        );
        assert_eq!(strictest("cat ./README.md").0, Severity::ReadOnly);
    }
}
