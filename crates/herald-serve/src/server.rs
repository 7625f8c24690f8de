//! Binding, the router with its layers (auth, body limit, CORS), and
//! running until shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Method, header};
use axum::middleware;
use herald_core::{Settings, StoreHandle};
use tokio::net::TcpListener;

use crate::state::AppState;
use crate::web::auth::WebAuth;
use crate::web::guard::Guard;

/// How long open connections (a streaming turn, an event stream) get to
/// finish after the sessions were ended at shutdown.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// Everything `herald serve` needs.
pub struct ServeConfig {
    pub settings: Settings,
    pub store: StoreHandle,
    /// The address to bind (a name or an IP); `127.0.0.1` by default.
    pub host: String,
    /// 0 picks a free port.
    pub port: u16,
    /// The bearer token every request must carry.
    pub token: String,
    /// Whether the token was given (`--token`, `HERALD_SERVE_TOKEN`) rather
    /// than generated: a non-loopback address needs one given.
    pub token_explicit: bool,
    /// Turns running at once across every session; more are refused (429).
    pub max_concurrent_turns: usize,
    /// Largest request body in bytes; larger ones are refused (413).
    pub body_limit: usize,
    /// Sessions kept open at once; beyond it the least recently used idle
    /// one is closed (and reopened when a request names it again).
    pub max_open_sessions: usize,
    /// Browser origins allowed by CORS; empty = CORS off.
    pub cors_origins: Vec<String>,
    /// `--yolo`: calls the permission policy asks about run without an
    /// approval request (the floor and deny rules still hold).
    pub yolo: bool,
    /// Host names besides the bound address (and `localhost` on loopback)
    /// that requests may name in `Host`, for a server reached through a
    /// name; any other name is refused (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// `--open`: hand the login URL to the desktop's browser once serving.
    pub open_browser: bool,
    /// `--tls-cert` / `--tls-key`: serve HTTPS with this certificate.
    pub tls: Option<crate::tls::TlsFiles>,
    /// The doctor's checks for `GET /api/doctor` and the Settings page;
    /// without one that route answers 404.
    pub doctor: Option<Arc<dyn crate::Doctor>>,
}

impl ServeConfig {
    /// Defaults: `127.0.0.1`, port [`DEFAULT_PORT`], 64 concurrent turns,
    /// 256 open sessions, 4 MiB bodies, CORS off.
    pub fn new(settings: Settings, store: StoreHandle, token: String) -> Self {
        Self {
            settings,
            store,
            host: "127.0.0.1".to_owned(),
            port: DEFAULT_PORT,
            token,
            token_explicit: false,
            max_concurrent_turns: DEFAULT_MAX_TURNS,
            body_limit: DEFAULT_BODY_LIMIT,
            max_open_sessions: DEFAULT_MAX_OPEN_SESSIONS,
            cors_origins: Vec::new(),
            yolo: false,
            allowed_hosts: Vec::new(),
            open_browser: false,
            tls: None,
            doctor: None,
        }
    }
}

/// The port `herald serve` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 8787;
/// `max_concurrent_turns` unless told otherwise.
pub const DEFAULT_MAX_TURNS: usize = 64;
/// `max_open_sessions` unless told otherwise.
pub const DEFAULT_MAX_OPEN_SESSIONS: usize = 256;
/// The request body limit unless told otherwise (4 MiB).
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0}, which is reachable from other machines, with a generated token: pass --token (or set HERALD_SERVE_TOKEN) to bind a non-loopback address"
    )]
    PublicWithoutToken(SocketAddr),
    #[error("cannot resolve the address {host}: {err}")]
    Resolve { host: String, err: std::io::Error },
    #[error("cannot listen on {addr}: {err}")]
    Bind {
        addr: SocketAddr,
        err: std::io::Error,
    },
    #[error("invalid CORS origin {0:?}")]
    Cors(String),
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A bound server, not yet serving: [`Server::local_addr`] says where
/// (port 0 resolved).
pub struct Server {
    listener: TcpListener,
    router: Router,
    state: Arc<AppState>,
    addr: SocketAddr,
    /// Ends the `/mcp` streams at shutdown.
    mcp_cancel: tokio_util::sync::CancellationToken,
    /// The request checks, with the browser login state.
    guard: Arc<Guard>,
    /// Set when serving HTTPS.
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Server {
    /// Checks the configuration and binds. A non-loopback address without
    /// an explicit token is refused before anything is bound.
    pub async fn bind(config: ServeConfig) -> Result<Self, ServeError> {
        let addr = resolve(&config.host, config.port).await?;
        if !addr.ip().is_loopback() && !config.token_explicit {
            return Err(ServeError::PublicWithoutToken(addr));
        }
        let cors = cors_layer(&config.cors_origins)?;
        let tls = config.tls.as_ref().map(crate::tls::acceptor).transpose()?;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|err| ServeError::Bind { addr, err })?;
        let addr = listener.local_addr()?;
        let mut state = AppState::new(
            config.settings,
            config.store,
            config.max_concurrent_turns,
            config.max_open_sessions,
            config.yolo,
        );
        state.doctor = config.doctor;
        let state = Arc::new(state);
        let auth = WebAuth::new(&config.token)?;
        let guard = Arc::new(Guard::new(
            auth,
            addr,
            &config.allowed_hosts,
            &config.cors_origins,
            tls.is_some(),
        ));
        let mcp_cancel = tokio_util::sync::CancellationToken::new();
        let mcp = crate::mcp::http_service(
            Arc::clone(&state),
            mcp_cancel.clone(),
            config.body_limit,
            addr.ip().is_loopback(),
        );
        let mut router = crate::routes::router(Arc::clone(&state))
            .route_service("/mcp", mcp)
            .merge(crate::web::router(Arc::clone(&guard)))
            .layer(DefaultBodyLimit::max(config.body_limit))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&guard),
                crate::web::guard::check,
            ));
        if let Some(cors) = cors {
            // Outside the request checks: preflight requests carry no token.
            router = router.layer(cors);
        }
        router = router.layer(middleware::from_fn(crate::web::guard::headers));
        Ok(Self {
            listener,
            router,
            state,
            addr,
            mcp_cancel,
            guard,
            tls,
        })
    }

    /// The URL that logs a browser in once (the one-time code), while the
    /// code is unused.
    pub fn login_url(&self) -> Option<String> {
        self.guard
            .auth
            .code()
            .map(|code| format!("{}/login?code={code}", self.url()))
    }

    /// The server's URL (`https` when it serves TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Where the server listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` resolves; then ends every open session
    /// (interrupting running turns), lets open responses finish (up to 10
    /// s) and returns.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let state = Arc::clone(&self.state);
        let mcp_cancel = self.mcp_cancel.clone();
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let graceful = async move {
            shutdown.await;
            tracing::info!(open = state.open_count(), "herald serve: shutting down");
            let _ = stopping_tx.send(());
            mcp_cancel.cancel();
            // Ending the sessions closes their event streams, so streaming
            // responses end too.
            state.close_all().await;
        };
        let service = self
            .router
            .into_make_service_with_connect_info::<crate::tls::ClientAddr>();
        let serving: std::pin::Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> =
            match self.tls {
                Some(acceptor) => Box::pin(
                    axum::serve(
                        crate::tls::TlsListener::new(self.listener, acceptor)?,
                        service,
                    )
                    .with_graceful_shutdown(graceful)
                    .into_future(),
                ),
                None => Box::pin(
                    axum::serve(self.listener, service)
                        .with_graceful_shutdown(graceful)
                        .into_future(),
                ),
            };
        let state = Arc::clone(&self.state);
        tokio::select! {
            result = serving => result?,
            () = async {
                if stopping_rx.await.is_ok() {
                    tokio::time::sleep(DRAIN_LIMIT).await;
                } else {
                    std::future::pending::<()>().await;
                }
            } => {
                tracing::warn!("herald serve: connections still open after {DRAIN_LIMIT:?}; stopping anyway");
            }
        }
        state.close_all().await;
        Ok(())
    }
}

async fn resolve(host: &str, port: u16) -> Result<SocketAddr, ServeError> {
    let failed = |err| ServeError::Resolve {
        host: host.to_owned(),
        err,
    };
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(failed)?;
    addrs.next().ok_or_else(|| {
        failed(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no address",
        ))
    })
}

fn cors_layer(origins: &[String]) -> Result<Option<tower_http::cors::CorsLayer>, ServeError> {
    if origins.is_empty() {
        return Ok(None);
    }
    let origins = origins
        .iter()
        .map(|o| HeaderValue::from_str(o).map_err(|_| ServeError::Cors(o.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(
        tower_http::cors::CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::HeaderName::from_static("last-event-id"),
                header::HeaderName::from_static("x-herald-session"),
            ])
            .expose_headers([header::HeaderName::from_static("x-herald-session")]),
    ))
}
