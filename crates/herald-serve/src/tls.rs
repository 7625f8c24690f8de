//! `--tls-cert` / `--tls-key`: HTTPS with rustls. Handshakes run on their
//! own tasks, so a client that never finishes one holds up nobody else.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client gets to finish its TLS handshake.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// The certificate chain and key files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// PEM certificate chain, the server's first.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(
        "cannot read the certificate {path}: {err}; give a PEM certificate chain with --tls-cert"
    )]
    Cert {
        path: PathBuf,
        err: rustls::pki_types::pem::Error,
    },
    #[error(
        "the certificate file {0} holds no certificate; give a PEM certificate chain with --tls-cert"
    )]
    NoCert(PathBuf),
    #[error("cannot read the private key {path}: {err}; give a PEM private key with --tls-key")]
    Key {
        path: PathBuf,
        err: rustls::pki_types::pem::Error,
    },
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(rustls::Error),
}

/// The acceptor for `files`.
pub(crate) fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, TlsError> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|err| TlsError::Cert {
            path: files.cert.clone(),
            err,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCert(files.cert.clone()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|err| TlsError::Key {
        path: files.key.clone(),
        err,
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(TlsError::Config)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A listener handing out connections whose TLS handshake is done.
pub(crate) struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    /// Accepts on `tcp` and shakes hands in the background.
    pub(crate) fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::debug!("accept failed: {err}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if tx.is_closed() {
                    return;
                }
                let (acceptor, ready) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_LIMIT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = ready.send((tls, peer)).await;
                        }
                        Ok(Err(err)) => tracing::debug!(%peer, "TLS handshake failed: {err}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self { local, ready })
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accept task only ends once this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The client address of a connection, plain or TLS (what the login limit
/// counts by).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub(crate) SocketAddr);

impl Connected<IncomingStream<'_, TcpListener>> for ClientAddr {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for ClientAddr {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        Self(*stream.remote_addr())
    }
}
