//! Structured output: an item's `output_schema` is a JSON Schema its
//! final answer must satisfy. The answer is parsed as JSON (a fenced
//! `json` code block or the outermost object or array in the text), then
//! validated; a failure is told to the model in one repair turn.

use serde_json::Value;

/// Checks that `schema` is a JSON Schema a validator can be built from.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|err| format!("`output_schema` is not a valid JSON Schema: {err}"))
}

/// The answer parsed and validated: the value, or what is wrong with it
/// in words the model can act on.
pub fn validate(schema: &Value, answer: &str) -> Result<Value, String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|err| format!("`output_schema` is not a valid JSON Schema: {err}"))?;
    let value = extract_json(answer).ok_or_else(|| {
        "the answer contains no JSON value; answer with the JSON alone".to_owned()
    })?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .take(10)
        .map(|err| {
            let at = err.instance_path().to_string();
            if at.is_empty() {
                err.to_string()
            } else {
                format!("at {at}: {err}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(problems.join("; "))
    }
}

/// The user message of the repair turn.
pub fn repair_prompt(schema: &Value, problem: &str) -> String {
    format!(
        "Your final answer does not match the required JSON Schema: {problem}.\n\
         Reply again with only a JSON value that satisfies this schema, nothing else:\n{schema}"
    )
}

/// The JSON in `text`: all of it, a fenced block, or the outermost
/// object or array.
pub fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Some(value);
    }
    if let Some(start) = trimmed.find("```") {
        let body = &trimmed[start + 3..];
        let body = body.strip_prefix("json").unwrap_or(body);
        if let Some(end) = body.find("```")
            && let Ok(value) = serde_json::from_str::<Value>(body[..end].trim())
        {
            return Some(value);
        }
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(start), Some(end)) = (trimmed.find(open), trimmed.rfind(close))
            && start < end
            && let Ok(value) = serde_json::from_str::<Value>(&trimmed[start..=end])
        {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_parsed_then_validated() {
        let schema =
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        assert_eq!(validate(&schema, "{\"n\": 3}"), Ok(json!({"n": 3})));
        assert_eq!(
            validate(&schema, "Here:\n```json\n{\"n\": 4}\n```"),
            Ok(json!({"n": 4}))
        );
        let err = validate(&schema, "{\"n\": \"three\"}").unwrap_err();
        assert!(err.contains("/n"), "{err}");
        assert!(
            validate(&schema, "no json here")
                .unwrap_err()
                .contains("no JSON")
        );
        assert!(check_schema(&json!({"type": "nonsense"})).is_err());
    }
}
