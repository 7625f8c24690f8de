//! `{column}` prompt templates: a row's `prompt` names its other fields
//! in braces; `{{` and `}}` are literal braces.

use serde_json::{Map, Value};

/// Fills `template` with the fields of `row`. A name in braces that the
/// row lacks, or a brace left open, is an error naming it.
pub fn render(template: &str, row: &Map<String, Value>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let brace = rest.as_bytes()[pos];
        let after = &rest[pos + 1..];
        if brace == b'}' {
            if let Some(stripped) = after.strip_prefix('}') {
                out.push('}');
                rest = stripped;
                continue;
            }
            return Err("a lone `}` in the prompt; write `}}` for a literal brace".to_owned());
        }
        if let Some(stripped) = after.strip_prefix('{') {
            out.push('{');
            rest = stripped;
            continue;
        }
        let Some(end) = after.find('}') else {
            return Err(
                "a `{` in the prompt is never closed; write `{{` for a literal brace".to_owned(),
            );
        };
        let name = after[..end].trim();
        let value = row.get(name).ok_or_else(|| {
            let mut known: Vec<&str> = row.keys().map(String::as_str).collect();
            known.sort_unstable();
            format!(
                "the prompt uses {{{name}}} but the row has no field `{name}` (its fields: {})",
                known.join(", ")
            )
        })?;
        match value {
            Value::String(text) => out.push_str(text),
            Value::Null => {}
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn fills_fields_and_keeps_literal_braces() {
        let r = row(json!({"file": "a.md", "n": 3}));
        assert_eq!(
            render("Summarise {file} in {n} lines {{json}}", &r).as_deref(),
            Ok("Summarise a.md in 3 lines {json}")
        );
    }

    #[test]
    fn unknown_field_and_open_brace_are_errors() {
        let r = row(json!({"file": "a.md"}));
        let err = render("Read {path}", &r).unwrap_err();
        assert!(err.contains("`path`") && err.contains("file"), "{err}");
        assert!(render("Read {file", &r).is_err());
        assert!(render("Read }", &r).is_err());
    }
}
