//! Reading herald's own export back: the JSONL written by
//! `herald sessions export` (header, then messages) and the pretty JSON
//! document of `--format json`. Stored exactly as written (no repairs), so
//! an export round-trips into the same session.

use herald_protocol::Message;
use serde_json::{Map, Value};

use super::export::JSONL_VERSION;
use super::time::timestamp;
use super::{Entry, Line, LineError, Tally, Transcript};

/// The session fields of a header or document.
fn session(transcript: &mut Transcript, session: &Map<String, Value>) {
    transcript.original_id = session
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    Transcript::first(&mut transcript.title, session.get("title"));
    Transcript::first(&mut transcript.cwd, session.get("cwd"));
    Transcript::first(&mut transcript.model, session.get("model"));
    Transcript::first(&mut transcript.provider, session.get("provider"));
    if let Some(prompt) = session.get("system_prompt").and_then(Value::as_str)
        && !prompt.is_empty()
    {
        transcript.system_prompt.push(prompt.to_owned());
    }
    transcript.started_at = session.get("started_at").and_then(Value::as_i64);
    Transcript::first(&mut transcript.summary, session.get("summary"));
    transcript.verbatim = true;
}

/// One exported message (with its `created_at`).
fn message(value: &Value, line: usize) -> Result<Entry, LineError> {
    let mut message: Message = serde_json::from_value(value.clone())
        .map_err(|e| LineError::new(line, format!("not a herald message: {e}")))?;
    herald_protocol::admit_images(&mut message.images, &mut message.content);
    Ok(Entry::new(message, timestamp(value.get("created_at"))))
}

/// A `herald sessions export` JSONL file.
pub(crate) fn parse(lines: &[Line], _skipped: &mut Tally) -> Result<Transcript, LineError> {
    let mut t = Transcript::default();
    let Some((header, rest)) = lines.split_first() else {
        return Ok(t);
    };
    let version = header
        .value
        .get("version")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if version != JSONL_VERSION {
        return Err(LineError::new(
            header.number,
            format!(
                "herald export version {version} is not one this herald reads \
                 (version {JSONL_VERSION}); export it again with this version"
            ),
        ));
    }
    let fields = header
        .value
        .get("session")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            LineError::new(header.number, "export header without a \"session\" object")
        })?;
    session(&mut t, fields);
    for line in rest {
        t.entries.push(message(&line.value, line.number)?);
    }
    Ok(t)
}

/// A pretty `herald sessions export --format json` document.
pub(crate) fn from_document(doc: &Value) -> Result<Transcript, LineError> {
    let mut t = Transcript::default();
    let fields = doc
        .get("session")
        .and_then(Value::as_object)
        .ok_or_else(|| LineError::new(1, "export document without a \"session\" object"))?;
    session(&mut t, fields);
    let messages = doc
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| LineError::new(1, "export document without a \"messages\" list"))?;
    for (i, value) in messages.iter().enumerate() {
        t.entries.push(
            message(value, 1)
                .map_err(|e| LineError::new(1, format!("message {}: {}", i + 1, e.reason)))?,
        );
    }
    Ok(t)
}
