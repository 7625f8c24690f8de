//! The browser-facing checks of herald serve: the UI's files and their
//! security headers, the one-time login code and the token login setting
//! an `HttpOnly; SameSite=Strict` cookie, the login limit, the `Host`
//! check against DNS rebinding and the `Origin` check on state-changing
//! requests. Every refusal changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Serve, TOKEN, assert_error, parts};
use herald_testkit::Script;
use serde_json::{Value, json};

/// A client that does not follow redirects and keeps no cookies.
fn raw() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The cookie value a login answer sets, checking its attributes.
fn cookie_of(response: &reqwest::Response) -> String {
    let set = response
        .headers()
        .get("set-cookie")
        .expect("a Set-Cookie header")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(set.contains("HttpOnly"), "{set}");
    assert!(set.contains("SameSite=Strict"), "{set}");
    assert!(set.contains("Path=/"), "{set}");
    set.split(';').next().unwrap().to_owned()
}

async fn session_count(serve: &Serve) -> usize {
    let (status, body) = serve.get_json("/api/sessions?limit=0").await;
    assert_eq!(status, 200, "{body}");
    body["sessions"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_page_and_assets_are_served_with_a_strict_csp() {
    let serve = Serve::start(Script::new()).await;
    let http = raw();
    let page = http.get(format!("{}/", serve.url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "connect-src 'self'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("/assets/app.js"), "{html}");
    for (asset, kind) in [
        ("app.js", "text/javascript"),
        ("style.css", "text/css"),
        ("markdown.js", "text/javascript"),
    ] {
        let r = http
            .get(format!("{}/assets/{asset}", serve.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{asset}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind),
            "{asset}"
        );
    }
    let (status, _, body) = parts(
        http.get(format!("{}/assets/nope.js", serve.url))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_error(status, &body, 404);
    // The API itself still needs a credential.
    let (status, _, body) = parts(
        http.get(format!("{}/api/sessions", serve.url))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_error(status, &body, 401);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_login_code_works_once_and_the_cookie_opens_the_api() {
    let serve = Serve::start(Script::new()).await;
    let http = raw();
    let login = serve.login_url.clone().expect("a login URL");
    assert!(
        login.starts_with(&format!("{}/login?code=", serve.url)),
        "{login}"
    );

    let wrong = http
        .get(format!("{}/login?code=0000", serve.url))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 303);
    assert_eq!(wrong.headers()["location"], "/#/login/code-refused");
    assert!(wrong.headers().get("set-cookie").is_none());

    let first = http.get(&login).send().await.unwrap();
    assert_eq!(first.status(), 303);
    assert_eq!(first.headers()["location"], "/");
    let cookie = cookie_of(&first);
    let again = http.get(&login).send().await.unwrap();
    assert_eq!(again.status(), 303, "a used code is refused");
    assert_eq!(again.headers()["location"], "/#/login/code-refused");
    assert!(again.headers().get("set-cookie").is_none());

    let listed = http
        .get(format!("{}/api/sessions", serve.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    let forged = http
        .get(format!("{}/api/sessions", serve.url))
        .header("cookie", "herald_session=forged")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);

    // Logging out ends the cookie.
    let out = http
        .post(format!("{}/api/logout", serve.url))
        .header("cookie", &cookie)
        .header("origin", &serve.url)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    let after = http
        .get(format!("{}/api/sessions", serve.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 401);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_token_login_is_rate_limited() {
    let serve = Serve::start(Script::new()).await;
    let http = raw();
    let login = |token: &str| {
        http.post(format!("{}/api/login", serve.url))
            .header("origin", &serve.url)
            .json(&json!({"token": token}))
            .send()
    };
    let (status, _, body) = parts(
        http.post(format!("{}/api/login", serve.url))
            .header("origin", &serve.url)
            .body("not json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_error(status, &body, 400);
    let ok = login(TOKEN).await.unwrap();
    assert_eq!(ok.status(), 204);
    cookie_of(&ok);
    for _ in 0..5 {
        let (status, _, body) = parts(login("wrong").await.unwrap()).await;
        assert_error(status, &body, 401);
    }
    let limited = login(TOKEN).await.unwrap();
    assert_eq!(
        limited.status(),
        429,
        "the right token is refused too while limited"
    );
    assert!(limited.headers().get("retry-after").is_some());
    assert!(limited.headers().get("set-cookie").is_none());
    // Programs with the bearer token are not affected.
    let (status, _) = serve.get_json("/api/sessions").await;
    assert_eq!(status, 200);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_forged_host_is_refused_and_changes_nothing() {
    let serve = Serve::start(Script::new()).await;
    let http = raw();
    let before = session_count(&serve).await;
    for host in [
        "evil.example",
        "evil.example:80",
        "localhost.evil.example",
        "10.9.8.7",
    ] {
        let (status, _, body) = parts(
            http.post(format!("{}/api/sessions", serve.url))
                .bearer_auth(TOKEN)
                .header("host", host)
                .json(&json!({}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_error(status, &body, 421);
        assert_eq!(body["error"]["code"], "host_refused", "{host}");
        let page = http
            .get(format!("{}/", serve.url))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 421, "the page too: {host}");
    }
    assert_eq!(session_count(&serve).await, before);
    let port = serve.url.rsplit(':').next().unwrap().to_owned();
    let local = http
        .get(format!("{}/api/sessions", serve.url))
        .bearer_auth(TOKEN)
        .header("host", format!("localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(local.status(), 200, "localhost names a loopback server");
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_allowed_host_names_are_served() {
    let serve = Serve::start_with(Script::new(), |c| {
        c.allowed_hosts = vec!["herald.lan".into()];
    })
    .await;
    let r = raw()
        .get(format!("{}/api/sessions", serve.url))
        .bearer_auth(TOKEN)
        .header("host", "Herald.LAN:8787")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_cross_origin_posts_are_refused_and_change_nothing() {
    let serve = Serve::start(Script::new()).await;
    let http = raw();
    let first = http
        .get(serve.login_url.clone().unwrap())
        .send()
        .await
        .unwrap();
    let cookie = cookie_of(&first);
    let before = session_count(&serve).await;
    let post = |origin: Option<&str>, cookie: Option<&str>, bearer: bool| {
        let mut r = http
            .post(format!("{}/api/sessions", serve.url))
            .json(&json!({}));
        if let Some(origin) = origin {
            r = r.header("origin", origin);
        }
        if let Some(cookie) = cookie {
            r = r.header("cookie", cookie);
        }
        if bearer {
            r = r.bearer_auth(TOKEN);
        }
        r.send()
    };
    for (origin, with_cookie, bearer) in [
        (Some("http://evil.example"), true, false),
        (Some("null"), true, false),
        (None, true, false),
        (Some("http://evil.example"), false, true),
    ] {
        let (status, _, body): (u16, _, Value) = parts(
            post(origin, with_cookie.then_some(cookie.as_str()), bearer)
                .await
                .unwrap(),
        )
        .await;
        assert_error(status, &body, 403);
        assert_eq!(body["error"]["code"], "origin_refused", "{origin:?}");
    }
    // A forged login from another origin is refused as well.
    let (status, _, body) = parts(
        http.post(format!("{}/api/login", serve.url))
            .header("origin", "http://evil.example")
            .json(&json!({"token": TOKEN}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_error(status, &body, 403);
    assert_eq!(session_count(&serve).await, before, "nothing was created");

    let (status, _, body) =
        parts(post(Some(&serve.url), Some(&cookie), false).await.unwrap()).await;
    assert_eq!(status, 201, "the page's own origin with the cookie: {body}");
    let (status, _, body) = parts(post(None, None, true).await.unwrap()).await;
    assert_eq!(
        status, 201,
        "a program with the token and no Origin: {body}"
    );
    assert_eq!(session_count(&serve).await, before + 2);
    serve.stop().await;
}

/// The test certificate for localhost and 127.0.0.1, issued by the test
/// CA in `tests/tls/ca.pem` (whose key was thrown away).
fn tls_files() -> herald_serve::TlsFiles {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
    herald_serve::TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_tls_serves_https_with_a_secure_cookie() {
    let serve = Serve::start_with(Script::new(), |c| c.tls = Some(tls_files())).await;
    let url = serve.url.replacen("http://", "https://", 1);
    let login = serve.login_url.clone().unwrap();
    assert!(login.starts_with(&format!("{url}/login?code=")), "{login}");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let pem =
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls/ca.pem"))
            .unwrap();
    let https = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = https
        .get(format!("{url}/api/sessions"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let first = https.get(&login).send().await.unwrap();
    assert_eq!(first.status(), 303);
    let set = first.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        set.contains("HttpOnly") && set.ends_with("; Secure"),
        "{set}"
    );
    // Plain HTTP to the TLS port gets no answer.
    assert!(
        raw()
            .get(format!("{}/api/sessions", serve.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .is_err()
    );
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_tls_with_bad_files_is_refused_before_binding() {
    let upstream = herald_testkit::ScriptedServer::start(Script::new())
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let settings = common::settings(&upstream, &home, &work);
    let store = herald_core::StoreHandle::open(&home.path().join("state.db")).unwrap();
    let mut config = herald_serve::ServeConfig::new(settings, store, TOKEN.to_owned());
    config.port = 0;
    let mut files = tls_files();
    files.cert = home.path().join("missing.pem");
    config.tls = Some(files);
    let err = herald_serve::Server::bind(config)
        .await
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("missing.pem") && text.contains("--tls-cert"),
        "{text}"
    );
}
