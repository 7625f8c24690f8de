//! Every rejection is a JSON error body with the status that says what went
//! wrong — axum's own extractor rejections, unknown routes, wrong methods
//! and bodies over the limit included, never `text/plain` — and a rejected
//! request changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Serve, assert_error};
use herald_testkit::Script;
use reqwest::Method;
use serde_json::{Value, json};

/// Status, `code` and the whole answer of a request that must be rejected
/// with a JSON error.
async fn rejected(request: reqwest::RequestBuilder) -> (u16, String, reqwest::header::HeaderMap) {
    let response = request.send().await.unwrap();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let (status, _, body) = common::parts(response).await;
    assert!(
        content_type.starts_with("application/json"),
        "{status} answered {content_type:?}: {body}"
    );
    assert_error(status, &body, status);
    (
        status,
        body["error"]["code"].as_str().unwrap().to_owned(),
        headers,
    )
}

async fn session_count(serve: &Serve) -> usize {
    let (status, list) = serve.get_json("/api/sessions?limit=0").await;
    assert_eq!(status, 200, "{list}");
    list["sessions"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extractor_rejections_are_json_errors_and_change_nothing() {
    let serve = Serve::start_with(Script::new(), |config| config.body_limit = 1024).await;
    let (status, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let turns = format!("/api/sessions/{id}/turns");
    let ops = format!("/api/sessions/{id}/ops");

    let raw = |method: Method, path: &str| {
        serve
            .http
            .request(method, format!("{}{path}", serve.url))
            .bearer_auth(common::TOKEN)
    };
    let json_body = |path: &str, body: &str| {
        raw(Method::POST, path)
            .header("content-type", "application/json")
            .body(body.to_owned())
    };
    let cases: Vec<(&str, reqwest::RequestBuilder, u16, &str)> = vec![
        // JSON bodies.
        ("not JSON", json_body(&turns, "{oops"), 400, "invalid_json"),
        (
            "no content type",
            raw(Method::POST, &turns).body(r#"{"input": "hi"}"#),
            400,
            "invalid_json",
        ),
        (
            "an array for an object",
            json_body(&turns, r#"["hi"]"#),
            400,
            "invalid_json",
        ),
        (
            "a field of the wrong type",
            json_body(&turns, r#"{"input": 5}"#),
            400,
            "invalid_json",
        ),
        (
            "an unknown op",
            json_body(&ops, r#"{"type": "launch"}"#),
            400,
            "invalid_json",
        ),
        (
            "an array for a new session",
            json_body("/api/sessions", "[null, null]"),
            400,
            "invalid_json",
        ),
        (
            "fork and resume",
            json_body("/api/sessions", r#"{"fork": "a", "resume": "b"}"#),
            400,
            "invalid_request",
        ),
        (
            "a chat without a user message",
            json_body(
                "/v1/chat/completions",
                r#"{"messages": [{"role": "system", "content": "x"}]}"#,
            ),
            400,
            "invalid_request",
        ),
        // Bodies over --max-body-bytes, through both body extractors.
        (
            "a large turn",
            json_body(&turns, &json!({"input": "x".repeat(4096)}).to_string()),
            413,
            "request_too_large",
        ),
        (
            "a large new session",
            json_body(
                "/api/sessions",
                &json!({"fork": "x".repeat(4096)}).to_string(),
            ),
            413,
            "request_too_large",
        ),
        // Queries.
        (
            "a limit that is no number",
            raw(Method::GET, "/api/sessions?limit=many"),
            400,
            "invalid_query",
        ),
        (
            "a search without q",
            raw(Method::GET, "/api/sessions/search"),
            400,
            "invalid_query",
        ),
        (
            "a blank search",
            raw(Method::GET, "/api/sessions/search?q=%20"),
            400,
            "invalid_request",
        ),
        (
            "wait that is no boolean",
            json_body(&format!("{turns}?wait=maybe"), r#"{"input": "hi"}"#),
            400,
            "invalid_query",
        ),
        (
            "after that is no number",
            raw(Method::GET, &format!("/api/sessions/{id}/events?after=-1")),
            400,
            "invalid_query",
        ),
        (
            "an empty Last-Event-ID",
            raw(Method::GET, &format!("/api/sessions/{id}/events")).header("last-event-id", ""),
            400,
            "invalid_request",
        ),
        // Paths.
        (
            "a session id that is not UTF-8",
            raw(Method::GET, "/api/sessions/%FF%FE"),
            400,
            "invalid_path",
        ),
        (
            "a model id that is not UTF-8",
            raw(Method::GET, "/v1/models/%C0"),
            400,
            "invalid_path",
        ),
        // Routes and methods.
        (
            "an unknown route",
            raw(Method::GET, "/api/nope"),
            404,
            "not_found",
        ),
        (
            "a wrong method",
            raw(Method::PUT, "/api/sessions"),
            405,
            "method_not_allowed",
        ),
        (
            "a wrong method on a session",
            raw(Method::PATCH, &format!("/api/sessions/{id}")),
            405,
            "method_not_allowed",
        ),
    ];
    for (what, request, status, code) in cases {
        let (got, got_code, headers) = rejected(request).await;
        assert_eq!((got, got_code.as_str()), (status, code), "{what}");
        if status == 405 {
            assert!(headers.contains_key("allow"), "{what}: no Allow header");
        }
    }

    // Nothing changed: one session (the one created above), no turn, no
    // model request.
    assert_eq!(session_count(&serve).await, 1);
    let (_, info) = serve.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(info["message_count"], 0, "{info}");
    assert_eq!(info["busy"], false, "{info}");
    assert_eq!(serve.upstream.request_count(), 0);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_documents_every_rejection() {
    let serve = Serve::start(Script::new()).await;
    let (status, doc) = serve.get_json("/api/openapi.json").await;
    assert_eq!(status, 200);
    let unauthorized = &doc["components"]["responses"]["Unauthorized"];
    assert_eq!(
        unauthorized["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ErrorBody"
    );
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = &operation["responses"];
            let what = format!("{method} {path}");
            assert!(responses.get("401").is_some(), "{what}: no 401");
            let has_input = operation.get("requestBody").is_some()
                || operation["parameters"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|p| p["in"] == "path" || p["in"] == "query"));
            if has_input {
                assert!(responses.get("400").is_some(), "{what}: no 400");
            }
            if operation.get("requestBody").is_some() {
                assert!(responses.get("413").is_some(), "{what}: no 413");
            }
            // Path parameters are the path's, and required; the others
            // (queries, headers) are not in the path.
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                let name = format!("{{{}}}", parameter["name"].as_str().unwrap());
                assert_eq!(
                    parameter["in"] == "path",
                    path.contains(&name),
                    "{what}: {parameter}"
                );
                if parameter["in"] == "path" {
                    assert_eq!(parameter["required"], true, "{what}: {parameter}");
                }
            }
            // Every error answer is an ErrorBody.
            for (code, response) in responses.as_object().unwrap() {
                if code.starts_with('4') || code.starts_with('5') {
                    let response = resolve(&doc, response);
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/ErrorBody",
                        "{what} {code}"
                    );
                }
            }
        }
    }
    serve.stop().await;
}

/// `value`, or what its `$ref` points at.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(target) => target
            .trim_start_matches("#/")
            .split('/')
            .fold(doc, |node, key| &node[key]),
        None => value,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_schema_names_every_field_of_a_session() {
    let serve = Serve::start(Script::new()).await;
    let (_, doc) = serve.get_json("/api/openapi.json").await;
    let (status, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    assert_eq!(status, 201);
    let (_, full) = serve
        .get_json(&format!(
            "/api/sessions/{}",
            created["id"].as_str().unwrap()
        ))
        .await;
    let schemas = &doc["components"]["schemas"];
    let stored = &schemas["StoredSession"];
    let mut documented: Vec<&String> = stored["properties"].as_object().unwrap().keys().collect();
    let state = &schemas["SessionInfo"]["allOf"][1]["properties"];
    documented.extend(state.as_object().unwrap().keys());
    for (key, _) in full.as_object().unwrap() {
        assert!(documented.contains(&key), "{key} is not in the document");
    }
    for key in stored["required"].as_array().unwrap() {
        assert!(created.get(key.as_str().unwrap()).is_some(), "{key}");
    }
    serve.stop().await;
}
