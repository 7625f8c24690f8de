//! Does a package manager or build tool install, publish or fetch, or
//! only build, test and query? Cargo; the node managers (npm, yarn, pnpm,
//! bun, deno); the language managers and build tools (pip, uv, go,
//! bundle, dotnet, swift, maven, gradle); and the system and other
//! installers on the installer list (apt, brew, dnf, gem, conda, …).
//! Installs ask as package-install, registry traffic as network, builds
//! and tests run confined.

use super::args::{first_positional, has_flag};
use super::{Analyzer, Judge};
use crate::shell::{Severity, Short, Word};

impl Analyzer<'_> {
    /// `cargo [options] SUBCOMMAND`.
    pub(super) fn cargo(&mut self, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if matches!(t, "--color" | "-Z" | "--config" | "-C" | "--manifest-path") {
                i += 2;
            } else if t.starts_with('-') || t.starts_with('+') {
                i += 1;
            } else {
                break;
            }
        }
        let sub = args.get(i).map(|w| w.text.as_str()).unwrap_or("");
        let version_only = args.iter().any(|a| a.text == "--version" || a.text == "-V");
        match sub {
            _ if version_only && sub.is_empty() => {}
            "" | "version" | "metadata" | "tree" | "locate-project" | "pkgid"
            | "verify-project" | "read-manifest" | "help" | "--list" => {}
            "install" | "uninstall" | "add" | "binstall" => {
                j.raise_with(Severity::Risky, "package-install", || {
                    format!("`{c}` installs or adds packages")
                })
            }
            "publish" | "login" | "logout" | "owner" | "yank" | "search" | "fetch" | "update"
            | "vendor" | "info" => j.raise_with(Severity::Risky, "network", || {
                format!("`{c}` uses the network (crates.io)")
            }),
            _ => j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` is a cargo build/test command (confined)")
            }),
        }
    }

    /// `npm`, `yarn`, `pnpm`, `bun`, `deno`.
    pub(super) fn node_pm(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        let sub = first_positional(args).unwrap_or("");
        if args.len() == 1 && matches!(args[0].text.as_str(), "--version" | "-v" | "-V") {
            return;
        }
        let install = node_installs(n, sub);
        let network = node_uses_network(n, sub);
        let query = node_queries(sub);
        if install {
            j.raise_with(Severity::Risky, "package-install", || {
                format!("`{c}` installs or removes packages")
            });
        } else if network {
            j.raise_with(Severity::Risky, "network", || {
                format!("`{c}` uses the package registry over the network")
            });
        } else if query {
        } else {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` runs a project script or tool (confined)")
            });
        }
    }

    /// `pip`, `uv`, `go`, `bundle`, `dotnet`, and the build tools `swift`,
    /// `mvn`, `gradle` (always confined builds).
    pub(super) fn lang_pm(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        let sub = first_positional(args).unwrap_or("");
        if args.len() == 1 && matches!(args[0].text.as_str(), "--version" | "-V" | "version") {
            return;
        }
        match n {
            "pip" | "pip3" => match sub {
                "install" | "uninstall" | "download" | "wheel" => {
                    j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs or removes Python packages")
                    })
                }
                "list" | "show" | "freeze" | "check" | "help" | "" | "config" | "debug"
                | "inspect" => {}
                "search" | "index" => j.raise_with(Severity::Risky, "network", || {
                    format!("`{c}` uses the network")
                }),
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` manages Python packages locally")
                }),
            },
            "uv" => {
                let sub2 = args
                    .iter()
                    .filter(|a| !a.text.starts_with('-'))
                    .nth(1)
                    .map(|w| w.text.as_str())
                    .unwrap_or("");
                match (sub, sub2) {
                    ("pip", "install" | "uninstall" | "sync" | "compile")
                    | (
                        "add" | "remove" | "sync" | "lock" | "tool" | "python" | "self" | "publish"
                        | "venv",
                        _,
                    ) => j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs or changes Python packages")
                    }),
                    ("pip", "list" | "show" | "freeze" | "check" | "tree")
                    | ("tree" | "version" | "help", _) => {}
                    _ => j.raise_with(Severity::Safe, "safe-list", || {
                        format!("`{c}` runs a project command (confined)")
                    }),
                }
            }
            "go" => match sub {
                "get" | "install" => j.raise_with(Severity::Risky, "package-install", || {
                    format!("`{c}` installs Go packages")
                }),
                "mod"
                    if matches!(
                        args.iter()
                            .filter(|a| !a.text.starts_with('-'))
                            .nth(1)
                            .map(|w| w.text.as_str()),
                        Some("download")
                    ) =>
                {
                    j.raise_with(Severity::Risky, "network", || {
                        format!("`{c}` downloads modules")
                    })
                }
                "version" | "env" | "doc" | "help" | "list" => {
                    if sub == "env" && has_flag(args, &['w', 'u'], &[]) {
                        j.raise_with(Severity::Safe, "safe-list", || {
                            format!("`{c}` changes the Go environment")
                        });
                    }
                }
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` is a Go build/test command (confined)")
                }),
            },
            "bundle" => match sub {
                "install" | "update" | "add" => {
                    j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs gems")
                    })
                }
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` runs a project command (confined)")
                }),
            },
            "dotnet" => match sub {
                "add" | "tool" | "workload" | "nuget" | "restore" => {
                    j.raise_with(Severity::Risky, "package-install", || {
                        format!("`{c}` installs packages")
                    })
                }
                _ => j.raise_with(Severity::Safe, "safe-list", || {
                    format!("`{c}` is a .NET build/test command (confined)")
                }),
            },
            _ => j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` is a build/test command (confined)")
            }),
        }
    }

    /// A package manager on the installer list: its queries are on the
    /// safe list, anything else installs.
    pub(super) fn installer(&mut self, n: &str, args: &[Word], j: &mut Judge, cmd_text: &str) {
        let c = Short(cmd_text);
        let sub = first_positional(args).unwrap_or("");
        let query = matches!(
            sub,
            "list"
                | "search"
                | "show"
                | "info"
                | "policy"
                | "madison"
                | "depends"
                | "rdepends"
                | "--version"
                | "version"
                | "show-toolchain"
        ) || args.iter().any(|a| a.text == "--version" || a.text == "-V")
            || (n == "dpkg" && has_flag(args, &['l', 'L', 's'], &["--list", "--status"]));
        if query {
            j.raise_with(Severity::Safe, "safe-list", || {
                format!("`{c}` queries a package manager")
            });
        } else {
            j.raise_with(Severity::Risky, "package-install", || {
                format!("`{c}` installs or changes packages")
            });
        }
    }
}

/// The subcommands of a node package manager that install or remove
/// packages (npm's abbreviations and common typos included).
fn node_installs(n: &str, sub: &str) -> bool {
    match n {
        "npm" => matches!(
            sub,
            "install"
                | "i"
                | "in"
                | "ins"
                | "inst"
                | "insta"
                | "instal"
                | "isnt"
                | "isnta"
                | "isntal"
                | "add"
                | "ci"
                | "clean-install"
                | "install-test"
                | "it"
                | "install-ci-test"
                | "cit"
                | "uninstall"
                | "un"
                | "unlink"
                | "remove"
                | "rm"
                | "r"
                | "update"
                | "up"
                | "upgrade"
                | "udpate"
                | "link"
                | "ln"
                | "dedupe"
                | "ddp"
                | "rebuild"
                | "rb"
        ),
        "yarn" => {
            sub.is_empty()
                || matches!(
                    sub,
                    "add" | "install" | "remove" | "upgrade" | "up" | "global" | "dlx" | "link"
                )
        }
        "pnpm" => matches!(
            sub,
            "add" | "install" | "i" | "remove" | "rm" | "update" | "up" | "dlx" | "link" | "unlink"
        ),
        "bun" => matches!(
            sub,
            "add" | "a" | "install" | "i" | "remove" | "rm" | "update" | "link" | "x"
        ),
        "deno" => matches!(sub, "install" | "add" | "upgrade" | "uninstall" | "remove"),
        _ => false,
    }
}

/// The subcommands of a node package manager that talk to the registry.
fn node_uses_network(n: &str, sub: &str) -> bool {
    match n {
        "npm" => matches!(
            sub,
            "publish"
                | "unpublish"
                | "deprecate"
                | "dist-tag"
                | "login"
                | "adduser"
                | "logout"
                | "view"
                | "info"
                | "show"
                | "v"
                | "outdated"
                | "audit"
                | "search"
                | "exec"
                | "x"
                | "doctor"
                | "owner"
                | "access"
                | "token"
                | "init"
                | "create"
                | "ping"
        ),
        "yarn" | "pnpm" => matches!(
            sub,
            "publish"
                | "login"
                | "info"
                | "outdated"
                | "audit"
                | "exec"
                | "create"
                | "init"
                | "npm"
        ),
        _ => false,
    }
}

/// The subcommands that only query the project or the configuration.
fn node_queries(sub: &str) -> bool {
    matches!(
        sub,
        "ls" | "list"
            | "ll"
            | "la"
            | "root"
            | "prefix"
            | "bin"
            | "help"
            | "explain"
            | "why"
            | "config"
            | "get"
            | "--version"
            | "-v"
            | "fund"
            | "version"
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::strictest;
    use super::{node_installs, node_uses_network};
    use crate::shell::Severity;

    #[test]
    fn cargo_builds_run_confined_and_installs_ask() {
        assert_eq!(
            strictest("cargo test -p herald"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(
            strictest("cargo +nightly build"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(strictest("cargo tree").0, Severity::ReadOnly);
        assert_eq!(strictest("cargo --version").0, Severity::ReadOnly);
        assert_eq!(
            strictest("cargo install ripgrep"),
            (Severity::Risky, "package-install")
        );
        assert_eq!(
            strictest("cargo add serde"),
            (Severity::Risky, "package-install")
        );
        assert_eq!(strictest("cargo publish"), (Severity::Risky, "network"));
    }

    #[test]
    fn node_managers_by_subcommand() {
        assert!(node_installs("npm", "i") && node_installs("npm", "isnt"));
        assert!(node_installs("yarn", ""));
        assert!(!node_installs("npm", "run") && !node_installs("deno", "run"));
        assert!(node_uses_network("npm", "publish") && node_uses_network("pnpm", "exec"));
        assert!(!node_uses_network("bun", "publish"));
        assert_eq!(strictest("npm ci"), (Severity::Risky, "package-install"));
        assert_eq!(strictest("npm view react"), (Severity::Risky, "network"));
        assert_eq!(strictest("npm run build"), (Severity::Safe, "safe-list"));
        assert_eq!(strictest("pnpm ls").0, Severity::ReadOnly);
        assert_eq!(strictest("bun -v").0, Severity::ReadOnly);
    }

    #[test]
    fn language_managers_by_subcommand() {
        assert_eq!(
            strictest("pip install -r req.txt"),
            (Severity::Risky, "package-install")
        );
        assert_eq!(strictest("pip3 freeze").0, Severity::ReadOnly);
        assert_eq!(
            strictest("uv pip install x"),
            (Severity::Risky, "package-install")
        );
        assert_eq!(strictest("uv run pytest"), (Severity::Safe, "safe-list"));
        assert_eq!(strictest("go mod download"), (Severity::Risky, "network"));
        assert_eq!(
            strictest("go install ./..."),
            (Severity::Risky, "package-install")
        );
        assert_eq!(strictest("go test ./..."), (Severity::Safe, "safe-list"));
        assert_eq!(strictest("go env GOPATH").0, Severity::ReadOnly);
        assert_eq!(
            strictest("go env -w GOFLAGS=x"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(
            strictest("dotnet restore"),
            (Severity::Risky, "package-install")
        );
        assert_eq!(strictest("mvn package"), (Severity::Safe, "safe-list"));
    }

    #[test]
    fn installers_ask_unless_they_query() {
        assert_eq!(
            strictest("apt-get install -y jq"),
            (Severity::Risky, "package-install")
        );
        assert_eq!(
            strictest("brew upgrade"),
            (Severity::Risky, "package-install")
        );
        assert_eq!(
            strictest("apt list --installed"),
            (Severity::Safe, "safe-list")
        );
        assert_eq!(strictest("dpkg -l"), (Severity::Safe, "safe-list"));
        assert_eq!(strictest("rustup --version"), (Severity::Safe, "safe-list"));
    }
}
