//! The web tools against local HTTP servers: each search backend's
//! documented JSON, extraction of a real page, a PDF and a page over the
//! budget, and the SSRF guard on literal addresses, redirects and names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use herald_tools::{ToolContext, TypedTool};
use herald_web::fetch::{FetchLimits, Fetcher};
use herald_web::search::{Backend, Searcher};
use herald_web::tools::{WebExtract, WebExtractArgs, WebSearch, WebSearchArgs};
use herald_web::{AddressPolicy, GuardError};
use serde_json::{Value, json};

const BOOK_PAGE: &str = include_str!("fixtures/rust-book-threads.html");

/// What the fake backend saw of the last request.
#[derive(Default, Clone)]
struct Seen {
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body: Option<Value>,
}

type Log = Arc<Mutex<Seen>>;

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    format!("http://{addr}")
}

fn pairs(query: Option<String>) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn record(log: &Log, query: Vec<(String, String)>, headers: &HeaderMap, body: Option<Value>) {
    let headers = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    *log.lock().unwrap() = Seen {
        query,
        headers,
        body,
    };
}

fn ctx() -> ToolContext {
    ToolContext::new(
        herald_tools::AgentState::new(std::env::temp_dir()),
        tokio_util::sync::CancellationToken::new(),
    )
}

fn searcher(backend: Backend, url: String) -> WebSearch {
    WebSearch::new(Searcher::new(
        backend,
        url,
        Some("key-123".to_owned()),
        "TEST_SEARCH_KEY".to_owned(),
        Duration::from_secs(5),
    ))
}

fn args(query: &str) -> WebSearchArgs {
    serde_json::from_value(json!({
        "query": query,
        "limit": 2,
        "include_domains": ["tokio.rs"],
        "time_range": "week",
    }))
    .unwrap()
}

fn header_of(seen: &Seen, name: &str) -> Option<String> {
    seen.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
}

#[tokio::test]
async fn searxng_is_asked_for_json_with_the_filters_and_its_results_are_listed() {
    let log = Log::default();
    let router = Router::new()
        .route(
            "/search",
            get(
                |State(log): State<Log>, RawQuery(q): RawQuery, h: HeaderMap| async move {
                    record(&log, pairs(q), &h, None);
                    axum::Json(json!({"query": "x", "results": [
                        {"url": "https://tokio.rs/blog/2025-tokio-1-48", "title": "Tokio 1.48", "content": "Release notes", "engine": "ddg"},
                        {"url": "https://example.com/tokio", "title": "Elsewhere", "content": "filtered out"},
                        {"url": "https://docs.tokio.rs/a", "title": "Docs", "content": "API"},
                        {"url": "https://tokio.rs/c", "title": "Third", "content": "over the limit"}
                    ]}))
                },
            ),
        )
        .with_state(log.clone());
    let base = serve(router).await;
    let out = searcher(Backend::Searxng, base)
        .run(args("tokio 1.48"), &ctx())
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    assert!(seen.query.contains(&("format".into(), "json".into())));
    assert!(
        seen.query
            .contains(&("q".into(), "tokio 1.48 site:tokio.rs".into()))
    );
    assert!(seen.query.contains(&("time_range".into(), "week".into())));
    assert!(
        out.contains("1. Tokio 1.48\n   https://tokio.rs/blog/2025-tokio-1-48\n   Release notes"),
        "{out}"
    );
    assert!(out.contains("2. Docs"), "{out}");
    assert!(
        !out.contains("Elsewhere") && !out.contains("Third"),
        "{out}"
    );
}

#[tokio::test]
async fn brave_gets_its_token_header_and_freshness() {
    let log = Log::default();
    let router = Router::new()
        .route(
            "/res/v1/web/search",
            get(
                |State(log): State<Log>, RawQuery(q): RawQuery, h: HeaderMap| async move {
                    record(&log, pairs(q), &h, None);
                    axum::Json(json!({"type": "search", "web": {"type": "search", "results": [
                        {"title": "Tokio <strong>1.48</strong>", "url": "https://tokio.rs/x", "description": "What <strong>changed</strong>"}
                    ]}}))
                },
            ),
        )
        .with_state(log.clone());
    let base = serve(router).await;
    let out = searcher(Backend::Brave, format!("{base}/res/v1/web/search"))
        .run(args("tokio"), &ctx())
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    assert_eq!(
        header_of(&seen, "x-subscription-token").as_deref(),
        Some("key-123")
    );
    assert!(seen.query.contains(&("freshness".into(), "pw".into())));
    assert!(seen.query.contains(&("count".into(), "2".into())));
    assert!(out.contains("https://tokio.rs/x\n   What changed"), "{out}");
}

#[tokio::test]
async fn tavily_and_exa_get_json_bodies_with_native_domain_filters() {
    let log = Log::default();
    let router = Router::new()
        .route(
            "/search",
            post(|State(log): State<Log>, h: HeaderMap, axum::Json(body): axum::Json<Value>| async move {
                let exa = body.get("numResults").is_some();
                record(&log, Vec::new(), &h, Some(body));
                if exa {
                    axum::Json(json!({"requestId": "r", "results": [
                        {"id": "1", "title": "Exa hit", "url": "https://tokio.rs/e", "publishedDate": "2026-11-01", "highlights": ["first", "second"]}
                    ]}))
                } else {
                    axum::Json(json!({"query": "q", "results": [
                        {"title": "Tavily hit", "url": "https://tokio.rs/t", "content": "snippet", "score": 0.9}
                    ]}))
                }
            }),
        )
        .with_state(log.clone());
    let base = serve(router).await;
    let out = searcher(Backend::Tavily, format!("{base}/search"))
        .run(args("tokio"), &ctx())
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    assert_eq!(
        header_of(&seen, "authorization").as_deref(),
        Some("Bearer key-123")
    );
    let body = seen.body.unwrap();
    assert_eq!(body["include_domains"], json!(["tokio.rs"]));
    assert_eq!(body["time_range"], "week");
    assert_eq!(body["max_results"], 2);
    assert!(
        out.contains("Tavily hit") && out.contains("snippet"),
        "{out}"
    );

    let out = searcher(Backend::Exa, format!("{base}/search"))
        .run(args("tokio"), &ctx())
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    assert_eq!(header_of(&seen, "x-api-key").as_deref(), Some("key-123"));
    let body = seen.body.unwrap();
    assert_eq!(body["includeDomains"], json!(["tokio.rs"]));
    assert!(
        body["startPublishedDate"]
            .as_str()
            .unwrap()
            .starts_with("20")
    );
    assert!(
        out.contains("Exa hit") && out.contains("first … second"),
        "{out}"
    );
}

#[tokio::test]
async fn rate_limits_bad_keys_and_broken_answers_are_results_the_model_can_act_on() {
    let router = Router::new()
        .route(
            "/limited/search",
            get(|| async {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, "30")],
                    "slow down",
                )
            }),
        )
        .route("/denied/search", get(|| async { StatusCode::UNAUTHORIZED }))
        .route("/broken/search", get(|| async { "<html>not json</html>" }))
        .route(
            "/down/search",
            get(|| async { (StatusCode::BAD_GATEWAY, "upstream down") }),
        );
    let base = serve(router).await;
    let run = |path: &str| {
        let tool = searcher(Backend::Searxng, format!("{base}/{path}"));
        async move { tool.run(args("x"), &ctx()).await.unwrap_err().0 }
    };
    let limited = run("limited").await;
    assert!(
        limited.contains("HTTP 429") && limited.contains("retry after 30 s"),
        "{limited}"
    );
    let denied = run("denied").await;
    assert!(denied.contains("$TEST_SEARCH_KEY"), "{denied}");
    let broken = run("broken").await;
    assert!(broken.contains("not its search JSON"), "{broken}");
    let down = run("down").await;
    assert!(
        down.contains("HTTP 502") && down.contains("upstream down"),
        "{down}"
    );
    let closed = searcher(Backend::Searxng, "http://127.0.0.1:1".to_owned())
        .run(args("x"), &ctx())
        .await
        .unwrap_err()
        .0;
    assert!(closed.contains("could not be reached"), "{closed}");
}

/// A one-page PDF whose text is `lines`.
fn pdf(lines: &[&str]) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut operations = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 14.into()]),
        Operation::new("Td", vec![72.into(), 720.into()]),
        Operation::new("TL", vec![18.into()]),
    ];
    for line in lines {
        operations.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
        operations.push(Operation::new("T*", vec![]));
    }
    operations.push(Operation::new("ET", vec![]));
    let content = Content { operations };
    let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1,
            "Resources" => resources_id, "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A site on 127.0.0.1 with an article, a PDF, a long text and redirects.
async fn site() -> String {
    let pdf_bytes = pdf(&["Quarterly report", "Revenue grew by 12 percent."]);
    let long: String = (0..5000)
        .map(|i| format!("line {i} of the long text\n"))
        .collect();
    let router = Router::new()
        .route(
            "/book/threads.html",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    BOOK_PAGE,
                )
            }),
        )
        .route(
            "/report.pdf",
            get(move || async move { ([(header::CONTENT_TYPE, "application/pdf")], pdf_bytes) }),
        )
        .route("/long.txt", get(move || async move { long }))
        .route(
            "/data.json",
            get(|| async { axum::Json(json!({"version": "1.48.0"})) }),
        )
        .route(
            "/to-metadata",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }),
        )
        .route(
            "/to-loopback",
            get(|| async { Redirect::temporary("http://127.0.0.2:9/secret") }),
        )
        .route(
            "/to-name",
            get(|headers: HeaderMap| async move {
                // The same server, reached by a name that resolves to loopback.
                let host = headers
                    .get(header::HOST)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                let port = host.rsplit(':').next().unwrap().to_owned();
                Redirect::temporary(&format!("http://localhost:{port}/data.json")).into_response()
            }),
        )
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/huge", get(|| async { "x".repeat(3 * 1024 * 1024) }))
        .route(
            "/missing",
            get(|| async { StatusCode::NOT_FOUND.into_response() }),
        )
        .route(
            "/image.png",
            get(|| async {
                Response::builder()
                    .header(header::CONTENT_TYPE, "image/png")
                    .body(axum::body::Body::from(&b"\x89PNG"[..]))
                    .unwrap()
            }),
        );
    serve(router).await
}

/// The fetcher a session with `[web] allow_hosts = ["127.0.0.1"]` has:
/// the test site is reachable, no other private address is.
fn extractor(spill: &std::path::Path) -> WebExtract {
    let policy = AddressPolicy::new(false, &["127.0.0.1".to_owned()]);
    let fetcher = Fetcher::new(
        policy,
        FetchLimits {
            timeout: Duration::from_secs(10),
            max_bytes: 2 * 1024 * 1024,
        },
    );
    WebExtract::new(fetcher, spill.to_path_buf())
}

async fn extract(
    tool: &WebExtract,
    urls: &[String],
    max_chars: Option<usize>,
) -> Result<String, String> {
    let args: WebExtractArgs =
        serde_json::from_value(json!({"urls": urls, "max_chars": max_chars})).unwrap();
    tool.run(args, &ctx()).await.map_err(|e| e.0)
}

#[tokio::test]
async fn a_real_article_becomes_clean_markdown_with_its_links() {
    let base = site().await;
    let spill = tempfile::tempdir().unwrap();
    let tool = extractor(spill.path());
    let out = extract(&tool, &[format!("{base}/book/threads.html")], Some(100_000))
        .await
        .unwrap();
    assert!(out.starts_with("# "), "{}", &out[..200]);
    assert!(
        out.contains("Content: article (main content as markdown)"),
        "{}",
        &out[..300]
    );
    assert!(
        out.contains("Using Threads to Run Code Simultaneously"),
        "{out}"
    );
    // Code blocks and inline code survive as markdown.
    assert!(out.contains("`thread::spawn`"), "{out}");
    assert!(out.contains("```"), "{out}");
    assert!(out.contains("handle.join().unwrap();"), "{out}");
    // Links are kept, as markdown links.
    assert!(
        out.contains("](https://") || out.contains("](http"),
        "{out}"
    );
    // Scripts, the keyboard help and the chapter list are gone.
    assert!(!out.contains("<script"), "{out}");
    assert!(!out.contains("Keyboard shortcuts"), "{out}");
    assert!(
        !out.contains("window.") && !out.contains("function("),
        "{out}"
    );
    // Nothing spilled: it fit.
    assert_eq!(
        std::fs::read_dir(spill.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
}

#[tokio::test]
async fn a_pdf_text_and_json_are_read_and_one_bad_url_does_not_sink_the_others() {
    let base = site().await;
    let spill = tempfile::tempdir().unwrap();
    let tool = extractor(spill.path());
    let out = extract(
        &tool,
        &[
            format!("{base}/report.pdf"),
            format!("{base}/data.json"),
            format!("{base}/missing"),
            format!("{base}/image.png"),
        ],
        None,
    )
    .await
    .unwrap();
    assert!(out.contains("Content: PDF text"), "{out}");
    assert!(
        out.contains("Quarterly report") && out.contains("Revenue grew by 12 percent."),
        "{out}"
    );
    assert!(out.contains(r#"{"version":"1.48.0"}"#), "{out}");
    assert!(out.contains("HTTP 404; the page does not exist"), "{out}");
    assert!(
        out.contains("image/png, which herald cannot turn into text"),
        "{out}"
    );
}

#[tokio::test]
async fn a_page_over_the_budget_shows_head_and_tail_and_is_saved_whole() {
    let base = site().await;
    let spill = tempfile::tempdir().unwrap();
    let tool = extractor(spill.path());
    let out = extract(&tool, &[format!("{base}/long.txt")], Some(2_000))
        .await
        .unwrap();
    assert!(out.contains("line 0 of the long text"), "{out}");
    assert!(out.contains("line 4999 of the long text"), "{out}");
    assert!(!out.contains("line 2500 of the long text"), "{out}");
    assert!(out.chars().count() < 2_600, "{}", out.chars().count());
    let saved: Vec<_> = std::fs::read_dir(spill.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1);
    let path = saved[0].display().to_string();
    assert!(out.contains(&path) && out.contains("read_file"), "{out}");
    let whole = std::fs::read_to_string(&saved[0]).unwrap();
    assert!(whole.contains("line 2500 of the long text"));
    assert_eq!(whole.matches("of the long text").count(), 5000);
}

#[tokio::test]
async fn the_guard_refuses_private_addresses_also_after_redirects_and_lookups() {
    let base = site().await;
    let spill = tempfile::tempdir().unwrap();
    let tool = extractor(spill.path());
    let refused = |out: &str, kind: &str| {
        assert!(out.contains("refused") && out.contains(kind), "{out}");
        assert!(out.contains("allow_private"), "{out}");
    };
    // Literal addresses, before any request.
    let out = extract(
        &tool,
        &["http://169.254.169.254/latest/meta-data/".to_owned()],
        None,
    )
    .await
    .unwrap_err();
    refused(&out, "cloud metadata");
    let out = extract(&tool, &["http://10.0.0.1/".to_owned()], None)
        .await
        .unwrap_err();
    refused(&out, "private-network");
    // A redirect from an allowed host to metadata and to another loopback.
    let out = extract(&tool, &[format!("{base}/to-metadata")], None)
        .await
        .unwrap_err();
    refused(&out, "cloud metadata");
    let out = extract(&tool, &[format!("{base}/to-loopback")], None)
        .await
        .unwrap_err();
    refused(&out, "loopback");
    // A name that resolves to loopback, reached through a redirect.
    let out = extract(&tool, &[format!("{base}/to-name")], None)
        .await
        .unwrap_err();
    refused(&out, "loopback");
    // Limits: redirect loops, bodies over the size limit, schemes.
    let out = extract(&tool, &[format!("{base}/loop")], None)
        .await
        .unwrap_err();
    assert!(out.contains("more than 5 redirects"), "{out}");
    let out = extract(&tool, &[format!("{base}/huge")], None)
        .await
        .unwrap_err();
    assert!(out.contains("larger than 2 MB"), "{out}");
    let out = extract(&tool, &["file:///etc/passwd".to_owned()], None)
        .await
        .unwrap_err();
    assert!(out.contains("only http and https"), "{out}");
    let out = extract(&tool, &[], None).await.unwrap_err();
    assert!(out.contains("give 1 to 5"), "{out}");
    // Allowed private addresses open everything.
    let open = Fetcher::new(
        AddressPolicy::new(true, &[]),
        FetchLimits {
            timeout: Duration::from_secs(5),
            max_bytes: 1 << 20,
        },
    );
    let port = base.rsplit(':').next().unwrap();
    let fetched = open
        .fetch(&format!("http://localhost:{port}/data.json"))
        .await
        .unwrap();
    assert_eq!(fetched.final_url.host_str(), Some("localhost"));
    let closed = Fetcher::new(
        AddressPolicy::default(),
        FetchLimits {
            timeout: Duration::from_secs(5),
            max_bytes: 1 << 20,
        },
    );
    let err = closed
        .fetch(&format!("http://localhost:{port}/data.json"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            herald_web::fetch::FetchError::Guard(GuardError::Private { .. })
        ),
        "{err}"
    );
}
