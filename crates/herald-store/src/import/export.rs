//! `herald sessions export`: a session as JSONL (a header record, then one
//! message per line; what `herald sessions import` reads back unchanged)
//! or as one pretty JSON document for people.

use std::io::Write;

use serde_json::{Value, json};

use crate::error::StoreError;
use crate::sessions::require_session;
use crate::store::Store;

/// The `format` field of both export shapes.
pub(crate) const FORMAT: &str = "herald.session";
/// Version of the pretty JSON document.
const DOCUMENT_VERSION: u64 = 1;
/// Version of the JSONL export (header + message lines).
pub(crate) const JSONL_VERSION: u64 = 2;

impl Store {
    /// A session as one JSON document: `{format, version, session, messages,
    /// usage}`, where each message carries its id, seq and created_at next to
    /// the message fields. Backs `herald sessions export ID --format json`.
    pub fn export_session(&self, session_id: &str) -> Result<Value, StoreError> {
        let session = require_session(&self.conn, &self.path, session_id)?;
        let messages = self.load_messages(session_id)?;
        let usage = self.session_usage(session_id)?;
        Ok(json!({
            "format": FORMAT,
            "version": DOCUMENT_VERSION,
            "session": session,
            "messages": messages,
            "usage": usage,
        }))
    }

    /// Writes a session as JSONL: a header `{format, version, session}`
    /// (the session record with its system prompt), then one message per
    /// line with its `created_at`. [`Store::import_jsonl`] reads it back
    /// into the same session. Backs `herald sessions export ID`.
    pub fn export_jsonl(&self, session_id: &str, out: &mut dyn Write) -> Result<(), StoreError> {
        let session = require_session(&self.conn, &self.path, session_id)?;
        let messages = self.load_messages(session_id)?;
        let io = |source| StoreError::Io {
            action: "write the export of",
            path: session_id.into(),
            source,
        };
        let malformed = |what: String, e: serde_json::Error| StoreError::Malformed {
            what,
            detail: e.to_string(),
        };
        let header = json!({"format": FORMAT, "version": JSONL_VERSION, "session": session});
        writeln!(out, "{header}").map_err(io)?;
        for stored in &messages {
            let mut line = serde_json::to_value(&stored.message)
                .map_err(|e| malformed(format!("message {}", stored.id), e))?;
            if let Value::Object(fields) = &mut line {
                fields.insert("created_at".to_owned(), json!(stored.created_at));
            }
            writeln!(out, "{line}").map_err(io)?;
        }
        out.flush().map_err(io)
    }
}
