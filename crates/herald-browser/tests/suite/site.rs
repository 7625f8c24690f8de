//! A small local web site for the browser tests: a form, dialogs, a link
//! opening a second tab, a long page and a redirect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::Router;
use axum::response::{Html, Redirect};
use axum::routing::get;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const HOME: &str = r#"<!doctype html>
<html><head><title>Test shop</title></head>
<body>
<h1>Test shop</h1>
<form action="/submitted" method="get">
  <label for="name">Name</label> <input id="name" name="name" value="old">
  <label><input type="checkbox" name="gift"> Gift wrap</label>
  <button type="submit">Order</button>
</form>
<button id="alert" onclick="alert('Hello from the page')">Say hello</button>
<button id="confirm" onclick="document.getElementById('answer').textContent = confirm('Really delete?') ? 'confirmed' : 'cancelled'">Delete</button>
<p id="answer">nothing yet</p>
<a href="/second" target="_blank">Open the second page</a>
<script>console.log('shop ready'); console.error('a test error');</script>
</body></html>"#;

const SECOND: &str = r#"<!doctype html>
<html><head><title>Second page</title></head>
<body style="background:#2050c0"><h1>Second page</h1><p>Welcome to the second tab.</p></body></html>"#;

async fn submitted(uri: axum::http::Uri) -> Html<String> {
    let url = url::Url::parse(&format!("http://x{uri}")).unwrap();
    let q: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let name = q
        .iter()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let gift = if q.iter().any(|(k, _)| k == "gift") {
        "with gift wrap"
    } else {
        "without gift wrap"
    };
    Html(format!(
        "<!doctype html><html><head><title>Thanks</title></head><body><h1>Thanks, {name}</h1><p>Ordered {gift}.</p></body></html>"
    ))
}

async fn long() -> Html<String> {
    let items: String = (0..3000)
        .map(|i| format!("<li><a href=\"/item/{i}\">Item number {i}</a></li>"))
        .collect();
    Html(format!(
        "<!doctype html><html><head><title>Long</title></head><body><ul>{items}</ul><button>Last button</button></body></html>"
    ))
}

/// The running site.
pub struct Site {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Requests for `/` so far.
    pub home_hits: Arc<AtomicUsize>,
}

/// Serves the site on 127.0.0.1.
pub async fn serve() -> Site {
    let home_hits = Arc::new(AtomicUsize::new(0));
    let hits = Arc::clone(&home_hits);
    let app = Router::new()
        .route(
            "/",
            get(move || {
                hits.fetch_add(1, Ordering::SeqCst);
                async { Html(HOME) }
            }),
        )
        .route("/second", get(|| async { Html(SECOND) }))
        .route("/submitted", get(submitted))
        .route("/long", get(long))
        .route(
            "/to-metadata",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Site {
        base: format!("http://{addr}"),
        home_hits,
    }
}
