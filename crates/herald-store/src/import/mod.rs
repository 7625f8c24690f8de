//! Moving transcripts in and out: `herald sessions import` reads the
//! transcripts users already have (Claude Code, Codex, Hermes, OpenAI
//! `{"messages": [...]}` lines, herald's own export) and `herald sessions
//! export` writes a session back out as JSONL that import reads unchanged.
//!
//! Each format has its own reader that turns the file's lines into
//! [`Transcript`]s; [`repair`] then makes a foreign conversation one a
//! provider accepts (every call answered, no orphan results, no empty
//! messages), and everything that could not be mapped or had to be repaired
//! is counted in the [`ImportReport`]. A file is read completely before
//! anything is written, and all its sessions are written in one
//! transaction: a bad line imports nothing.

mod chat;
mod claude;
mod codex;
mod detect;
mod export;
mod herald;
mod repair;
mod time;

use std::collections::BTreeMap;
use std::path::Path;

use crate::write_unit::WriteUnit;
use herald_protocol::Message;
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{StoreError, sql};
use crate::messages::insert_messages;
use crate::records::{NewSession, SessionSource};
use crate::sessions::insert_session;
use crate::store::{Store, new_id};

pub use detect::Format;

/// One message read from a transcript, with when it was written if known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub message: Message,
    pub at: Option<i64>,
}

impl Entry {
    fn new(message: Message, at: Option<i64>) -> Self {
        Self { message, at }
    }
}

/// A conversation read from a file, before it is stored.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    /// The session id a herald export carries (kept when it is free).
    pub original_id: Option<String>,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    /// System prompt parts, joined by blank lines.
    pub system_prompt: Vec<String>,
    pub started_at: Option<i64>,
    /// The stored end-of-session summary (herald's export).
    pub summary: Option<String>,
    pub entries: Vec<Entry>,
    /// herald's own export: stored exactly as written, never repaired.
    pub verbatim: bool,
}

impl Transcript {
    /// Keeps the first value seen for a metadata field.
    fn first(slot: &mut Option<String>, value: Option<&Value>) {
        if slot.is_none()
            && let Some(text) = value.and_then(Value::as_str).map(str::trim)
            && !text.is_empty()
        {
            *slot = Some(text.to_owned());
        }
    }
}

/// Counts by kind (what was skipped, what was repaired), so a report can
/// say "3 file-history-snapshot records" instead of losing them silently.
#[derive(Debug, Default)]
pub(crate) struct Tally(BTreeMap<String, usize>);

impl Tally {
    pub(crate) fn add(&mut self, kind: impl Into<String>) {
        *self.0.entry(kind.into()).or_default() += 1;
    }
}

/// A non-blank line of an import file, parsed.
pub(crate) struct Line {
    /// 1-based line number in the file.
    pub number: usize,
    pub value: Value,
}

/// Whether a malformed record stops an import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImportMode {
    /// Malformed records are left out and reported; the rest is imported.
    #[default]
    Lenient,
    /// The first malformed record stops the import; nothing is imported.
    Strict,
}

/// A record a lenient import left out: its line in the file and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MalformedRecord {
    pub line: usize,
    pub reason: String,
}

/// Most malformed records a lenient import leaves out before it gives up
/// (a file that bad is probably not a transcript).
const MAX_MALFORMED: usize = 1_000;

/// A line that cannot be read: a strict import stops with it.
#[derive(Debug)]
pub(crate) struct LineError {
    pub line: usize,
    pub reason: String,
}

impl LineError {
    pub(crate) fn new(line: usize, reason: impl Into<String>) -> Self {
        Self {
            line,
            reason: reason.into(),
        }
    }
}

/// One session an import created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedSession {
    pub session_id: String,
    pub title: Option<String>,
    pub messages: usize,
    pub cwd: String,
    pub model: String,
    /// Set when a herald export's own id was taken here, so it got a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What an import did: the format it read, the sessions it created, and
/// everything it skipped (unmappable records and blocks, by kind) or
/// repaired (so a provider accepts the conversation), by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    /// The detected format (`claude-code`, `codex`, `codex-legacy`,
    /// `hermes`, `openai-messages`, `chat-jsonl`, `herald`).
    pub format: Format,
    /// The first (usually only) session created.
    pub session_id: String,
    /// Messages stored, over all sessions.
    pub messages: usize,
    pub sessions: Vec<ImportedSession>,
    /// Records and blocks that have no herald equivalent, by kind.
    pub skipped: BTreeMap<String, usize>,
    /// Repairs made so the conversation is valid to resume, by kind.
    pub repaired: BTreeMap<String, usize>,
    /// Records left out because they could not be read (lenient imports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<MalformedRecord>,
}

/// Reads the whole file into parsed lines. The first unreadable line stops
/// a strict read; a lenient one leaves it out and notes it in `malformed`.
fn read_lines(
    file: &Path,
    mode: ImportMode,
    malformed: &mut Vec<MalformedRecord>,
) -> Result<Vec<Line>, StoreError> {
    let bytes = std::fs::read(file).map_err(|source| StoreError::Io {
        action: "read",
        path: file.to_path_buf(),
        source,
    })?;
    let bad = |line: usize, reason: String| StoreError::BadImport {
        path: file.to_path_buf(),
        detail: format!("line {line}: {reason}"),
    };
    let mut lines = Vec::new();
    for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let number = index + 1;
        let read = std::str::from_utf8(raw)
            .map_err(|_| "not valid UTF-8".to_owned())
            .and_then(|text| {
                let text = text.trim_start_matches('\u{feff}').trim();
                if text.is_empty() {
                    return Ok(None);
                }
                serde_json::from_str::<Value>(text)
                    .map(Some)
                    .map_err(|e| format!("not valid JSON ({e})"))
            });
        match read {
            Ok(Some(value)) => lines.push(Line { number, value }),
            Ok(None) => {}
            Err(reason) if mode == ImportMode::Lenient && malformed.len() < MAX_MALFORMED => {
                malformed.push(MalformedRecord {
                    line: number,
                    reason,
                });
            }
            Err(reason) => return Err(bad(number, reason)),
        }
    }
    Ok(lines)
}

/// A file that is one (pretty-printed) JSON document rather than JSONL:
/// herald's `--format json` export, one `{"messages": [...]}` conversation,
/// or an array of chat messages.
fn read_document(file: &Path) -> Option<(Format, Value)> {
    let text = std::fs::read_to_string(file).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    if value.get("format").and_then(Value::as_str) == Some(export::FORMAT) {
        return Some((Format::Herald, value));
    }
    if value.get("messages").is_some_and(Value::is_array) {
        return Some((Format::OpenaiMessages, value));
    }
    let is_chat = value.as_array().is_some_and(|items| {
        items
            .iter()
            .all(|m| m.get("role").is_some_and(Value::is_string))
    });
    is_chat.then_some((Format::ChatJsonl, value))
}

/// A whole-file document, read as its format's lines would be.
fn from_document(
    format: Format,
    doc: Value,
    skipped: &mut Tally,
) -> Result<Vec<Transcript>, LineError> {
    match (format, doc) {
        (Format::Herald, doc) => herald::from_document(&doc).map(|t| vec![t]),
        (Format::ChatJsonl, Value::Array(items)) => {
            let lines: Vec<Line> = items
                .into_iter()
                .map(|value| Line { number: 1, value })
                .collect();
            chat::parse_lines(&lines, skipped).map(|t| vec![t])
        }
        (_, value) => chat::parse_message_lists(&[Line { number: 1, value }], skipped),
    }
}

/// Parses `file` in its detected format (no store access).
fn read_transcripts(
    file: &Path,
    mode: ImportMode,
    skipped: &mut Tally,
    malformed: &mut Vec<MalformedRecord>,
) -> Result<(Format, Vec<Transcript>), StoreError> {
    let bad = |detail: String| StoreError::BadImport {
        path: file.to_path_buf(),
        detail,
    };
    // A pretty-printed JSON document is no JSONL: its lines do not parse on
    // their own.
    let lines = match read_lines(file, mode, malformed) {
        Ok(lines) if !malformed.is_empty() => match read_document(file) {
            Some((format, doc)) => {
                malformed.clear();
                let transcripts = from_document(format, doc, skipped).map_err(|e| bad(e.reason))?;
                return Ok((format, transcripts));
            }
            None => lines,
        },
        Ok(lines) => lines,
        Err(err @ StoreError::BadImport { .. }) => match read_document(file) {
            Some((format, doc)) => {
                let transcripts = from_document(format, doc, skipped).map_err(|e| bad(e.reason))?;
                return Ok((format, transcripts));
            }
            None => return Err(err),
        },
        Err(err) => return Err(err),
    };
    let Some(first) = lines.first() else {
        let detail = match malformed.first() {
            Some(record) => format!(
                "no line of the file could be read (line {}: {})",
                record.line, record.reason
            ),
            None => "the file is empty; nothing to import (expected a JSONL transcript)".to_owned(),
        };
        return Err(bad(detail));
    };
    if lines.len() == 1
        && first.value.is_array()
        && let Some((format, doc)) = read_document(file)
    {
        let transcripts = from_document(format, doc, skipped).map_err(|e| bad(e.reason))?;
        return Ok((format, transcripts));
    }
    let format = detect::detect(&first.value).ok_or_else(|| {
        bad(format!(
            "line {}: unknown transcript format ({}); herald reads Claude Code and Codex \
             session JSONL, Hermes session JSONL, OpenAI {{\"messages\": [...]}} lines, \
             chat-message JSONL (role/content per line) and its own export",
            first.number,
            detect::describe(&first.value)
        ))
    })?;
    let parse = |lines: &[Line], skipped: &mut Tally| match format {
        Format::ClaudeCode => claude::parse(lines, skipped).map(|t| vec![t]),
        Format::Codex | Format::CodexLegacy => codex::parse(lines, skipped).map(|t| vec![t]),
        Format::Hermes | Format::ChatJsonl => chat::parse_lines(lines, skipped).map(|t| vec![t]),
        Format::OpenaiMessages => chat::parse_message_lists(lines, skipped),
        Format::Herald => herald::parse(lines, skipped).map(|t| vec![t]),
    };
    // A lenient import leaves a record that cannot be read out and parses
    // the rest again (the parsers keep state across records).
    let mut lines = lines;
    loop {
        let mut tally = Tally::default();
        match parse(&lines, &mut tally) {
            Ok(transcripts) => {
                skipped.0.extend(tally.0);
                return Ok((format, transcripts));
            }
            Err(e) => {
                let at = lines.iter().position(|l| l.number == e.line);
                match at {
                    Some(at)
                        if mode == ImportMode::Lenient
                            && malformed.len() < MAX_MALFORMED
                            && lines.len() > 1 =>
                    {
                        lines.remove(at);
                        malformed.push(MalformedRecord {
                            line: e.line,
                            reason: e.reason,
                        });
                    }
                    _ => return Err(bad(format!("line {}: {}", e.line, e.reason))),
                }
            }
        }
    }
}

impl Store {
    /// Imports a transcript file as new sessions (`imp_...` ids; a herald
    /// export keeps its own id when it is free here).
    ///
    /// The format is detected from the file's first record (see
    /// [`Format`]). A file that is empty, of an unknown format, or has a
    /// line that cannot be read imports nothing and says which line; a
    /// record or block with no herald equivalent is skipped and counted;
    /// a foreign conversation is repaired so a provider accepts it
    /// (counted too). All sessions of the file are written in one
    /// transaction.
    pub fn import_jsonl(
        &mut self,
        path: impl AsRef<Path>,
        source: SessionSource,
    ) -> Result<ImportReport, StoreError> {
        self.import_transcript(path, source, ImportMode::Strict)
    }

    /// [`Store::import_jsonl`] with a choice of what a malformed record
    /// does: stop the import ([`ImportMode::Strict`]), or be left out and
    /// reported in [`ImportReport::malformed`] ([`ImportMode::Lenient`]).
    pub fn import_transcript(
        &mut self,
        path: impl AsRef<Path>,
        source: SessionSource,
        mode: ImportMode,
    ) -> Result<ImportReport, StoreError> {
        const CTX: &str = "importing a transcript";
        let file = path.as_ref();
        let mut skipped = Tally::default();
        let mut repaired = Tally::default();
        let mut malformed = Vec::new();
        let (format, mut transcripts) = read_transcripts(file, mode, &mut skipped, &mut malformed)?;
        for transcript in &mut transcripts {
            if !transcript.verbatim {
                transcript.entries =
                    repair::repair(std::mem::take(&mut transcript.entries), &mut repaired);
            }
        }
        transcripts.retain(|t| !t.entries.is_empty());
        if transcripts.is_empty() {
            let skipped_text = if skipped.0.is_empty() {
                String::new()
            } else {
                let kinds: Vec<String> = skipped
                    .0
                    .iter()
                    .map(|(k, n)| format!("{n} × {k}"))
                    .collect();
                format!("; skipped: {}", kinds.join(", "))
            };
            return Err(StoreError::BadImport {
                path: file.to_path_buf(),
                detail: format!(
                    "no messages to import in this {} file{skipped_text}",
                    format.as_str()
                ),
            });
        }
        let store_path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(store_path, CTX))?;
        let mut sessions = Vec::new();
        for transcript in transcripts {
            let (id, note) = match &transcript.original_id {
                Some(original) => {
                    let taken: Option<i64> = tx
                        .query_row("SELECT 1 FROM sessions WHERE id = ?1", [original], |r| {
                            r.get(0)
                        })
                        .optional()
                        .map_err(sql(store_path, CTX))?;
                    if taken.is_some() {
                        let id = new_id("imp");
                        let note =
                            format!("session {original} already exists here; imported as {id}");
                        (id, Some(note))
                    } else {
                        (original.clone(), None)
                    }
                }
                None => (new_id("imp"), None),
            };
            let new = NewSession {
                id,
                parent_session_id: None,
                agent_id: None,
                source,
                cwd: transcript.cwd.clone().unwrap_or_default(),
                model: transcript.model.clone().unwrap_or_default(),
                provider: transcript.provider.clone().unwrap_or_default(),
                system_prompt: transcript.system_prompt.join("\n\n"),
            };
            insert_session(&tx, store_path, &new)?;
            let messages: Vec<Message> = transcript
                .entries
                .iter()
                .map(|e| e.message.clone())
                .collect();
            let ids = insert_messages(&tx, store_path, &new.id, &messages)?;
            for (row, entry) in ids.iter().zip(&transcript.entries) {
                if let Some(at) = entry.at {
                    tx.execute(
                        "UPDATE messages SET created_at = ?2 WHERE id = ?1",
                        params![row, at],
                    )
                    .map_err(sql(store_path, CTX))?;
                }
            }
            let started = transcript
                .started_at
                .or_else(|| transcript.entries.iter().find_map(|e| e.at));
            tx.execute(
                "UPDATE sessions SET title = coalesce(?2, title), \
                 started_at = coalesce(?3, started_at), summary = coalesce(?4, summary) \
                 WHERE id = ?1",
                params![new.id, transcript.title, started, transcript.summary],
            )
            .map_err(sql(store_path, CTX))?;
            let title: Option<String> = tx
                .query_row("SELECT title FROM sessions WHERE id = ?1", [&new.id], |r| {
                    r.get(0)
                })
                .map_err(sql(store_path, CTX))?;
            sessions.push(ImportedSession {
                session_id: new.id,
                title,
                messages: ids.len(),
                cwd: new.cwd,
                model: new.model,
                note,
            });
        }
        tx.commit().map_err(sql(store_path, CTX))?;
        Ok(ImportReport {
            format,
            session_id: sessions[0].session_id.clone(),
            messages: sessions.iter().map(|s| s.messages).sum(),
            sessions,
            skipped: skipped.0,
            repaired: repaired.0,
            malformed,
        })
    }

    /// Gives a session that has no system prompt (an imported one, at its
    /// first resume) the one herald built for it, and the working directory
    /// if it has none; a prompt already stored is kept byte for byte.
    /// Returns the session's system prompt after the update.
    pub fn adopt_system_prompt(
        &mut self,
        session_id: &str,
        system_prompt: &str,
        cwd: &str,
    ) -> Result<String, StoreError> {
        const CTX: &str = "storing the system prompt of an imported session";
        let path = &self.path;
        self.conn
            .execute(
                "UPDATE sessions SET system_prompt = ?2 WHERE id = ?1 AND system_prompt = ''",
                params![session_id, system_prompt],
            )
            .map_err(sql(path, CTX))?;
        self.conn
            .execute(
                "UPDATE sessions SET cwd = ?2 WHERE id = ?1 AND cwd = ''",
                params![session_id, cwd],
            )
            .map_err(sql(path, CTX))?;
        self.conn
            .query_row(
                "SELECT system_prompt FROM sessions WHERE id = ?1",
                [session_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql(path, CTX))?
            .ok_or_else(|| StoreError::UnknownSession(session_id.to_owned()))
    }
}
