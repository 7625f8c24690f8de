//! Argument checking against a tool's JSON schema, so a bad call comes back
//! to the model as a short error that lists what the tool expects.

use serde_json::Value;

/// Checks `args` against the top level of `schema`: it must be an object, every
/// required property present, and each given property of the declared type.
/// Returns an error message naming the problem and listing the parameters.
pub fn validate_args(tool: &str, schema: &Value, args: &Value) -> Result<(), String> {
    let Some(obj) = args.as_object() else {
        return Err(format!(
            "arguments for {tool} must be a JSON object. {}",
            describe_parameters(schema)
        ));
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut problems = Vec::new();
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if obj.get(name).is_none_or(Value::is_null) {
                problems.push(format!("missing required parameter '{name}'"));
            }
        }
    }
    if let Some(properties) = properties {
        for (name, value) in obj {
            match properties.get(name) {
                None => problems.push(format!("unknown parameter '{name}'")),
                Some(prop) => {
                    if !value.is_null() && !type_matches(prop, value) {
                        problems.push(format!(
                            "parameter '{name}' must be {}, got {}",
                            type_names(prop).join(" or "),
                            json_type(value)
                        ));
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid arguments for {tool}: {}. {}",
            problems.join("; "),
            describe_parameters(schema)
        ))
    }
}

/// `Expected parameters: command (string, required), timeout (integer)`.
pub fn describe_parameters(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "This tool takes no parameters.".to_owned();
    };
    if properties.is_empty() {
        return "This tool takes no parameters.".to_owned();
    }
    let parts: Vec<String> = properties
        .iter()
        .map(|(name, prop)| {
            let ty = type_names(prop).join("|");
            if required.contains(&name.as_str()) {
                format!("{name} ({ty}, required)")
            } else {
                format!("{name} ({ty})")
            }
        })
        .collect();
    format!("Expected parameters: {}", parts.join(", "))
}

fn type_names(prop: &Value) -> Vec<String> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values.iter().map(Value::to_string).collect();
        return vec![format!("one of {}", names.join("/"))];
    }
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .map(str::to_owned)
            .collect(),
        _ => {
            if let Some(variants) = prop
                .get("anyOf")
                .or_else(|| prop.get("oneOf"))
                .and_then(Value::as_array)
            {
                variants.iter().flat_map(type_names).collect()
            } else {
                vec!["any".to_owned()]
            }
        }
    }
}

fn type_matches(prop: &Value, value: &Value) -> bool {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        return values.contains(value);
    }
    let names = type_names(prop);
    names.iter().any(|t| match t.as_str() {
        "any" => true,
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    })
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": ["integer", "null"]},
                "mode": {"type": "string", "enum": ["a", "b"]}
            },
            "required": ["command"]
        })
    }

    #[test]
    fn accepts_valid_arguments() {
        assert!(validate_args("t", &schema(), &json!({"command": "ls", "timeout": 3})).is_ok());
        assert!(validate_args("t", &schema(), &json!({"command": "ls", "timeout": null})).is_ok());
    }

    #[test]
    fn names_missing_required_parameter_and_lists_expected() {
        let err = validate_args("t", &schema(), &json!({})).unwrap_err();
        assert!(
            err.contains("missing required parameter 'command'"),
            "{err}"
        );
        assert!(err.contains("command (string, required)"), "{err}");
        assert!(err.contains("timeout (integer)"), "{err}");
    }

    #[test]
    fn names_wrong_types_and_unknown_parameters() {
        let err = validate_args("t", &schema(), &json!({"command": 5, "bogus": 1})).unwrap_err();
        assert!(
            err.contains("'command' must be string, got integer"),
            "{err}"
        );
        assert!(err.contains("unknown parameter 'bogus'"), "{err}");
        let err = validate_args("t", &schema(), &json!({"command": "x", "mode": "c"})).unwrap_err();
        assert!(err.contains("'mode' must be one of"), "{err}");
    }

    #[test]
    fn rejects_non_object_arguments() {
        let err = validate_args("t", &schema(), &json!([1])).unwrap_err();
        assert!(err.contains("must be a JSON object"), "{err}");
    }
}
