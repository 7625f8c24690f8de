//! Connecting to PostgreSQL: a `postgres://` URL (or key=value string);
//! TLS through rustls with the system's root certificates unless
//! `sslmode=disable` (`prefer`, the default, falls back to plain when the
//! server has no TLS; `require` insists).

use std::sync::Arc;

use tokio_postgres::Client;
use tokio_postgres::config::SslMode;

/// Opens a connection and spawns its I/O task.
pub async fn connect(url: &str) -> Result<Client, String> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|err| {
        format!(
            "not a PostgreSQL connection string ({err}); use postgres://USER:PASSWORD@HOST:PORT/DB"
        )
    })?;
    if config.get_application_name().is_none() {
        config.application_name("herald");
    }
    if config.get_ssl_mode() == SslMode::Disable {
        let (client, connection) = config
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|err| describe(&err))?;
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!("the PostgreSQL connection ended: {err}");
            }
        });
        return Ok(client);
    }
    let tls = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config()?);
    let (client, connection) = config.connect(tls).await.map_err(|err| describe(&err))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!("the PostgreSQL connection ended: {err}");
        }
    });
    Ok(client)
}

fn describe(err: &tokio_postgres::Error) -> String {
    match std::error::Error::source(err) {
        Some(source) => format!("cannot connect to PostgreSQL: {err}: {source}"),
        None => format!("cannot connect to PostgreSQL: {err}"),
    }
}

fn tls_config() -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot set up TLS: {err}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}
