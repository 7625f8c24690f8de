//! `herald doctor`: one line per check (config, credentials, provider, the
//! `[delegation]` child provider when set, store, Python for `execute_code`,
//! the browser of the `browser` toolset,
//! the sandbox: Landlock and the seccomp network filter), each `ok`, `warn`
//! or `fail`. Exits 1 when a check fails (unknown config keys included), 2
//! when the config file is invalid (it does not parse or a number is out of
//! range). Never prints a key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use herald_core::config::ChildProvider;
use herald_core::{Config, ProviderKind, Settings};
use herald_exec::{LandlockSupport, SandboxSupport, SeccompSupport};

use crate::args::{CommonArgs, DoctorArgs};
use crate::{CliError, Exit, setup};

/// How long the provider probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The verdict of one check (shared with `GET /api/doctor`).
type Level = herald_serve::CheckStatus;
/// One line of the report.
type Check = herald_serve::DoctorCheck;

fn check(name: impl Into<String>, status: Level, detail: impl Into<String>) -> Check {
    Check::new(name, status, detail)
}

/// The doctor for `herald serve`'s `GET /api/doctor`: the same checks as
/// `herald doctor`, with the same command-line options, run on request.
pub(crate) struct ServeDoctor {
    pub(crate) common: CommonArgs,
}

impl herald_serve::Doctor for ServeDoctor {
    fn run(&self) -> futures_util::future::BoxFuture<'static, Result<Vec<Check>, String>> {
        let common = self.common.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        // The checks run on a thread of their own, with a runtime of their
        // own, as `herald doctor` runs them.
        let spawned = std::thread::Builder::new()
            .name("herald-doctor".into())
            .spawn(move || {
                let result = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => Ok(runtime.block_on(run_checks(&common)).1),
                    Err(err) => Err(format!("cannot start a runtime for the checks: {err}")),
                };
                let _ = tx.send(result);
            });
        Box::pin(async move {
            spawned.map_err(|err| format!("cannot start the checks' thread: {err}"))?;
            rx.await
                .map_err(|_| "the checks' thread ended without a report".to_owned())?
        })
    }
}

/// Runs every check and prints the report.
pub(crate) async fn doctor(common: &CommonArgs, args: DoctorArgs) -> Result<Exit, CliError> {
    let (config, checks) = run_checks(common).await;
    let failed = checks.iter().any(|c| c.status == Level::Fail);
    if args.json {
        let report = herald_serve::DoctorReport::new(checks);
        let report = serde_json::to_string(&report)
            .map_err(|err| CliError::failed(anyhow::anyhow!("cannot encode the report: {err}")))?;
        println!("{report}");
    } else {
        for c in &checks {
            let status = match c.status {
                Level::Ok => "ok",
                Level::Warn => "warn",
                Level::Fail => "fail",
            };
            println!("{status:<5} {:<12} {}", c.name, c.detail);
        }
    }
    // An unreadable or out-of-range config file is a configuration error
    // (exit 2), as for every command that loads it; other failures exit 1.
    Ok(if !config {
        Exit::Usage
    } else if failed {
        Exit::Failed
    } else {
        Exit::Completed
    })
}

/// Runs every check; also says whether the config file loaded.
async fn run_checks(common: &CommonArgs) -> (bool, Vec<Check>) {
    let env = setup::environment();
    let (home, config_path) = setup::config_location(common, &env);
    let mut checks = Vec::new();
    let config = config_check(&config_path, &mut checks);
    let settings = match &config {
        Some(_) => match setup::settings(common) {
            Ok(settings) => {
                checks.push(credentials_check(&settings, &env));
                Some(settings)
            }
            Err(err) => {
                checks.push(check(
                    "credentials",
                    Level::Fail,
                    format!("{:#}", err.error),
                ));
                None
            }
        },
        None => {
            checks.push(check(
                "credentials",
                Level::Warn,
                "not checked: the config file does not parse",
            ));
            None
        }
    };
    checks.push(match &settings {
        Some(settings) => provider_check(settings).await,
        None => check(
            "provider",
            Level::Warn,
            "not checked: no usable provider settings",
        ),
    });
    if let Some(child) = settings.as_ref().and_then(|s| s.child.as_ref()) {
        checks.push(child_provider_check(child).await);
    }
    checks.push(store_check(&home).await);
    let code_exec = settings
        .as_ref()
        .map(|s| s.code_execution.clone())
        .or_else(|| config.as_ref().map(|c| c.code_execution.clone()))
        .unwrap_or_default();
    let cwd = settings
        .as_ref()
        .map(|s| s.cwd.clone())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    checks.push(python_check(&code_exec.python, &cwd).await);
    checks.push(landlock_check(code_exec.landlock));
    if let Some(settings) = &settings {
        checks.push(web_check(settings));
        checks.push(browser_check(settings).await);
    }
    if let Some(settings) = &settings {
        checks.extend(mcp_checks(settings).await);
    }

    (config.is_some(), checks)
}

fn config_check(path: &Path, checks: &mut Vec<Check>) -> Option<Config> {
    let (status, detail, config) = match Config::load(path) {
        Ok(config) if config.warnings.iter().any(|w| w.is_unknown_key()) => (
            Level::Fail,
            format!(
                "{}: {}; fix or remove the unknown keys",
                path.display(),
                warning_list(&config)
            ),
            Some(config),
        ),
        Ok(config) if !config.warnings.is_empty() => (
            Level::Warn,
            format!("{} parses; {}", path.display(), warning_list(&config)),
            Some(config),
        ),
        Ok(config) if path.exists() => (
            Level::Ok,
            format!("{} parses", path.display()),
            Some(config),
        ),
        Ok(config) => (
            Level::Ok,
            format!(
                "{} does not exist; using defaults (`herald config path` creates it)",
                path.display()
            ),
            Some(config),
        ),
        Err(err) => (Level::Fail, err.to_string(), None),
    };
    checks.push(check("config", status, detail));
    config
}

/// The file's warnings on one line.
fn warning_list(config: &Config) -> String {
    config
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn credentials_check(
    settings: &Settings,
    env: &std::collections::HashMap<String, String>,
) -> Check {
    let key_var = settings.provider.key_var();
    let key = match &settings.api_key {
        Some(_) if env.get(key_var).is_some_and(|v| !v.trim().is_empty()) => {
            format!("API key from {key_var}")
        }
        Some(_) => "API key from the config file".to_owned(),
        None => "no API key (a local server needs none)".to_owned(),
    };
    check(
        "credentials",
        Level::Ok,
        format!(
            "provider {}, model {}, {key}",
            settings.provider.as_str(),
            settings.model
        ),
    )
}

/// Whether the session's provider answers its key (see `herald_llm::probe`).
async fn provider_check(settings: &Settings) -> Check {
    probe(
        "provider",
        settings.provider,
        &settings.base_url,
        settings.api_key.as_deref(),
    )
    .await
}

/// The `[delegation]` override's endpoint, checked like the root's: where
/// its key comes from, and whether the endpoint answers.
async fn child_provider_check(child: &ChildProvider) -> Check {
    let key = match &child.key_source {
        Some(source) => format!("API key from {source}"),
        None => "no API key (a local server needs none)".to_owned(),
    };
    let reached = probe(
        "child provider",
        child.provider,
        &child.base_url,
        child.api_key.as_deref(),
    )
    .await;
    check(
        "child provider",
        reached.status,
        format!(
            "[delegation] children use provider {}, model {}, {key}; {}",
            child.provider.as_str(),
            child.model,
            reached.detail
        ),
    )
}

/// Asks `provider`'s models endpoint with `api_key` the way its client would.
async fn probe(
    name: &'static str,
    provider: ProviderKind,
    base_url: &str,
    api_key: Option<&str>,
) -> Check {
    match herald_core::probe(provider, base_url, api_key, PROBE_TIMEOUT).await {
        herald_core::ProbeOutcome::Answered { url, status } => {
            check(name, Level::Ok, format!("{url} answered HTTP {status}"))
        }
        herald_core::ProbeOutcome::KeyRefused { url, status } => check(
            name,
            Level::Warn,
            format!(
                "{url} is reachable but refused the API key (HTTP {status}); check {}",
                provider.key_var()
            ),
        ),
        herald_core::ProbeOutcome::Unreachable { url, error } => check(
            name,
            Level::Fail,
            format!(
                "cannot reach {url}: {error}; check the base URL ({}) and the network",
                provider.base_url_var()
            ),
        ),
    }
}

/// One check per MCP server a session would start: started, initialised
/// and listed within its startup timeout (then stopped); a project
/// `.mcp.json` waiting for approval is a warning.
async fn mcp_checks(settings: &Settings) -> Vec<Check> {
    let env = match herald_core::load_permission_setup(settings) {
        Ok(setup) => setup.env,
        Err(err) => return vec![check("mcp", Level::Fail, err)],
    };
    let servers = herald_core::session_servers(settings);
    let env = &env;
    let mut checks =
        futures_util::future::join_all(servers.iter().filter(|(_, config)| config.enabled).map(
            |(name, config)| async move {
                let started = std::time::Instant::now();
                match herald_mcp::McpServer::connect(name, config, env).await {
                    Ok(server) => {
                        let tokens: usize = server.tools().iter().map(|t| t.schema_tokens()).sum();
                        let detail = format!(
                            "{} tools (~{tokens} schema tokens), started in {} ms",
                            server.tools().len(),
                            started.elapsed().as_millis()
                        );
                        server.shutdown().await;
                        check(format!("mcp:{name}"), Level::Ok, detail)
                    }
                    Err(err) => check(format!("mcp:{name}"), Level::Fail, err.to_string()),
                }
            },
        ))
        .await;
    if let Some(project) = &settings.project_mcp {
        for warning in project.warnings() {
            checks.push(check("mcp:project", Level::Warn, warning));
        }
    }
    checks
}

async fn store_check(home: &Path) -> Check {
    let path = home.join("state.db");
    let shown = path.display().to_string();
    let opened = tokio::task::spawn_blocking(move || {
        herald_store::Store::open(&path).and_then(|store| store.schema_version())
    })
    .await;
    match opened {
        Ok(Ok(version)) => check(
            "store",
            Level::Ok,
            format!("{shown} opens, schema version {version}"),
        ),
        Ok(Err(err)) => check("store", Level::Fail, err.to_string()),
        Err(err) => check(
            "store",
            Level::Fail,
            format!("opening {shown} crashed: {err}"),
        ),
    }
}

async fn python_check(configured: &str, cwd: &Path) -> Check {
    let path = match herald_exec::find_python(configured) {
        Ok(path) => path,
        Err(err) => {
            return check(
                "python",
                Level::Warn,
                format!("execute_code is disabled: {err}"),
            );
        }
    };
    match herald_exec::probe_python(&path, cwd).await {
        Ok(info) => check(
            "python",
            Level::Ok,
            format!(
                "Python {} at {} (execute_code available)",
                info.version,
                info.executable.display()
            ),
        ),
        Err(err) => check(
            "python",
            Level::Fail,
            format!("execute_code is offered but cannot run: {err}"),
        ),
    }
}

/// The web tools: `web_extract` is always on; `web_search` asks the
/// configured backend, and a backend whose key is not set is a warning
/// (each search would fail). Nothing is sent.
fn web_check(settings: &Settings) -> Check {
    let web = herald_core::web::web_settings(settings, None);
    let extract = if web.policy.allow_private {
        "web_extract on (private addresses allowed)"
    } else {
        "web_extract on"
    };
    match web.search {
        None => check(
            "web",
            Level::Ok,
            format!("{extract}; web_search off: set [web] search to searxng, brave, tavily or exa"),
        ),
        Some(search) if search.key.is_none() && search.backend.default_key_env().is_some() => {
            check(
                "web",
                Level::Warn,
                format!(
                    "{extract}; web_search asks {} but ${} is not set: every search fails until it is",
                    search.backend.name(),
                    search.key_env
                ),
            )
        }
        Some(search) => check(
            "web",
            Level::Ok,
            format!(
                "{extract}; web_search asks {} at {}",
                search.backend.name(),
                search.url
            ),
        ),
    }
}

/// The browser the `browser` toolset would drive: found (and its
/// version), or how to install one. A failure only when the toolset is on.
async fn browser_check(settings: &Settings) -> Check {
    let wanted = herald_core::browser_wanted(settings);
    let state = if wanted {
        "the browser toolset is on"
    } else {
        "the browser toolset is off; turn it on with `[browser] enabled = true` or `--toolsets browser,...`"
    };
    match herald_browser::probe(&herald_core::browser_setup(settings, None)).await {
        Ok(found) => check("browser", Level::Ok, format!("{found} ({state})")),
        Err(err) => check(
            "browser",
            if wanted { Level::Fail } else { Level::Warn },
            format!("{err} ({state})"),
        ),
    }
}

fn landlock_check(enabled: bool) -> Check {
    sandbox_check(&herald_exec::sandbox_support(), enabled)
}

/// One line for both halves of the sandbox: Landlock (writes) and the
/// seccomp network filter.
fn sandbox_check(support: &SandboxSupport, enabled: bool) -> Check {
    let setting = if enabled { "on" } else { "off" };
    let network = match &support.seccomp {
        SeccompSupport::Available => {
            "seccomp network filter available (confined commands have no network unless [permissions] network = true)"
                .to_owned()
        }
        SeccompSupport::Unavailable { reason } => format!(
            "seccomp network filter unavailable ({reason}): unless [permissions] network = true, \
             commands that would run confined ask for approval instead"
        ),
    };
    let seccomp_ok = support.seccomp == SeccompSupport::Available;
    match &support.landlock {
        LandlockSupport::Available { abi } => check(
            "landlock",
            if seccomp_ok { Level::Ok } else { Level::Warn },
            format!(
                "Landlock ABI {abi}: commands in workspace-write run confined; {network} \
                 (code_execution.landlock = {setting})"
            ),
        ),
        LandlockSupport::Unavailable { reason } if enabled => check(
            "landlock",
            Level::Fail,
            format!(
                "code_execution.landlock is on but Landlock is unavailable ({reason}); execute_code will refuse to run scripts. \
                 Turn it off or use a kernel with Landlock"
            ),
        ),
        LandlockSupport::Unavailable { reason } => check(
            "landlock",
            Level::Warn,
            format!(
                "Landlock unavailable ({reason}): in workspace-write every non-read-only command asks for approval \
                 instead of running unconfined (code_execution.landlock is off)"
            ),
        ),
    }
}

#[cfg(test)]
mod sandbox_tests {
    use super::*;

    fn support(landlock: LandlockSupport, seccomp: SeccompSupport) -> SandboxSupport {
        SandboxSupport { landlock, seccomp }
    }

    #[test]
    fn both_halves_are_reported() {
        let ok = sandbox_check(
            &support(
                LandlockSupport::Available { abi: 6 },
                SeccompSupport::Available,
            ),
            false,
        );
        assert_eq!(ok.status, Level::Ok);
        assert!(
            ok.detail
                .starts_with("Landlock ABI 6: commands in workspace-write run confined")
        );
        assert!(ok.detail.contains("seccomp network filter available"));

        let no_seccomp = sandbox_check(
            &support(
                LandlockSupport::Available { abi: 3 },
                SeccompSupport::Unavailable {
                    reason: "no filters".into(),
                },
            ),
            false,
        );
        assert_eq!(no_seccomp.status, Level::Warn);
        assert!(
            no_seccomp
                .detail
                .contains("seccomp network filter unavailable (no filters)")
        );

        let missing = || LandlockSupport::Unavailable {
            reason: "disabled".into(),
        };
        let warn = sandbox_check(&support(missing(), SeccompSupport::Available), false);
        assert_eq!(warn.status, Level::Warn);
        assert!(warn.detail.starts_with(
            "Landlock unavailable (disabled): in workspace-write every non-read-only command asks for approval"
        ));
        let fail = sandbox_check(&support(missing(), SeccompSupport::Available), true);
        assert_eq!(fail.status, Level::Fail);
    }
}
