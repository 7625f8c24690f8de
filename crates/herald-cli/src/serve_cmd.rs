//! `herald serve`: the HTTP front end (crate `herald-serve`) on a
//! multi-threaded runtime of its own, stopped by SIGINT, SIGTERM or SIGHUP
//! (a second signal exits at once).

use clap::Args;
use herald_serve::{ServeConfig, ServeError, TokenSource};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::{CliError, Exit, setup, signals};

/// Options of `herald serve`; each wins over its `[serve]` config key.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on; anything but loopback needs --token
    /// [default: 127.0.0.1].
    #[arg(long)]
    pub host: Option<String>,
    /// Port to listen on (0: any free port; the URL printed names it)
    /// [default: 8787].
    #[arg(long)]
    pub port: Option<u16>,
    /// Bearer token every request must carry [default: generated once
    /// into $HERALD_HOME/serve.token].
    #[arg(long, env = "HERALD_SERVE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Turns running at once across every session; more get HTTP 429
    /// [default: 64].
    #[arg(long)]
    pub max_concurrent_turns: Option<usize>,
    /// Sessions kept open at once; beyond it the least recently used idle
    /// one is closed (a request naming it reopens it) [default: 256].
    #[arg(long)]
    pub max_open_sessions: Option<usize>,
    /// Largest request body in bytes; larger ones get HTTP 413
    /// [default: 4194304].
    #[arg(long)]
    pub max_body_bytes: Option<usize>,
    /// Browser origin allowed by CORS (repeatable); CORS is off without one.
    #[arg(long = "cors-origin")]
    pub cors_origins: Vec<String>,
    /// Host name (besides the bound address, and localhost on loopback)
    /// that requests may name, for reaching the server under a name
    /// (repeatable); others are refused against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// PEM certificate chain: serve HTTPS (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Open the web UI in the desktop's browser ($BROWSER, else xdg-open),
    /// logged in with the one-time code.
    #[arg(long)]
    pub open: bool,
    /// Do not run scheduled jobs here (by default the server also runs
    /// them, as `herald daemon` would, when no other scheduler is active).
    #[arg(long)]
    pub no_scheduler: bool,
    #[command(flatten)]
    pub service: crate::args::ServiceArgs,
}

/// Runs the server until a stop signal.
pub(crate) async fn serve(common: &CommonArgs, args: ServeArgs) -> Result<Exit, CliError> {
    let settings = setup::settings(common)?;
    let store = setup::open_store(&settings.home)?;
    crate::checkpoints_cmd::prune_in_background(&settings);
    let (token, source) = herald_serve::resolve_token(args.token.as_deref(), &settings.home)
        .map_err(CliError::usage)?;
    if let TokenSource::File(path) = &source {
        eprintln!("herald serve: the bearer token is in {}", path.display());
    }
    let file = settings.serve.clone();
    let mut config = ServeConfig::new(settings, store, token);
    config.host = args.host.unwrap_or(file.host);
    config.port = args.port.unwrap_or(file.port);
    config.token_explicit = source == TokenSource::Explicit;
    config.yolo = common.yolo;
    config.allowed_hosts = args.allowed_hosts;
    config.open_browser = args.open;
    config.doctor = Some(std::sync::Arc::new(crate::doctor::ServeDoctor {
        common: common.clone(),
    }));
    config.tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(herald_serve::TlsFiles { cert, key }),
        _ => None,
    };
    config.max_concurrent_turns = args
        .max_concurrent_turns
        .unwrap_or(file.max_concurrent_turns);
    config.max_open_sessions = args.max_open_sessions.unwrap_or(file.max_open_sessions);
    config.body_limit = args.max_body_bytes.unwrap_or(file.max_body_bytes);
    config.cors_origins = if args.cors_origins.is_empty() {
        file.cors_origins
    } else {
        args.cors_origins
    };

    let stop = CancellationToken::new();
    let _signal = signals::stop_on_signals(stop.clone());
    if !args.no_scheduler {
        crate::cron_cmd::start_scheduler(common, stop.clone(), "herald serve")?;
    }
    let (done, result) = tokio::sync::oneshot::channel();
    // The command-line runtime has one thread; a server of many sessions
    // gets a runtime with one worker per core.
    std::thread::Builder::new()
        .name("herald-serve".into())
        .spawn(move || {
            let outcome = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => {
                    runtime.block_on(herald_serve::serve(config, stop.cancelled_owned()))
                }
                Err(err) => Err(ServeError::Io(err)),
            };
            let _ = done.send(outcome);
        })
        .map_err(|err| CliError::failed(anyhow::anyhow!("cannot start the server: {err}")))?;
    match result.await {
        Ok(Ok(())) => Ok(Exit::Completed),
        Ok(Err(err @ ServeError::Io(_))) => Err(CliError::failed(err)),
        Ok(Err(err)) => Err(CliError::usage(err)),
        Err(_) => Err(CliError::failed(anyhow::anyhow!(
            "the server's thread ended unexpectedly"
        ))),
    }
}
