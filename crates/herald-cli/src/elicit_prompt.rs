//! Puts an `elicitation.requested` event (an MCP server asking the user
//! for input during a tool call) to the person at the terminal, field by
//! field, and sends the answer back to the session. Flat forms only:
//! string, number, integer and boolean fields, single- and multi-select
//! enums. Another form is declined with a note saying so.

use herald_core::runtime::Session;
use herald_core::{ElicitAction, ElicitAnswer};
use herald_protocol::{Event, EventKind};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufRead, Lines};

/// Invalid answers to one field tolerated before the request is declined.
const ATTEMPTS: usize = 3;

/// The header for one request (without the input lines).
pub(crate) fn render(event: &Event) -> Option<String> {
    let EventKind::ElicitationRequested {
        server, message, ..
    } = &event.kind
    else {
        return None;
    };
    let who = if event.agent_id == "root" {
        String::new()
    } else {
        format!(" (for subagent {})", event.agent_id)
    };
    Some(format!(
        "\n? MCP server `{server}` asks{who}: {}\n",
        message.trim()
    ))
}

/// What one field takes.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of these (value, label).
    Choice(Vec<(Value, String)>),
    /// Any of these.
    Multi(Vec<(Value, String)>),
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    label: String,
    description: Option<String>,
    required: bool,
    default: Option<Value>,
    kind: Kind,
}

/// `(value, label)` pairs of an `enum` (with `enumNames`) or a
/// `oneOf`/`anyOf` of `const`s.
fn choices(schema: &Value) -> Option<Vec<(Value, String)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| plain(v));
                    (v.clone(), label)
                })
                .collect(),
        );
    }
    let options = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    options
        .iter()
        .map(|o| {
            let value = o.get("const")?.clone();
            let label = o
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| plain(&value));
            Some((value, label))
        })
        .collect()
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The fields of a flat form, or why it is not one.
fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut found = Vec::new();
    for (name, prop) in properties {
        let kind = match (prop.get("type").and_then(Value::as_str), choices(prop)) {
            (Some("array"), _) => match prop.get("items").and_then(choices) {
                Some(options) => Kind::Multi(options),
                None => return Err(format!("field `{name}` is a list of free values")),
            },
            (_, Some(options)) => Kind::Choice(options),
            (Some("string"), None) => Kind::Text,
            (Some("integer"), None) => Kind::Integer,
            (Some("number"), None) => Kind::Number,
            (Some("boolean"), None) => Kind::Boolean,
            (other, None) => {
                return Err(format!(
                    "field `{name}` has type {}",
                    other.unwrap_or("(none)")
                ));
            }
        };
        let text = |key: &str| {
            prop.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        found.push(Field {
            name: name.clone(),
            label: text("title").unwrap_or_else(|| name.clone()),
            description: text("description"),
            required: required.contains(&name.as_str()),
            default: prop.get("default").cloned(),
            kind,
        });
    }
    Ok(found)
}

/// The lines that introduce one field.
fn describe(field: &Field) -> String {
    let mut text = format!("  {}", field.label);
    if field.required {
        text.push_str(" (required)");
    }
    if let Some(description) = &field.description {
        text.push_str(&format!(": {description}"));
    }
    let hint = match &field.kind {
        Kind::Text => String::new(),
        Kind::Integer => " [whole number]".to_owned(),
        Kind::Number => " [number]".to_owned(),
        Kind::Boolean => " [y/n]".to_owned(),
        Kind::Choice(_) => " [pick one number]".to_owned(),
        Kind::Multi(_) => " [numbers separated by commas]".to_owned(),
    };
    text.push_str(&hint);
    if let Some(default) = &field.default {
        let shown = match default {
            Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(", "),
            other => plain(other),
        };
        text.push_str(&format!(" (Enter keeps {shown})"));
    }
    text.push('\n');
    if let Kind::Choice(options) | Kind::Multi(options) = &field.kind {
        for (i, (_, label)) in options.iter().enumerate() {
            text.push_str(&format!("    {}. {label}\n", i + 1));
        }
    }
    text
}

fn pick(options: &[(Value, String)], word: &str) -> Result<Value, String> {
    let word = word.trim();
    if let Ok(n) = word.parse::<usize>()
        && let Some((value, _)) = n.checked_sub(1).and_then(|i| options.get(i))
    {
        return Ok(value.clone());
    }
    options
        .iter()
        .find(|(value, label)| plain(value) == word || label.eq_ignore_ascii_case(word))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("pick 1 to {}", options.len()))
}

/// The value typed for `field` (`None`: left empty).
fn parse(field: &Field, line: &str) -> Result<Option<Value>, String> {
    let line = line.trim();
    if line.is_empty() {
        return match (&field.default, field.required) {
            (Some(default), _) => Ok(Some(default.clone())),
            (None, true) => Err("this field is required".to_owned()),
            (None, false) => Ok(None),
        };
    }
    let value = match &field.kind {
        Kind::Text => Value::String(line.to_owned()),
        Kind::Integer => line
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "type a whole number".to_owned())?,
        Kind::Number => line
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "type a number".to_owned())?,
        Kind::Boolean => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer y or n".to_owned()),
        },
        Kind::Choice(options) => pick(options, line)?,
        Kind::Multi(options) => Value::Array(
            line.split(',')
                .filter(|w| !w.trim().is_empty())
                .map(|w| pick(options, w))
                .collect::<Result<_, _>>()?,
        ),
    };
    Ok(Some(value))
}

async fn read_line<R: AsyncBufRead + Unpin>(lines: &mut Lines<R>, prompt: &str) -> Option<String> {
    eprint!("{prompt}");
    lines.next_line().await.ok().flatten()
}

fn send(session: &Session, request_id: &str, answer: ElicitAnswer) -> bool {
    match session.submit(answer.into_op(request_id)) {
        Ok(_) => true,
        Err(err) => {
            eprintln!("({err})");
            let _ = session.submit(ElicitAnswer::decline().into_op(request_id));
            true
        }
    }
}

/// Asks whether to fill in the form, then field by field, and answers
/// request `request_id`. A form the terminal cannot show is declined with
/// a note. False when the input ended (the request is then declined).
pub(crate) async fn answer<R: AsyncBufRead + Unpin>(
    session: &Session,
    request_id: &str,
    schema: &Value,
    lines: &mut Lines<R>,
) -> bool {
    let fields = match fields(schema) {
        Ok(fields) => fields,
        Err(why) => {
            eprintln!(
                "  herald cannot show this form in the terminal ({why}); it is declined. Use \
                 herald serve and answer with the ElicitationAnswer operation for such forms."
            );
            return send(session, request_id, ElicitAnswer::decline());
        }
    };
    let choice = loop {
        let Some(line) = read_line(lines, "fill in [y] · decline [n] · cancel [c]> ").await
        else {
            let _ = session.submit(ElicitAnswer::decline().into_op(request_id));
            return false;
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" | "" => break ElicitAction::Accept,
            "n" | "no" | "decline" => break ElicitAction::Decline,
            "c" | "cancel" => break ElicitAction::Cancel,
            _ => eprintln!("(answer y, n or c)"),
        }
    };
    if choice != ElicitAction::Accept {
        return send(
            session,
            request_id,
            ElicitAnswer {
                action: choice,
                content: None,
            },
        );
    }
    let mut content = Map::new();
    for field in &fields {
        eprint!("{}", describe(field));
        let mut value = None;
        for attempt in 1..=ATTEMPTS {
            let Some(line) = read_line(lines, "  > ").await else {
                let _ = session.submit(ElicitAnswer::decline().into_op(request_id));
                return false;
            };
            match parse(field, &line) {
                Ok(parsed) => {
                    value = Some(parsed);
                    break;
                }
                Err(err) if attempt < ATTEMPTS => eprintln!("  ({err})"),
                Err(err) => {
                    eprintln!("  ({err}; the request is declined)");
                    return send(session, request_id, ElicitAnswer::decline());
                }
            }
        }
        if let Some(Some(value)) = value {
            content.insert(field.name.clone(), value);
        }
    }
    send(
        session,
        request_id,
        ElicitAnswer {
            action: ElicitAction::Accept,
            content: Some(Value::Object(content)),
        },
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn flat_forms_become_fields_and_answers_parse_by_kind() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "age": {"type": "integer", "default": 3},
                "ok": {"type": "boolean"},
                "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cat", "Dog"]},
                "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
                "fish": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Trout"}]}}
            },
            "required": ["name"]
        });
        let fields = fields(&schema).unwrap();
        let by = |name: &str| fields.iter().find(|f| f.name == name).unwrap();
        assert!(by("name").required);
        assert_eq!(parse(by("name"), "").unwrap_err(), "this field is required");
        assert_eq!(parse(by("name"), " Ada ").unwrap(), Some(json!("Ada")));
        assert_eq!(parse(by("age"), "").unwrap(), Some(json!(3)));
        assert!(parse(by("age"), "x").is_err());
        assert_eq!(parse(by("ok"), "y").unwrap(), Some(json!(true)));
        assert_eq!(parse(by("ok"), "").unwrap(), None);
        assert_eq!(parse(by("pet"), "2").unwrap(), Some(json!("p2")));
        assert_eq!(parse(by("pet"), "cat").unwrap(), Some(json!("p1")));
        assert!(parse(by("pet"), "7").is_err());
        assert_eq!(parse(by("hero"), "1").unwrap(), Some(json!("h1")));
        assert_eq!(
            parse(by("fish"), "2, 1").unwrap(),
            Some(json!(["f2", "f1"]))
        );
        assert!(describe(by("pet")).contains("    2. Dog\n"));
    }

    #[test]
    fn nested_forms_are_not_shown() {
        let nested = json!({"properties": {"a": {"type": "object"}}});
        assert_eq!(fields(&nested).unwrap_err(), "field `a` has type object");
    }
}
