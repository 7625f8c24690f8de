//! `GET /api/openapi.json`: the OpenAPI document of every route.
//!
//! utoipa derives most of it from the handlers' annotations and the request
//! and response types; [`refine`] then states in JSON Schema what utoipa's
//! model has no words for (`const`, `not`, `contains`, `if`/`then`) so that
//! the document accepts exactly the requests the server accepts: the
//! protocol's `Op` (from its own schema), "fork or resume, not both", a
//! chat request's user message, and the bounds of every integer.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use crate::{api, doctor, error, openai};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "herald serve",
        description = "herald sessions over HTTP: OpenAI-compatible endpoints (each request is one agent turn, run with its whole tool loop) and the native session API. Every route needs `Authorization: Bearer <token>`; errors are `{\"error\": {\"message\", \"type\", \"code\"}}`."
    ),
    paths(
        openai::models::list,
        openai::models::get,
        openai::chat::completions,
        openai::responses::create,
        api::sessions::create,
        api::sessions::list,
        api::sessions::search,
        api::sessions::get,
        api::sessions::delete,
        api::messages::page,
        api::usage::report,
        api::settings::view,
        doctor::report,
        api::turns::start,
        api::ops::submit,
        api::events::follow,
        api::control::interrupt,
        api::control::questions,
        api::control::clarify,
        api::control::approvals,
        api::control::approve,
        api::control::elicitations,
        api::control::answer_elicitation,
        api::control::agents,
        api::control::cancel_agent,
        api::control::message_agent,
        api::control::follow_up_agent,
        document,
    ),
    components(schemas(
        error::ErrorBody,
        error::ErrorDetail,
        openai::chat::ChatRequest,
        openai::chat::ChatMessage,
        openai::chat::StreamOptions,
        openai::responses::ResponsesRequest,
        api::sessions::CreateSession,
        api::sessions::Clarify,
        api::sessions::SessionInfo,
        api::sessions::SessionList,
        api::turns::TurnRequest,
        api::turns::TurnAccepted,
        api::turns::TurnResultView,
        api::control::Interrupted,
        api::control::QuestionList,
        api::control::ClarifyAnswer,
        api::control::ApprovalDecision,
        api::control::ApprovalList,
        api::control::ElicitationAnswer,
        api::control::ElicitationList,
        api::control::AgentList,
        api::control::Done,
        api::control::AgentMessage,
        api::control::AgentFollowup,
        api::control::MessageReceipts,
        api::ops::OpAccepted,
        api::messages::MessagePage,
        api::usage::UsageReport,
        api::usage::UsageBy,
        api::settings::SettingsView,
        doctor::DoctorReport,
        doctor::DoctorCheck,
        doctor::CheckStatus,
    )),
    modifiers(&BearerAuth, &CommonResponses),
    tags(
        (name = "openai", description = "OpenAI-compatible endpoints"),
        (name = "sessions", description = "stored and open sessions"),
        (name = "turns", description = "running turns"),
        (name = "events", description = "a session's event stream"),
        (name = "control", description = "interrupt, clarify, approvals, elicitations, subagents"),
        (name = "usage", description = "spend and tokens of the stored requests"),
        (name = "meta", description = "this document, the server's settings and the doctor's checks")
    )
)]
pub(crate) struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The answers every operation may give besides its own, added where an
/// operation does not document them itself: 401 on every authenticated
/// operation, 400 where a path parameter, query or body can be malformed,
/// 413 where there is a body.
struct CommonResponses;

impl CommonResponses {
    const UNAUTHORIZED: &str = "Unauthorized";
    const MALFORMED: &str = "Malformed";
    const TOO_LARGE: &str = "TooLarge";

    fn add(operation: &mut Operation) {
        let responses = &mut operation.responses.responses;
        let mut add = |status: &str, name: &str| {
            responses
                .entry(status.to_owned())
                .or_insert_with(|| RefOr::Ref(Ref::from_response_name(name)));
        };
        if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
            add("401", Self::UNAUTHORIZED);
        }
        let has_input = operation.request_body.is_some()
            || operation.parameters.iter().flatten().any(|p| match p {
                RefOr::T(p) => matches!(p.parameter_in, ParameterIn::Path | ParameterIn::Query),
                RefOr::Ref(_) => true,
            });
        if has_input {
            add("400", Self::MALFORMED);
        }
        if operation.request_body.is_some() {
            add("413", Self::TOO_LARGE);
        }
    }
}

/// A response with an [`error::ErrorBody`].
fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, description) in [
            (
                Self::UNAUTHORIZED,
                "missing or wrong `Authorization: Bearer <token>` (code `invalid_api_key`)",
            ),
            (
                Self::MALFORMED,
                "a malformed request: a path parameter that is not UTF-8, a query parameter of the wrong type, or a body that is not the JSON this operation takes",
            ),
            (
                Self::TOO_LARGE,
                "the body is larger than --max-body-bytes (code `request_too_large`)",
            ),
        ] {
            components
                .responses
                .insert(name.to_owned(), RefOr::T(error_response(description)));
        }
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                Self::add(operation);
            }
        }
    }
}

/// The OpenAPI document of this server.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    responses((status = 200, description = "OpenAPI 3.1 document", body = Object)),
    security(("bearer" = []))
)]
pub(crate) async fn document() -> impl IntoResponse {
    static DOCUMENT: LazyLock<String> = LazyLock::new(|| document_json().to_string());
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
}

/// The document as served: utoipa's, refined.
pub(crate) fn document_json() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_else(|err| {
        json!({"openapi": "3.1.0", "info": {"title": "herald serve", "version": "0", "description": format!("the document could not be built: {err}")}, "paths": {}})
    });
    refine(&mut doc);
    doc
}

/// The characters Rust's `str::trim` removes (Unicode `White_Space`), as
/// inclusive ranges.
const WHITESPACE: [(char, char); 10] = [
    ('\u{9}', '\u{d}'),
    (' ', ' '),
    ('\u{85}', '\u{85}'),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
];

/// The pattern annotations give a string that must not be blank: a
/// character other than whitespace. [`refine`] spells it out as
/// [`not_blank_pattern`], since `\s` means different characters in
/// different regular expression dialects.
const NOT_BLANK_MARK: &str = "\\S";

/// A regular expression matching text with a character `str::trim` keeps:
/// the server's "is it blank" checks, as a `pattern`.
pub(crate) fn not_blank_pattern() -> String {
    let mut class = String::from("[^");
    for (from, to) in WHITESPACE {
        class.push_str(&format!("\\u{:04X}", u32::from(from)));
        if to != from {
            class.push_str(&format!("-\\u{:04X}", u32::from(to)));
        }
    }
    class.push(']');
    class
}

/// Base64 of a PNG, JPEG or GIF (their first bytes), in whole groups of
/// four characters: what the server's image check lets through, as far as
/// a pattern can say it (WebP is accepted too but not described here).
const IMAGE_DATA: &str = r"^(iVBORw0KGg[o-r][A-Za-z0-9+/]|/9j/|R0lGOD[dl]h)([A-Za-z0-9+/]{4})*$";

/// The images of a `user_turn` as the server takes them: at most 8, each
/// at most 5 MB decoded (10 MB in all).
fn attached_images() -> Value {
    json!({
        "type": "array",
        "maxItems": 8,
        "description": "images sent with the text: PNG, JPEG, GIF or WebP, at most 5 MB each and 10 MB in all; refused (400) for a model that takes no images",
        "items": {
            "type": "object",
            "required": ["mime_type", "data"],
            "properties": {
                "mime_type": {"type": "string"},
                "data": {"type": "string", "pattern": IMAGE_DATA, "maxLength": 6_990_508},
            },
        },
    })
}

/// What utoipa cannot say, stated in JSON Schema.
fn refine(doc: &mut Value) {
    let not_blank = json!({"type": "string", "pattern": NOT_BLANK_MARK});
    let schemas = &mut doc["components"]["schemas"];

    // The protocol's operations, from the protocol's own schema (its
    // definitions as `protocol.<name>`); the server refuses blank text in a
    // turn or a steer.
    let mut op = serde_json::to_value(schemars::schema_for!(herald_protocol::Op))
        .unwrap_or_else(|_| json!({"type": "object"}));
    rewrite_refs(&mut op);
    if let Some(o) = op.as_object_mut() {
        o.remove("$schema");
        if let Some(Value::Object(defs)) = o.remove("$defs") {
            for (name, def) in defs {
                schemas[format!("protocol.{name}")] = def;
            }
        }
    }
    for variant in op["oneOf"].as_array_mut().into_iter().flatten() {
        let kind = variant["properties"]["type"]["const"]
            .as_str()
            .map(str::to_owned);
        let kind = kind.as_deref();
        if matches!(kind, Some("user_turn" | "steer")) {
            variant["properties"]["text"] = not_blank.clone();
        }
        if kind == Some("user_turn") {
            variant["properties"]["images"] = attached_images();
        }
    }
    schemas["Op"] = op;
    doc["paths"]["/api/sessions/{id}/ops"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"] = json!({"$ref": "#/components/schemas/Op"});
    let schemas = &mut doc["components"]["schemas"];

    // Fork or resume, not both (null is as good as absent).
    schemas["CreateSession"]["not"] = json!({
        "required": ["fork", "resume"],
        "properties": {"fork": {"type": "string"}, "resume": {"type": "string"}},
    });

    // Message content with text: a string, or text parts (objects whose
    // `type`, when given, is a text type) at least one of which has text.
    let text_content = json!({"anyOf": [
        not_blank,
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"type": {"enum": ["text", "input_text", "output_text"]}},
            },
            "contains": {"type": "object", "required": ["text"], "properties": {"text": not_blank}},
        },
    ]});
    // Every user message has text, and there is one: the last is the input.
    let user = |extra: Value| {
        let mut properties = json!({"role": {"const": "user"}});
        if let (Some(p), Value::Object(extra)) = (properties.as_object_mut(), extra) {
            p.extend(extra);
        }
        json!({"type": "object", "required": ["role"], "properties": properties})
    };
    let user_has_text = json!({"required": ["content"], "properties": {"content": text_content}});
    let chat_message = &mut schemas["ChatMessage"];
    chat_message["properties"]["content"] = json!({"description": "Any JSON for other roles; a user message's is text: a string, or an array of text parts"});
    chat_message["if"] = json!({"properties": {"role": {"const": "user"}}});
    chat_message["then"] = user_has_text.clone();
    let chat = &mut schemas["ChatRequest"]["properties"];
    chat["messages"]["contains"] = user(json!({}));
    chat["metadata"] = json!({"description": "`session_id` (a string) continues a stored session (like `X-Herald-Session`); anything else is ignored"});
    // A Responses input: text, or items whose user messages (`role: user`,
    // `type` absent or `message`) each have text.
    let user_item = user(json!({"type": {"const": "message"}}));
    let responses = &mut schemas["ResponsesRequest"]["properties"];
    responses["input"] = json!({
        "description": "The turn's input: a string, or input items whose last user message is the input",
        "anyOf": [
            not_blank,
            {
                "type": "array",
                "items": {"if": user_item, "then": user_has_text},
                "contains": user_item,
            },
        ],
    });
    responses["metadata"] = json!({"description": "Returned as given; `session_id` (a string) continues a stored session"});

    bound_integers(doc);
    spell_out_not_blank(doc, &not_blank_pattern());
}

/// Points the protocol schema's `#/$defs/X` at `protocol.X` among the
/// document's schemas.
fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref")
                && let Some(name) = target.strip_prefix("#/$defs/")
            {
                *target = format!("#/components/schemas/protocol.{name}");
            }
            map.values_mut().for_each(rewrite_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// Replaces every `pattern` [`NOT_BLANK_MARK`] with `exact`.
fn spell_out_not_blank(value: &mut Value, exact: &str) {
    match value {
        Value::Object(map) => {
            if let Some(pattern) = map.get_mut("pattern")
                && pattern == NOT_BLANK_MARK
            {
                *pattern = Value::String(exact.to_owned());
            }
            map.values_mut().for_each(|v| spell_out_not_blank(v, exact));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| spell_out_not_blank(v, exact)),
        _ => {}
    }
}

/// Gives every integer without an upper bound the largest its Rust type
/// holds (`usize` and `u64` alike on the 64-bit targets herald runs on), so
/// that a valid number is never one the server cannot parse.
fn bound_integers(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let integer = map.get("type").is_some_and(|t| {
                t == "integer"
                    || t.as_array()
                        .is_some_and(|a| a.iter().any(|t| t == "integer"))
            });
            if integer && !map.contains_key("maximum") {
                let unsigned = map.get("minimum").and_then(Value::as_i64) == Some(0);
                let (minimum, maximum) = match map.get("format").and_then(Value::as_str) {
                    Some("uint32") => (json!(0), json!(u32::MAX)),
                    Some("int32") => (json!(i32::MIN), json!(i32::MAX)),
                    _ if unsigned => (json!(0), json!(u64::MAX)),
                    _ => (json!(i64::MIN), json!(i64::MAX)),
                };
                map.entry("minimum").or_insert(minimum);
                map.insert("maximum".to_owned(), maximum);
            }
            map.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every node of `value`, depth first.
    fn nodes(value: &Value) -> Vec<&Value> {
        let mut all = vec![value];
        match value {
            Value::Object(map) => map.values().for_each(|v| all.extend(nodes(v))),
            Value::Array(items) => items.iter().for_each(|v| all.extend(nodes(v))),
            _ => {}
        }
        all
    }

    #[test]
    fn the_document_says_what_utoipa_cannot() {
        let doc = document_json();
        let schemas = &doc["components"]["schemas"];
        // The protocol's operations, their definitions among the schemas.
        let ops = &doc["paths"]["/api/sessions/{id}/ops"]["post"]["requestBody"];
        assert_eq!(
            ops["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Op"
        );
        assert_eq!(schemas["Op"]["oneOf"].as_array().unwrap().len(), 12);
        assert!(schemas["protocol.RewindScope"].is_object());
        // The REST answer's own schema is not overwritten by the protocol's.
        assert_eq!(schemas["ApprovalDecision"]["type"], "object");
        for node in nodes(&doc) {
            if let Some(target) = node.get("$ref").and_then(Value::as_str) {
                let name = target.strip_prefix("#/components/").unwrap();
                let (kind, name) = name.split_once('/').unwrap();
                assert!(doc["components"][kind][name].is_object(), "{target}");
            }
            // Every "not blank" is spelled out, every integer bounded.
            assert_ne!(node.get("pattern"), Some(&json!(NOT_BLANK_MARK)));
            if node.get("type") == Some(&json!("integer")) {
                assert!(node.get("maximum").is_some(), "{node}");
            }
        }
        assert_eq!(
            schemas["TurnRequest"]["properties"]["input"]["pattern"],
            json!(not_blank_pattern())
        );
        assert_eq!(
            schemas["CreateSession"]["not"]["required"],
            json!(["fork", "resume"])
        );
        assert!(schemas["ChatRequest"]["properties"]["messages"]["contains"].is_object());
    }

    #[test]
    fn not_blank_is_what_trim_keeps() {
        let whitespace = |c: char| {
            WHITESPACE
                .iter()
                .any(|&(from, to)| (from..=to).contains(&c))
        };
        for c in (0..=0x10_ffff).filter_map(char::from_u32) {
            assert_eq!(whitespace(c), c.is_whitespace(), "{c:?}");
        }
        assert!(not_blank_pattern().starts_with("[^\\u0009-\\u000D\\u0020"));
    }
}
