//! The web tools through the real binary: an agent searches (a fake
//! SearXNG), reads a page as markdown, and is refused private addresses
//! and denied domains; `[web]` mistakes are configuration errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::header;
use axum::routing::get;
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

use crate::common::{Harness, Wire, last, of_type, stderr, tool_results};

const NOTES: &str = r#"<!doctype html><html><head><title>Tokio 1.48 notes</title>
<script>document.write("tracking")</script></head><body>
<nav><a href="/">Home</a> | <a href="/blog">Blog</a></nav>
<article><h1>Tokio 1.48</h1>
<p>This release adds <code>JoinSet::join_all</code> and makes <a href="https://docs.rs/tokio">the docs</a> clearer.
It also stabilises the cooperative budget API, so long-running tasks yield more fairly.</p>
<p>Upgrading is a drop-in change for most users; read the changelog for the few deprecations.
The minimum supported Rust version stays where it was in the previous release.</p>
</article><footer>Copyright the Tokio contributors</footer></body></html>"#;

/// A site on 127.0.0.1 that counts the requests it gets, and a SearXNG
/// whose one result points at it.
async fn site_and_search() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let result_url = format!("{base}/notes.html");
    let router = Router::new()
        .route(
            "/notes.html",
            get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async { ([(header::CONTENT_TYPE, "text/html")], NOTES) }
            }),
        )
        .route(
            "/search",
            get(move || {
                let url = result_url.clone();
                async move {
                    axum::Json(json!({"results": [
                        {"url": url, "title": "Tokio 1.48 notes", "content": "What changed in tokio 1.48"}
                    ]}))
                }
            }),
        );
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (base, hits)
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_searches_reads_a_page_and_is_refused_private_addresses() {
    let (base, hits) = site_and_search().await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let script = Script::new().conversation(
        "what changed in tokio",
        vec![
            Reply::tool("web_search", json!({"query": "tokio 1.48 release notes"})),
            Reply::tool(
                "web_extract",
                json!({"urls": [format!("{base}/notes.html")]}),
            ),
            Reply::tool(
                "web_extract",
                json!({"urls": ["http://169.254.169.254/latest/meta-data/"]}),
            ),
            Reply::tool(
                "web_extract",
                json!({"urls": [format!("http://localhost:{port}/notes.html")]}),
            ),
            Reply::text("JoinSet::join_all is new."),
        ],
    );
    let h = Harness::new(script).await;
    h.config(&format!(
        "[web]\nsearch = \"searxng\"\nsearch_url = \"{base}\"\nallow_hosts = [\"127.0.0.1\"]\n"
    ));
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "what changed in tokio 1.48?")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "JoinSet::join_all is new.");
    let requests = h.requests_of("what changed in tokio");
    let names = tool_names(&requests[0].body);
    assert!(
        names.contains(&"web_search".to_owned()) && names.contains(&"web_extract".to_owned()),
        "{names:?}"
    );
    let results = tool_results(&requests[4].body);
    assert!(
        results[0].contains("1. Tokio 1.48 notes") && results[0].contains("/notes.html"),
        "{}",
        results[0]
    );
    let page = &results[1];
    assert!(page.contains("# Tokio 1.48"), "{page}");
    assert!(page.contains("`JoinSet::join_all`"), "{page}");
    assert!(page.contains("[the docs](https://docs.rs/tokio)"), "{page}");
    assert!(
        !page.contains("tracking") && !page.contains("Copyright"),
        "{page}"
    );
    assert!(
        results[2].contains("refused") && results[2].contains("cloud metadata"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("refused") && results[3].contains("loopback"),
        "{}",
        results[3]
    );
    // The page was fetched once: the refused name never connected.
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let statuses: Vec<&str> = of_type(&events, "tool.completed")
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "error", "error"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_backend_there_is_no_web_search_and_a_denied_domain_is_never_fetched() {
    let (base, hits) = site_and_search().await;
    let script = Script::new().conversation(
        "read the notes",
        vec![
            Reply::tool(
                "web_extract",
                json!({"urls": [format!("{base}/notes.html")]}),
            ),
            Reply::text("denied"),
        ],
    );
    let h = Harness::new(script).await;
    h.config(
        "[web]\nallow_hosts = [\"127.0.0.1\"]\n[permissions]\ndeny = [\"web_extract(domain:127.0.0.1)\"]\n",
    );
    let (output, _) = h.run_json(Wire::OpenAi, &[], "read the notes").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.requests_of("read the notes");
    let names = tool_names(&requests[0].body);
    assert!(
        names.contains(&"web_extract".to_owned()) && !names.contains(&"web_search".to_owned()),
        "{names:?}"
    );
    let results = tool_results(&requests[1].body);
    assert!(
        results[0].contains("denied by the rule `web_extract(domain:127.0.0.1)`"),
        "{}",
        results[0]
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn web_config_mistakes_are_errors_that_say_what_to_write() {
    let h = Harness::new(Script::new()).await;
    for (config, expected) in [
        (
            "[web]\nsearch = \"google\"\n",
            "searxng, brave, tavily or exa",
        ),
        ("[web]\nsearch = \"searxng\"\n", "needs search_url"),
    ] {
        h.config(config);
        let (output, _) = h.run_json(Wire::OpenAi, &[], "anything").await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{config}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
    }
    assert!(h.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_backend_without_its_key_tells_the_model_which_variable_to_set() {
    let script = Script::new().conversation(
        "search it",
        vec![
            Reply::tool("web_search", json!({"query": "x"})),
            Reply::text("no key"),
        ],
    );
    let h = Harness::new(script).await;
    h.config("[web]\nsearch = \"brave\"\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "search it").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&h.requests_of("search it")[1].body);
    assert!(results[0].contains("$BRAVE_API_KEY"), "{}", results[0]);
}
