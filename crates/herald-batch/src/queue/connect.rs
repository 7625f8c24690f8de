//! Connecting to PostgreSQL: a `postgres://` URL (or key=value string)
//! with libpq's TLS settings, through rustls. `sslmode` is `disable`
//! (plain), `prefer` (the default: TLS when the server offers it),
//! `require` (TLS or nothing), `verify-ca` (the server's certificate must
//! chain to a trusted root) or `verify-full` (and name the host).
//! `sslrootcert=FILE` (PEM) is the trusted roots; without it, the
//! system's. As in libpq, `prefer` and `require` encrypt without checking
//! the certificate, unless `sslrootcert` is given (then `require` checks
//! the chain like `verify-ca`).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use tokio_postgres::Client;
use tokio_postgres::config::SslMode;

/// How the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    /// Not at all: encryption only (`prefer`, `require`).
    Nothing,
    /// It chains to a trusted root (`verify-ca`; `require` with a root file).
    Chain,
    /// It chains to a trusted root and names the host (`verify-full`).
    Full,
}

/// The TLS settings taken out of a connection string (tokio-postgres
/// knows only `disable`, `prefer` and `require`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TlsSettings {
    verify: Verify,
    root_cert: Option<PathBuf>,
}

/// Opens a connection and spawns its I/O task.
pub async fn connect(url: &str) -> Result<Client, String> {
    let (rest, tls) = split_tls(url)?;
    let mut config: tokio_postgres::Config = rest.parse().map_err(|err| {
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
            .map_err(|err| describe(&err, &tls))?;
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!("the PostgreSQL connection ended: {err}");
            }
        });
        return Ok(client);
    }
    let connector = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config(&tls)?);
    let (client, connection) = config
        .connect(connector)
        .await
        .map_err(|err| describe(&err, &tls))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!("the PostgreSQL connection ended: {err}");
        }
    });
    Ok(client)
}

fn describe(err: &tokio_postgres::Error, tls: &TlsSettings) -> String {
    let mut message = match std::error::Error::source(err) {
        Some(source) => format!("cannot connect to PostgreSQL: {err}: {source}"),
        None => format!("cannot connect to PostgreSQL: {err}"),
    };
    let lower = message.to_lowercase();
    if lower.contains("certificate") || lower.contains("unknownissuer") {
        match &tls.root_cert {
            Some(path) => message.push_str(&format!(
                "; the server's certificate is not trusted by sslrootcert={}: pass the CA that signed it",
                path.display()
            )),
            None => message.push_str(
                "; the server's certificate is not trusted by this system: pass its CA with sslrootcert=FILE",
            ),
        }
    }
    message
}

/// Takes `sslrootcert` out of the string and turns `verify-ca` and
/// `verify-full` into `require`, returning what remains and the TLS
/// settings.
fn split_tls(url: &str) -> Result<(String, TlsSettings), String> {
    let mut mode: Option<String> = None;
    let mut root_cert: Option<PathBuf> = None;
    let mut take = |key: &str, value: &str| -> Option<String> {
        match key {
            "sslrootcert" => {
                root_cert = Some(PathBuf::from(value));
                None
            }
            "sslmode" => {
                mode = Some(value.to_owned());
                let passed = if value.starts_with("verify-") {
                    "require"
                } else {
                    value
                };
                Some(format!("{key}={passed}"))
            }
            _ => Some(format!("{key}={value}")),
        }
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            None => url.to_owned(),
            Some((base, query)) => {
                let kept: Vec<String> = query
                    .split('&')
                    .filter(|p| !p.is_empty())
                    .filter_map(|pair| {
                        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                        take(k, &percent_decode(v))
                    })
                    .collect();
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        url.split_whitespace()
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                take(k.trim(), v.trim())
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let verify = match mode.as_deref() {
        None | Some("disable" | "prefer" | "allow") => Verify::Nothing,
        Some("require") if root_cert.is_some() => Verify::Chain,
        Some("require") => Verify::Nothing,
        Some("verify-ca") => Verify::Chain,
        Some("verify-full") => Verify::Full,
        Some(other) => {
            return Err(format!(
                "sslmode={other} is not known; use disable, prefer, require, verify-ca or verify-full"
            ));
        }
    };
    Ok((rest, TlsSettings { verify, root_cert }))
}

/// Decodes `%XX` escapes of a URL query value (a path in `sslrootcert`).
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = value.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The trusted roots: the `sslrootcert` file's, or the system's.
fn roots(tls: &TlsSettings) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    match &tls.root_cert {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|err| {
                format!(
                    "cannot read sslrootcert={}: {err}; pass a PEM file of the server's CA",
                    path.display()
                )
            })?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|err| {
                    format!(
                        "sslrootcert={} is not a PEM certificate file: {err}",
                        path.display()
                    )
                })?;
                roots.add(cert).map_err(|err| {
                    format!(
                        "sslrootcert={} holds an unusable certificate: {err}",
                        path.display()
                    )
                })?;
            }
            if roots.is_empty() {
                return Err(format!(
                    "sslrootcert={} has no certificate; pass a PEM file of the server's CA",
                    path.display()
                ));
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    Ok(roots)
}

fn tls_config(tls: &TlsSettings) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot set up TLS: {err}"))?;
    let config = match tls.verify {
        Verify::Full => builder
            .with_root_certificates(roots(tls)?)
            .with_no_client_auth(),
        Verify::Chain => {
            let inner = WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(tls)?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|err| format!("cannot set up TLS: {err}"))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly { inner }))
                .with_no_client_auth()
        }
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly { provider }))
            .with_no_client_auth(),
    };
    Ok(config)
}

/// `verify-ca`: the chain is checked, the host name is not.
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `prefer` / `require` without a root file: encrypted, the certificate
/// taken as it is (libpq's behaviour); the handshake's signatures are
/// still checked.
#[derive(Debug)]
struct EncryptOnly {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn tls_settings_come_out_of_urls_and_key_value_strings() {
        let (rest, tls) = split_tls(
            "postgres://u@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://u@h:5/db?sslmode=require&application_name=x"
        );
        assert_eq!(tls.verify, Verify::Full);
        assert_eq!(tls.root_cert, Some(PathBuf::from("/tmp/ca.pem")));
        let (rest, tls) = split_tls("host=h sslmode=require sslrootcert=/ca.pem").unwrap();
        assert_eq!(rest, "host=h sslmode=require");
        assert_eq!(tls.verify, Verify::Chain);
        let (_, tls) = split_tls("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!(tls.verify, Verify::Nothing);
        let (_, tls) = split_tls("postgres://u@h/db?sslmode=verify-ca").unwrap();
        assert_eq!((tls.verify, tls.root_cert), (Verify::Chain, None));
        let (rest, _) = split_tls("postgres://u@h/db").unwrap();
        assert_eq!(rest, "postgres://u@h/db");
        assert!(
            split_tls("postgres://u@h/db?sslmode=bogus")
                .unwrap_err()
                .contains("verify-full")
        );
    }
}
