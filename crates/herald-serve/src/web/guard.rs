//! The checks every request passes before a route sees it: the `Host`
//! header (against DNS rebinding), the `Origin` of state-changing requests
//! (against cross-site requests), the bearer token or a browser's login
//! cookie, and the security headers of every answer (a strict
//! Content-Security-Policy among them).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::auth::{COOKIE, WebAuth, cookie_value};
use crate::error::ApiError;

/// What the page may load and run: only this server's own scripts and
/// styles, no inline script, no plugins, no framing.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The request checks and the login state they use.
pub(crate) struct Guard {
    pub(crate) auth: WebAuth,
    /// The address the server listens on.
    bound: SocketAddr,
    /// Host names besides the bound address that requests may name
    /// (`--allowed-host`), lowercase.
    allowed_hosts: Vec<String>,
    /// Origins besides the server's own that may send state-changing
    /// requests (the CORS origins).
    allowed_origins: Vec<String>,
    /// Served over TLS: cookies get `Secure`.
    pub(crate) secure: bool,
}

/// Who a request proved to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    Bearer,
    Cookie,
}

impl Guard {
    /// Checks for a server bound to `bound`.
    pub(crate) fn new(
        auth: WebAuth,
        bound: SocketAddr,
        allowed_hosts: &[String],
        allowed_origins: &[String],
        secure: bool,
    ) -> Self {
        Self {
            secure,
            auth,
            bound,
            allowed_hosts: allowed_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            allowed_origins: allowed_origins.to_vec(),
        }
    }

    /// Whether a request naming `host` (the `Host` header) may be served:
    /// an IP address this server listens on, `localhost` when it listens
    /// on loopback, or an allowed name. Any other name is how a DNS
    /// rebinding attack reaches a local server from a web page.
    pub(crate) fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        let bound = self.bound.ip();
        if let Ok(ip) = name.trim_matches(['[', ']']).parse::<IpAddr>() {
            return bound.is_unspecified()
                || ip == bound
                || (bound.is_loopback() && ip.is_loopback());
        }
        let local = bound.is_loopback() || bound.is_unspecified();
        (local && (name == "localhost" || name.ends_with(".localhost")))
            || self.allowed_hosts.contains(&name)
    }

    /// Whether a state-changing request from `origin` may be served: the
    /// page's own origin (the scheme and the `Host` it was sent to) or an
    /// allowed one.
    fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        origin == format!("http://{host}")
            || origin == format!("https://{host}")
            || self.allowed_origins.iter().any(|o| o == origin)
    }

    fn credential(&self, headers: &HeaderMap) -> Result<Option<Credential>, ApiError> {
        if let Some(value) = headers.get(header::AUTHORIZATION) {
            let given = value
                .to_str()
                .ok()
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                })
                .map(str::trim);
            return match given {
                Some(given) if self.auth.is_token(given) => Ok(Some(Credential::Bearer)),
                _ => Err(ApiError::unauthorized(
                    "the bearer token is wrong; use the --token given to herald serve, HERALD_SERVE_TOKEN, or the one in $HERALD_HOME/serve.token",
                )),
            };
        }
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|v| cookie_value(v, COOKIE));
        Ok(cookie
            .filter(|c| self.auth.is_cookie(c))
            .map(|_| Credential::Cookie))
    }
}

/// The host part of a `Host` header (`[::1]:8787` → `[::1]`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Routes anyone may load: the page and its files (they hold no data), and
/// the login routes.
fn is_public(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET | Method::HEAD => {
            path == "/"
                || path == "/login"
                || path == "/favicon.ico"
                || path.starts_with("/assets/")
        }
        Method::POST => path == "/api/login" || path == "/api/logout",
        _ => false,
    }
}

fn is_state_changing(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The address a request came from (for the login limit).
pub(crate) fn client_ip(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<crate::tls::ClientAddr>>()
        .map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |c| c.0.0.ip())
}

/// Refuses a request whose `Host` is not this server's (421), a
/// state-changing one from another origin (403), and one without a
/// credential where the route needs it (401).
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()));
    let Some(host) = host.filter(|h| guard.host_allowed(h)) else {
        return refuse(
            &request,
            ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "invalid_request_error",
                "host_refused",
                "this server answers only requests naming its own address (or localhost); to reach it under another name start it with --allowed-host NAME",
            ),
        );
    };
    let credential = match guard.credential(request.headers()) {
        Ok(credential) => credential,
        Err(err) if !is_public(request.method(), request.uri().path()) => {
            return refuse(&request, err);
        }
        Err(_) => None,
    };
    if is_state_changing(request.method()) {
        let origin = request
            .headers()
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or("?"));
        let refused = match origin {
            Some(origin) => !guard.origin_allowed(origin, &host),
            // Browsers send Origin with every such request; a cookie
            // without one did not come from this page.
            None => credential == Some(Credential::Cookie),
        };
        if refused {
            return refuse(
                &request,
                ApiError::new(
                    StatusCode::FORBIDDEN,
                    "invalid_request_error",
                    "origin_refused",
                    "a state-changing request from another origin is refused; send it from this server's own page, with the bearer token, or from an origin given with --cors-origin",
                ),
            );
        }
    }
    if credential.is_none() && !is_public(request.method(), request.uri().path()) {
        let err = ApiError::unauthorized(
            "missing 'Authorization: Bearer <token>' (or a browser login); the token is the --token given to herald serve, HERALD_SERVE_TOKEN, or the one in $HERALD_HOME/serve.token",
        );
        return refuse(&request, err);
    }
    next.run(request).await
}

fn refuse(request: &Request, err: ApiError) -> Response {
    if request.uri().path() == "/mcp" {
        crate::mcp::unauthorized_with(err.status, &err.message)
    } else {
        err.into_response()
    }
}

/// Adds the security headers to every answer.
pub(crate) async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn guard(bound: &str, allowed: &[&str]) -> Guard {
        let allowed: Vec<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
        Guard::new(
            WebAuth::new("t").unwrap(),
            bound.parse().unwrap(),
            &allowed,
            &[],
            false,
        )
    }

    #[test]
    fn hosts_are_the_bound_address_localhost_or_allowed_names() {
        let g = guard("127.0.0.1:8787", &["Herald.Lan"]);
        for ok in [
            "127.0.0.1:8787",
            "127.0.0.1",
            "localhost:8787",
            "app.localhost",
            "herald.lan:8787",
            "[::1]:8787",
        ] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.example:8787",
            "10.0.0.2:8787",
            "localhost.evil.example",
            "",
        ] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
        let public = guard("192.168.1.5:8787", &[]);
        assert!(public.host_allowed("192.168.1.5:8787"));
        assert!(!public.host_allowed("localhost:8787"));
        assert!(!public.host_allowed("127.0.0.1:8787"));
        let any = guard("0.0.0.0:8787", &[]);
        assert!(any.host_allowed("10.1.2.3:8787"));
        assert!(!any.host_allowed("rebound.example:8787"));
    }

    #[test]
    fn origins_are_the_page_or_allowed() {
        let g = Guard::new(
            WebAuth::new("t").unwrap(),
            "127.0.0.1:1".parse().unwrap(),
            &[],
            &["https://app.example".to_owned()],
            false,
        );
        assert!(g.origin_allowed("http://127.0.0.1:1", "127.0.0.1:1"));
        assert!(g.origin_allowed("https://app.example", "127.0.0.1:1"));
        assert!(!g.origin_allowed("http://evil.example", "127.0.0.1:1"));
        assert!(!g.origin_allowed("null", "127.0.0.1:1"));
    }
}
