//! Diagnostic logs: `tracing` records go to `$HERALD_HOME/logs/herald.YYYY-MM-DD.log`
//! (one file a day, the newest [`KEEP_FILES`] kept), written by a background
//! thread so logging never blocks the agent. Nothing reaches the terminal
//! unless `HERALD_LOG_STDERR=1` asks for it.
//!
//! The filter comes from `HERALD_LOG`, else `RUST_LOG` (the usual
//! `target=level` directives), else [`DEFAULT_FILTER`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Log files kept in `logs/`; older ones are deleted when a new day starts.
pub(crate) const KEEP_FILES: usize = 14;

/// Log lines queued for the writer thread before new ones are dropped.
const LOG_QUEUE_LINES: usize = 1024;

/// `info` for herald's own crates, `warn` for everything else.
pub(crate) const DEFAULT_FILTER: &str = "warn,herald=info,herald_cli=info,herald_core=info,\
herald_llm=info,herald_store=info,herald_tools=info,herald_exec=info,herald_knowledge=info";

/// Keeps the log writer running; dropping it writes what is still queued.
pub(crate) struct LogGuard {
    _worker: Option<WorkerGuard>,
}

/// The directory logs are written to.
pub(crate) fn log_dir(home: &Path) -> PathBuf {
    home.join("logs")
}

/// The filter directives in force for `env`.
fn filter_spec(env: &HashMap<String, String>) -> (&'static str, String) {
    for key in ["HERALD_LOG", "RUST_LOG"] {
        if let Some(value) = env.get(key).filter(|v| !v.trim().is_empty()) {
            return (key, value.trim().to_owned());
        }
    }
    ("default", DEFAULT_FILTER.to_owned())
}

/// Installs the global subscriber. Problems (an unwritable `logs/`, a bad
/// filter) are reported once on stderr and never stop the command.
pub(crate) fn init(home: &Path, env: &HashMap<String, String>) -> LogGuard {
    let (source, spec) = filter_spec(env);
    let filter = match EnvFilter::try_new(&spec) {
        Ok(filter) => filter,
        Err(err) => {
            eprintln!(
                "herald: warning: {source}='{spec}' is not a valid log filter ({err}); \
                 using the default (e.g. HERALD_LOG=debug or HERALD_LOG=herald_llm=debug)"
            );
            EnvFilter::new(DEFAULT_FILTER)
        }
    };
    let dir = log_dir(home);
    // The appender prunes old files by listing the directory: it must exist.
    let _ = std::fs::create_dir_all(&dir);
    let file = match RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix("herald")
        .filename_suffix("log")
        .max_log_files(KEEP_FILES)
        .build(&dir)
    {
        // A small queue: a full default one (128k lines) is megabytes of
        // memory for a log that gets a few lines a run; lines beyond it are
        // dropped rather than blocking the agent.
        Ok(appender) => Some(
            tracing_appender::non_blocking::NonBlockingBuilder::default()
                .buffered_lines_limit(LOG_QUEUE_LINES)
                .lossy(true)
                .finish(appender),
        ),
        Err(err) => {
            eprintln!(
                "herald: warning: cannot write logs to {} ({err}); check that HERALD_HOME is writable",
                dir.display()
            );
            None
        }
    };
    let stderr = env
        .get("HERALD_LOG_STDERR")
        .is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
    let (writer, worker) = match file {
        Some((writer, worker)) => (Some(writer), Some(worker)),
        None => (None, None),
    };
    let file_layer = writer.map(|writer| {
        tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
    });
    let stderr_layer = stderr.then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
    });
    // Fails only when a subscriber is already set (never in the binary).
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    LogGuard { _worker: worker }
}

/// Logs the start (or resumption) of a root session.
pub(crate) fn session_started(
    common: &crate::args::CommonArgs,
    settings: &herald_core::Settings,
    session_id: &str,
) {
    let resumed = common.resume.is_some() || common.continue_latest;
    tracing::info!(
        session_id,
        resumed,
        model = %settings.model,
        provider = settings.provider.as_str(),
        cwd = %settings.cwd.display(),
        "{}",
        if resumed { "session resumed" } else { "session started" }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn herald_log_wins_over_rust_log_and_the_default() {
        assert_eq!(
            filter_spec(&env(&[("HERALD_LOG", "debug"), ("RUST_LOG", "trace")])).1,
            "debug"
        );
        assert_eq!(filter_spec(&env(&[("RUST_LOG", "trace")])).1, "trace");
        assert_eq!(filter_spec(&env(&[("HERALD_LOG", " ")])).1, DEFAULT_FILTER);
        assert!(EnvFilter::try_new(DEFAULT_FILTER).is_ok());
    }
}
