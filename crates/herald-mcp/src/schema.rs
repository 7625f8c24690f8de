//! Input schemas of MCP tools, made acceptable to both wire APIs.
//!
//! OpenAI's Chat Completions and Anthropic's Messages API both want an
//! object schema at the root (`"type": "object"`, with `properties`), and
//! reject a root that is a combinator (`oneOf`, `anyOf`, `allOf`, `not`,
//! `enum`). Servers written against looser clients often omit the type or
//! send `$schema`. What can be fixed is fixed; a schema that describes
//! something other than an object cannot be and the tool is skipped.

use serde_json::{Map, Value};

/// Root keywords the providers reject (or that only make sense for
/// non-objects) and that are dropped.
const ROOT_DROPPED: &[&str] = &["oneOf", "anyOf", "allOf", "not", "enum", "const", "$id"];

/// Normalises a tool's input schema. `Err` says why the tool cannot be
/// offered (the schema describes something other than an object).
pub fn normalize_input_schema(schema: Option<&Value>) -> Result<Value, String> {
    let mut root = match schema {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Bool(true)) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => {
            return Err(format!(
                "its inputSchema is not a JSON Schema object (found {})",
                kind(other)
            ));
        }
    };
    match root.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {}
        Some(other) => {
            return Err(format!(
                "its inputSchema describes {} rather than an object of named arguments",
                other
            ));
        }
    }
    root.insert("type".to_owned(), Value::from("object"));
    for key in ROOT_DROPPED {
        root.remove(*key);
    }
    match root.get("properties") {
        Some(Value::Object(_)) => {}
        _ => {
            root.insert("properties".to_owned(), Value::Object(Map::new()));
        }
    }
    // `required` must list names; drop anything else.
    if let Some(required) = root.get_mut("required") {
        match required {
            Value::Array(items) => {
                items.retain(Value::is_string);
                if items.is_empty() {
                    root.remove("required");
                }
            }
            _ => {
                root.remove("required");
            }
        }
    }
    let mut value = Value::Object(root);
    clean(&mut value);
    Ok(value)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Recursively removes `$schema` (rejected by some providers), and turns
/// boolean subschemas of `properties` into their object forms.
fn clean(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("$schema");
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for prop in props.values_mut() {
                    match prop {
                        Value::Bool(true) => *prop = Value::Object(Map::new()),
                        Value::Bool(false) => {
                            *prop = serde_json::json!({ "not": {} });
                        }
                        _ => {}
                    }
                }
            }
            for v in map.values_mut() {
                clean(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn missing_schema_becomes_an_empty_object() {
        assert_eq!(
            normalize_input_schema(None).unwrap(),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn missing_type_and_properties_are_added_and_schema_keywords_dropped() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "required": ["a", 3],
            "anyOf": [{"required": ["a"]}],
            "properties": {"a": {"type": "string", "$schema": "x"}, "b": true}
        });
        let got = normalize_input_schema(Some(&schema)).unwrap();
        assert_eq!(
            got,
            json!({
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"type": "string"}, "b": {}}
            })
        );
    }

    #[test]
    fn non_object_schemas_are_refused_with_a_reason() {
        let err = normalize_input_schema(Some(&json!({"type": "array"}))).unwrap_err();
        assert!(err.contains("array"), "{err}");
        let err = normalize_input_schema(Some(&json!("oops"))).unwrap_err();
        assert!(err.contains("string"), "{err}");
    }

    #[test]
    fn nullable_object_is_an_object() {
        let got = normalize_input_schema(Some(&json!({"type": ["object", "null"]}))).unwrap();
        assert_eq!(got, json!({"type": "object", "properties": {}}));
    }
}
