//! Browser logins: the one-time login code printed at start, the session
//! cookies handed out for it (or for the token typed into the login form),
//! and the limit on failed attempts. Programs keep using the bearer token;
//! this only lets a browser, which cannot set that header on a page load or
//! an event stream, prove it knows the token once and then carry a cookie.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::token::same_token;

/// The name of the session cookie.
pub(crate) const COOKIE: &str = "herald_session";
/// How long a browser login lasts.
pub(crate) const COOKIE_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);
/// Failed logins one client address may make per [`FAILURE_WINDOW`].
pub(crate) const MAX_FAILURES: usize = 5;
/// The window [`MAX_FAILURES`] counts in.
pub(crate) const FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// Why a login was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoginRefusal {
    /// The token or code is wrong (or the code was used already).
    Wrong,
    /// Too many wrong attempts from this address lately; retry after this
    /// many seconds.
    TooMany { retry_after_secs: u64 },
}

/// What the server remembers of browser logins (in memory: a restart logs
/// every browser out).
pub(crate) struct WebAuth {
    token: Box<str>,
    /// The one-time login code; `None` once used.
    code: Mutex<Option<String>>,
    /// Cookie values handed out, with when each expires.
    cookies: Mutex<HashMap<String, Instant>>,
    /// Failed attempts per client address, oldest first.
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WebAuth {
    /// Logins for `token`, with a fresh one-time code.
    pub(crate) fn new(token: &str) -> std::io::Result<Self> {
        Ok(Self {
            token: token.into(),
            code: Mutex::new(Some(random_hex(16)?)),
            cookies: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
        })
    }

    /// The one-time login code, while unused.
    pub(crate) fn code(&self) -> Option<String> {
        lock(&self.code).clone()
    }

    /// Whether `given` is the bearer token.
    pub(crate) fn is_token(&self, given: &str) -> bool {
        same_token(given.as_bytes(), self.token.as_bytes())
    }

    /// Whether `value` is a cookie handed out and not expired.
    pub(crate) fn is_cookie(&self, value: &str) -> bool {
        let now = Instant::now();
        let mut cookies = lock(&self.cookies);
        cookies.retain(|_, expires| *expires > now);
        cookies
            .keys()
            .any(|known| same_token(value.as_bytes(), known.as_bytes()))
    }

    /// Forgets cookie `value` (logging out).
    pub(crate) fn forget(&self, value: &str) {
        lock(&self.cookies).remove(value);
    }

    /// Logs in with the bearer token: a new cookie value, or why not.
    pub(crate) fn login_with_token(
        &self,
        client: IpAddr,
        given: &str,
    ) -> Result<String, LoginRefusal> {
        self.attempt(client, |auth| auth.is_token(given.trim()))
    }

    /// Logs in with the one-time code, using it up.
    pub(crate) fn login_with_code(
        &self,
        client: IpAddr,
        given: &str,
    ) -> Result<String, LoginRefusal> {
        self.attempt(client, |auth| {
            let mut code = lock(&auth.code);
            match code.as_deref() {
                Some(expected) if same_token(given.as_bytes(), expected.as_bytes()) => {
                    *code = None;
                    true
                }
                _ => false,
            }
        })
    }

    fn attempt(
        &self,
        client: IpAddr,
        check: impl FnOnce(&Self) -> bool,
    ) -> Result<String, LoginRefusal> {
        let now = Instant::now();
        {
            let mut failures = lock(&self.failures);
            let recent = failures.entry(client).or_default();
            while recent
                .front()
                .is_some_and(|t| now.duration_since(*t) >= FAILURE_WINDOW)
            {
                recent.pop_front();
            }
            if recent.len() >= MAX_FAILURES {
                let oldest = recent.front().copied().unwrap_or(now);
                let wait = FAILURE_WINDOW.saturating_sub(now.duration_since(oldest));
                return Err(LoginRefusal::TooMany {
                    retry_after_secs: wait.as_secs().max(1),
                });
            }
        }
        if !check(self) {
            lock(&self.failures)
                .entry(client)
                .or_default()
                .push_back(now);
            return Err(LoginRefusal::Wrong);
        }
        let value = random_hex(32).map_err(|err| {
            tracing::warn!("cannot make a login cookie: {err}");
            LoginRefusal::Wrong
        })?;
        lock(&self.cookies).insert(value.clone(), now + COOKIE_LIFETIME);
        Ok(value)
    }
}

/// `bytes` random bytes from the kernel, as hex.
fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The value of cookie `name` in a `Cookie` header.
pub(crate) fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then_some(value)
    })
}

/// The `Set-Cookie` header value that logs a browser in (`Secure` over
/// TLS, so it never travels in clear text).
pub(crate) fn set_cookie(value: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        COOKIE_LIFETIME.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` header value that logs a browser out.
pub(crate) fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn the_code_works_once_and_cookies_are_checked() {
        let auth = WebAuth::new("tok").unwrap();
        let code = auth.code().unwrap();
        assert_eq!(code.len(), 32);
        let cookie = auth.login_with_code(HERE, &code).unwrap();
        assert!(auth.is_cookie(&cookie));
        assert!(!auth.is_cookie("nope"));
        assert_eq!(auth.code(), None);
        assert_eq!(
            auth.login_with_code(HERE, &code),
            Err(LoginRefusal::Wrong),
            "a used code is refused"
        );
        auth.forget(&cookie);
        assert!(!auth.is_cookie(&cookie));
    }

    #[test]
    fn failures_are_limited_per_address() {
        let auth = WebAuth::new("tok").unwrap();
        for _ in 0..MAX_FAILURES {
            assert_eq!(auth.login_with_token(HERE, "bad"), Err(LoginRefusal::Wrong));
        }
        assert!(matches!(
            auth.login_with_token(HERE, "tok"),
            Err(LoginRefusal::TooMany { .. })
        ));
        let other = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));
        assert!(auth.login_with_token(other, "tok").is_ok());
    }

    #[test]
    fn cookies_are_found_in_the_header() {
        assert_eq!(
            cookie_value("a=1; herald_session=xyz; b=2", COOKIE),
            Some("xyz")
        );
        assert_eq!(cookie_value("a=1", COOKIE), None);
        assert!(set_cookie("v", false).contains("HttpOnly; SameSite=Strict"));
        assert!(set_cookie("v", true).ends_with("; Secure"));
    }
}
