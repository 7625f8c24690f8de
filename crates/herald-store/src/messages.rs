//! Appending and reading conversation messages.

use crate::write_unit::WriteUnit;
use herald_protocol::{IMAGE_TOKEN_ESTIMATE, ImageData, Message, Reasoning, Role, ToolCall};
use rusqlite::{Connection, OptionalExtension, Row, Statement, ToSql, params, params_from_iter};

use crate::error::{StoreError, sql};
use crate::records::{MessageWindow, SessionOverview, StoredMessage};
use crate::search::clamp_window;
use crate::sessions::require_session;
use crate::store::{Store, now_ms, to_i64};

/// What [`Store::append_turn`] stores.
#[derive(Debug, Default)]
pub struct TurnStep<'a> {
    /// The request's model, usage and cost (`None` cost: unknown price).
    pub usage: Option<(&'a str, &'a herald_protocol::Usage, Option<f64>)>,
    /// The messages to append.
    pub messages: &'a [Message],
    /// Background agents whose results these messages deliver.
    pub delivered: &'a [String],
    /// Whether the session's kept batch results are now in the messages.
    pub clear_kept: bool,
    /// The task list as JSON, when it changed.
    pub todos: Option<&'a str>,
}

/// Longest derived title, in characters, including the ellipsis.
const TITLE_MAX_CHARS: usize = 80;

/// Columns of `messages` in the order [`RawMessage::from_row`] reads them.
pub(crate) const MESSAGE_COLUMNS: &str = "id, seq, created_at, role, content, tool_calls, tool_call_id, tool_name, is_error, images, \
     reasoning";

/// A `messages` row before its role and tool calls are decoded. Decoding is a
/// separate step so malformed rows become [`StoreError::Malformed`] naming the row.
pub(crate) struct RawMessage {
    id: i64,
    seq: i64,
    created_at: i64,
    role: String,
    content: String,
    tool_calls: Option<String>,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    is_error: bool,
    images: Option<String>,
    reasoning: Option<String>,
}

impl RawMessage {
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<RawMessage> {
        Ok(RawMessage {
            id: row.get(0)?,
            seq: row.get(1)?,
            created_at: row.get(2)?,
            role: row.get(3)?,
            content: row.get(4)?,
            tool_calls: row.get(5)?,
            tool_call_id: row.get(6)?,
            tool_name: row.get(7)?,
            is_error: row.get(8)?,
            images: row.get(9)?,
            reasoning: row.get(10)?,
        })
    }

    pub(crate) fn decode(self) -> Result<StoredMessage, StoreError> {
        let malformed = |detail: String| StoreError::Malformed {
            what: format!("message {}", self.id),
            detail,
        };
        let role = role_from_str(&self.role)
            .ok_or_else(|| malformed(format!("unknown role '{}'", self.role)))?;
        let tool_calls: Vec<ToolCall> = match &self.tool_calls {
            None => Vec::new(),
            Some(json) => serde_json::from_str(json)
                .map_err(|e| malformed(format!("tool_calls is not valid JSON: {e}")))?,
        };
        let images: Vec<ImageData> = match &self.images {
            None => Vec::new(),
            Some(json) => serde_json::from_str(json)
                .map_err(|e| malformed(format!("images is not valid JSON: {e}")))?,
        };
        let reasoning: Vec<Reasoning> = match &self.reasoning {
            None => Vec::new(),
            Some(json) => serde_json::from_str(json)
                .map_err(|e| malformed(format!("reasoning is not valid JSON: {e}")))?,
        };
        Ok(StoredMessage {
            id: self.id,
            seq: self.seq,
            created_at: self.created_at,
            message: Message {
                role,
                content: self.content,
                tool_calls,
                tool_call_id: self.tool_call_id,
                tool_name: self.tool_name,
                is_error: self.is_error,
                images,
                reasoning,
            },
        })
    }
}

/// The text stored in `messages.role`.
pub(crate) fn role_str(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

pub(crate) fn role_from_str(text: &str) -> Option<Role> {
    match text {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" => Some(Role::Tool),
        _ => None,
    }
}

/// A session title from a user message: its first non-blank line, trimmed,
/// cut to 80 characters with a trailing `…`. `None` for blank messages.
pub(crate) fn derive_title(content: &str) -> Option<String> {
    let line = content.lines().map(str::trim).find(|l| !l.is_empty())?;
    if line.chars().count() <= TITLE_MAX_CHARS {
        return Some(line.to_owned());
    }
    let mut cut: String = line.chars().take(TITLE_MAX_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

/// Rough token count (bytes / 4, rounded up, plus a fixed count per image)
/// stored in `messages.tokens`, so compression and reports can size history
/// without a tokenizer.
fn estimate_tokens(message: &Message, tool_calls_json: Option<&str>) -> i64 {
    let bytes = message.content.len() + tool_calls_json.map_or(0, str::len);
    let images = message.images.len() as u64 * IMAGE_TOKEN_ESTIMATE;
    to_i64((bytes as u64).div_ceil(4) + images)
}

/// `messages.images` of a message: JSON, or NULL when it has none.
pub(crate) fn images_json(images: &[ImageData], what: &str) -> Result<Option<String>, StoreError> {
    if images.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(images)
        .map(Some)
        .map_err(|e| StoreError::Malformed {
            what: what.to_owned(),
            detail: e.to_string(),
        })
}

/// Most rows in one multi-row `INSERT`.
///
/// Rows are inserted with as few statements as possible because FTS5 flushes
/// its pending index data to disk at every statement savepoint, and SQLite
/// opens one for each `INSERT` that fires the index trigger. One statement per
/// row would write (and later merge) one tiny index segment per message; one
/// statement per chunk makes bulk inserts several times faster.
const MAX_CHUNK: usize = 128;

/// Chunks up to this size (and full chunks) use the statement cache; other
/// sizes are prepared on the spot so odd batch sizes do not evict hot statements.
const CACHED_CHUNK: usize = 8;
/// `INSERT ... VALUES (...), ... RETURNING id, seq` for `rows` rows.
fn insert_sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, \
         tool_name, is_error, tokens, created_at, images, reasoning) VALUES ",
    );
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str("(?,?,?,?,?,?,?,?,?,?,?,?)");
    }
    sql.push_str(" RETURNING id, seq");
    sql
}

/// One message ready to bind.
struct NewRow<'a> {
    seq: i64,
    role: &'static str,
    calls: Option<String>,
    images: Option<String>,
    reasoning: Option<String>,
    tokens: i64,
    message: &'a Message,
}

/// Inserts `messages` at the end of `session_id` inside `tx`, updating the
/// session's count, activity time and (if still unset) title. Shared by
/// [`Store::append_messages`], import and the benchmark generator.
pub(crate) fn insert_messages(
    tx: &Connection,
    path: &str,
    session_id: &str,
    messages: &[Message],
) -> Result<Vec<i64>, StoreError> {
    insert_messages_at(tx, path, session_id, messages, None)
}

/// [`insert_messages`] at positions starting at `first_seq` (which the
/// caller has made free), or after the last message when `None`.
fn insert_messages_at(
    tx: &Connection,
    path: &str,
    session_id: &str,
    messages: &[Message],
    first_seq: Option<i64>,
) -> Result<Vec<i64>, StoreError> {
    const CTX: &str = "appending messages";
    // One statement for both; and `messages` filtered through the outer
    // row, not the parameter: SQLite compiled `... FROM messages WHERE
    // session_id = ?1` again at every run (see
    // `the_statements_of_a_turn_are_compiled_once`).
    let found: Option<(Option<String>, Option<i64>)> = tx
        .prepare_cached(
            "SELECT s.title, (SELECT max(seq) FROM messages WHERE session_id = s.id) \
             FROM sessions s WHERE s.id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([session_id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(sql(path, CTX))?;
    let Some((title, last_seq)) = found else {
        return Err(StoreError::UnknownSession(session_id.to_owned()));
    };
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let first_seq = first_seq.unwrap_or(last_seq.unwrap_or(0) + 1);
    let now = now_ms();
    let mut rows = Vec::with_capacity(messages.len());
    for (offset, message) in messages.iter().enumerate() {
        let calls = if message.tool_calls.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&message.tool_calls).map_err(|e| StoreError::Malformed {
                    what: format!("tool calls of a message for session '{session_id}'"),
                    detail: e.to_string(),
                })?,
            )
        };
        let images = images_json(
            &message.images,
            &format!("images of a message for session '{session_id}'"),
        )?;
        let reasoning = if message.reasoning.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&message.reasoning).map_err(|e| StoreError::Malformed {
                    what: format!("reasoning of a message for session '{session_id}'"),
                    detail: e.to_string(),
                })?,
            )
        };
        rows.push(NewRow {
            reasoning,
            seq: first_seq + to_i64(offset as u64),
            role: role_str(message.role),
            tokens: estimate_tokens(message, calls.as_deref()),
            calls,
            images,
            message,
        });
    }
    let mut inserted: Vec<(i64, i64)> = Vec::with_capacity(rows.len());
    let mut rest = rows.as_slice();
    while !rest.is_empty() {
        let n = rest.len().min(MAX_CHUNK);
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        let mut args: Vec<&dyn ToSql> = Vec::with_capacity(n * 12);
        for row in chunk {
            args.extend_from_slice(&[
                &session_id as &dyn ToSql,
                &row.seq,
                &row.role,
                &row.message.content,
                &row.calls,
                &row.message.tool_call_id,
                &row.message.tool_name,
                &row.message.is_error,
                &row.tokens,
                &now,
                &row.images,
                &row.reasoning,
            ]);
        }
        let text = insert_sql(n);
        let mut cached;
        let mut fresh;
        let stmt: &mut Statement<'_> = if n <= CACHED_CHUNK || n == MAX_CHUNK {
            cached = tx.prepare_cached(&text).map_err(sql(path, CTX))?;
            &mut cached
        } else {
            fresh = tx.prepare(&text).map_err(sql(path, CTX))?;
            &mut fresh
        };
        let mut returned = stmt.query(params_from_iter(args)).map_err(sql(path, CTX))?;
        while let Some(r) = returned.next().map_err(sql(path, CTX))? {
            inserted.push((
                r.get(1).map_err(sql(path, CTX))?,
                r.get(0).map_err(sql(path, CTX))?,
            ));
        }
    }
    // RETURNING does not promise row order; order by position.
    inserted.sort_unstable();
    let ids: Vec<i64> = inserted.into_iter().map(|(_, id)| id).collect();
    let new_title = if title.is_none() {
        messages
            .iter()
            .filter(|m| m.role == Role::User)
            .find_map(|m| derive_title(&m.content))
    } else {
        None
    };
    tx.prepare_cached(
        "UPDATE sessions SET message_count = message_count + ?2, last_active_at = ?3, \
         title = coalesce(title, ?4) WHERE id = ?1",
    )
    .and_then(|mut s| {
        s.execute(params![
            session_id,
            to_i64(messages.len() as u64),
            now,
            new_title
        ])
    })
    .map_err(sql(path, CTX))?;
    Ok(ids)
}

/// Runs `query` (which selects [`MESSAGE_COLUMNS`]) and decodes every row.
pub(crate) fn query_messages(
    conn: &Connection,
    path: &str,
    query: &str,
    args: impl rusqlite::Params,
) -> Result<Vec<StoredMessage>, StoreError> {
    const CTX: &str = "reading messages";
    let mut stmt = conn.prepare_cached(query).map_err(sql(path, CTX))?;
    let raw = stmt
        .query_map(args, RawMessage::from_row)
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(sql(path, CTX))?;
    raw.into_iter().map(RawMessage::decode).collect()
}

/// The message with this id if it belongs to `session_id`.
pub(crate) fn message_in_session(
    conn: &Connection,
    path: &str,
    session_id: &str,
    message_id: i64,
) -> Result<StoredMessage, StoreError> {
    query_messages(
        conn,
        path,
        &format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?1 AND session_id = ?2"),
        params![message_id, session_id],
    )?
    .into_iter()
    .next()
    .ok_or_else(|| StoreError::MessageNotInSession {
        session_id: session_id.to_owned(),
        message_id,
    })
}

/// Up to `n` messages right before and right after position `seq`.
pub(crate) fn neighbours(
    conn: &Connection,
    path: &str,
    session_id: &str,
    seq: i64,
    n: usize,
) -> Result<(Vec<StoredMessage>, Vec<StoredMessage>), StoreError> {
    let n = to_i64(n as u64);
    let mut before = query_messages(
        conn,
        path,
        &format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq < ?2 \
             ORDER BY seq DESC LIMIT ?3"
        ),
        params![session_id, seq, n],
    )?;
    before.reverse();
    let after = query_messages(
        conn,
        path,
        &format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq > ?2 \
             ORDER BY seq LIMIT ?3"
        ),
        params![session_id, seq, n],
    )?;
    Ok((before, after))
}

impl Store {
    /// Appends `messages` to the end of a session in one transaction and
    /// returns their ids. Positions (`seq`) continue from the last stored
    /// message, starting at 1. The first user message with text also sets the
    /// session title if none is set yet.
    ///
    /// The transaction is committed before this returns: a message whose
    /// append returned `Ok` survives the process being killed.
    pub fn append_messages(
        &mut self,
        session_id: &str,
        messages: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        self.append_messages_delivering(session_id, messages, &[], false)
    }

    /// Appends `messages` and, in the same transaction, marks the background
    /// agents in `delivered` as delivered (their results are in these
    /// messages) and, with `clear_kept`, forgets the session's kept batch
    /// results (see [`Store::save_pending_result`]): the messages now hold
    /// them. A crash can never leave a result marked delivered that the
    /// conversation lacks.
    pub fn append_messages_delivering(
        &mut self,
        session_id: &str,
        messages: &[Message],
        delivered: &[String],
        clear_kept: bool,
    ) -> Result<Vec<i64>, StoreError> {
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, "appending messages"))?;
        let ids = insert_messages(&tx, path, session_id, messages)?;
        crate::agents::mark_delivered(&tx, path, delivered)?;
        if clear_kept {
            crate::pending::clear(&tx, path, session_id)?;
        }
        tx.commit().map_err(sql(path, "committing messages"))?;
        Ok(ids)
    }

    /// Stores one step of the agent loop in one transaction: the model
    /// request's usage, the new messages (with [`Store::append_messages_delivering`]'s
    /// bookkeeping) and the task list. One commit instead of one per part:
    /// each commit writes its changed pages to the WAL again, the session
    /// row among them. The usage is bookkeeping: when it cannot be stored,
    /// its part alone is rolled back and the messages are still stored.
    pub fn append_turn(
        &mut self,
        session_id: &str,
        step: &TurnStep<'_>,
    ) -> Result<Vec<i64>, StoreError> {
        const CTX: &str = "storing the turn";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        if let Some((model, usage, cost)) = step.usage {
            // As with `record_usage` alone: a failure costs the usage row
            // (its savepoint rolls back when dropped), never the messages.
            let part = tx.part().map_err(sql(path, CTX))?;
            if crate::usage::record_usage_in(&part, path, session_id, model, usage, cost).is_ok() {
                part.commit().map_err(sql(path, CTX))?;
            }
        }
        let ids = if step.messages.is_empty() {
            Vec::new()
        } else {
            let ids = insert_messages(&tx, path, session_id, step.messages)?;
            crate::agents::mark_delivered(&tx, path, step.delivered)?;
            if step.clear_kept {
                crate::pending::clear(&tx, path, session_id)?;
            }
            ids
        };
        if let Some(items) = step.todos {
            crate::todos::save_todos_in(&tx, path, session_id, items)?;
        }
        tx.commit().map_err(sql(path, CTX))?;
        Ok(ids)
    }

    /// Inserts `messages` right after the stored message at position
    /// `after_seq` (0: before the first), moving later messages down, in one
    /// transaction. For repairs of a stored conversation (a result added
    /// after a call in the middle), so the stored order is the order replayed.
    pub fn insert_messages_after(
        &mut self,
        session_id: &str,
        after_seq: i64,
        messages: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        const CTX: &str = "inserting messages";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        let shift = to_i64(messages.len() as u64);
        // Two steps through negative positions, so no intermediate state
        // breaks UNIQUE(session_id, seq).
        tx.prepare_cached(
            "UPDATE messages SET seq = -(seq + ?3) WHERE session_id = ?1 AND seq > ?2",
        )
        .and_then(|mut s| s.execute(params![session_id, after_seq, shift]))
        .map_err(sql(path, CTX))?;
        tx.prepare_cached("UPDATE messages SET seq = -seq WHERE session_id = ?1 AND seq < 0")
            .and_then(|mut s| s.execute(params![session_id]))
            .map_err(sql(path, CTX))?;
        let ids = insert_messages_at(&tx, path, session_id, messages, Some(after_seq + 1))?;
        tx.commit().map_err(sql(path, CTX))?;
        Ok(ids)
    }

    /// The whole conversation of a session in order, for `--resume` and export.
    pub fn load_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        require_session(&self.conn, &self.path, session_id)?;
        query_messages(
            &self.conn,
            &self.path,
            &format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 ORDER BY seq"),
            [session_id],
        )
    }

    /// Read mode of `session_search`: the first `n` and last `n` messages of a
    /// session (`n` clamped to 1..=20), so the model sees how it began and ended.
    pub fn session_overview(
        &self,
        session_id: &str,
        n: usize,
    ) -> Result<SessionOverview, StoreError> {
        let session = require_session(&self.conn, &self.path, session_id)?;
        let n = clamp_window(n);
        let limit = to_i64(n as u64);
        let head = query_messages(
            &self.conn,
            &self.path,
            &format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 ORDER BY seq LIMIT ?2"
            ),
            params![session_id, limit],
        )?;
        let last_head_seq = head.last().map_or(i64::MIN, |m| m.seq);
        let mut tail = query_messages(
            &self.conn,
            &self.path,
            &format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq > ?2 \
                 ORDER BY seq DESC LIMIT ?3"
            ),
            params![session_id, last_head_seq, limit],
        )?;
        tail.reverse();
        let shown = (head.len() + tail.len()) as u64;
        let omitted = session.message_count.saturating_sub(shown);
        Ok(SessionOverview {
            session,
            head,
            tail,
            omitted,
        })
    }

    /// Scroll mode of `session_search`: the message `around_message_id` with up
    /// to `window` messages (clamped to 1..=20) on each side.
    pub fn message_window(
        &self,
        session_id: &str,
        around_message_id: i64,
        window: usize,
    ) -> Result<MessageWindow, StoreError> {
        let session = require_session(&self.conn, &self.path, session_id)?;
        let message = message_in_session(&self.conn, &self.path, session_id, around_message_id)?;
        let (before, after) = neighbours(
            &self.conn,
            &self.path,
            session_id,
            message.seq,
            clamp_window(window),
        )?;
        Ok(MessageWindow {
            session,
            before,
            message,
            after,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::NewSession;
    use herald_protocol::Usage;

    fn store_with_session() -> Store {
        let mut store = Store::open_in_memory().unwrap();
        store
            .create_session(&NewSession::for_test("ses_t"))
            .unwrap();
        store
    }

    fn usage(input: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: 7,
            ..Usage::default()
        }
    }

    #[test]
    fn a_turn_stores_usage_messages_and_todos_together() {
        let mut store = store_with_session();
        let messages = [Message::user("hello"), Message::assistant("hi", Vec::new())];
        let used = usage(100);
        let ids = store
            .append_turn(
                "ses_t",
                &TurnStep {
                    usage: Some(("m", &used, Some(0.25))),
                    messages: &messages,
                    todos: Some("[]"),
                    ..TurnStep::default()
                },
            )
            .unwrap();
        assert_eq!(ids.len(), 2);
        let session = store.get_session("ses_t").unwrap().unwrap();
        assert_eq!((session.input_tokens, session.message_count), (100, 2));
        assert_eq!(store.session_usage("ses_t").unwrap().len(), 1);
        assert_eq!(store.load_todos("ses_t").unwrap().as_deref(), Some("[]"));
    }

    /// Every statement the connection holds that SQLite compiled again more
    /// than once since it was prepared, with how often (FTS5's own
    /// statements may be compiled again once, after the first write).
    fn reprepared(store: &Store) -> Vec<(String, i32)> {
        let mut found = Vec::new();
        // SAFETY: the handle is the live connection's; sqlite3_next_stmt,
        // sqlite3_sql and sqlite3_stmt_status only read statements it owns,
        // and nothing else uses the connection meanwhile.
        unsafe {
            let db = store.conn.handle();
            let mut stmt = rusqlite::ffi::sqlite3_next_stmt(db, std::ptr::null_mut());
            while !stmt.is_null() {
                let count = rusqlite::ffi::sqlite3_stmt_status(
                    stmt,
                    rusqlite::ffi::SQLITE_STMTSTATUS_REPREPARE,
                    0,
                );
                if count > 1 {
                    let text = std::ffi::CStr::from_ptr(rusqlite::ffi::sqlite3_sql(stmt));
                    found.push((text.to_string_lossy().into_owned(), count));
                }
                stmt = rusqlite::ffi::sqlite3_next_stmt(db, stmt);
            }
        }
        found
    }

    /// A cached statement SQLite has to compile again at every run (as
    /// `SELECT max(seq) FROM messages WHERE session_id = ?1` did: 3% of a
    /// turn's CPU) defeats the cache; the statements of a turn must not.
    #[test]
    fn the_statements_of_a_turn_are_compiled_once() {
        let mut store = store_with_session();
        let used = usage(10);
        for turn in 0..4 {
            let call = ToolCall {
                id: format!("c{turn}"),
                name: "read_file".into(),
                arguments: "{}".into(),
            };
            let result = Message::tool_result(&call, "text", false);
            let messages = [Message::assistant("", vec![call]), result];
            store
                .append_turn(
                    "ses_t",
                    &TurnStep {
                        usage: Some(("m", &used, Some(0.1))),
                        messages: &messages,
                        todos: Some("[]"),
                        ..TurnStep::default()
                    },
                )
                .unwrap();
            // What else a turn stores: its permission decision and events.
            store
                .record_decisions(&[crate::NewDecision {
                    session_id: "ses_t".into(),
                    agent_id: "root".into(),
                    tool: "read_file".into(),
                    arguments_digest: "d".into(),
                    summary: "s".into(),
                    decision: crate::Ruling::Allow,
                    rule: None,
                    reason: "r".into(),
                    decided_by: crate::DecidedBy::Policy,
                }])
                .unwrap();
            let event = crate::NewEvent {
                agent_id: "root".into(),
                kind: "tool.completed".into(),
                payload: "{}".into(),
                seq: Some(turn),
            };
            store
                .record_events_of_sessions("ses_t", &[("ses_t", event)])
                .unwrap();
        }
        assert_eq!(reprepared(&store), Vec::<(String, i32)>::new());
    }

    #[test]
    fn a_usage_row_that_cannot_be_stored_costs_only_itself() {
        let mut store = store_with_session();
        store
            .conn
            .execute_batch(
                "CREATE TRIGGER refuse_usage BEFORE INSERT ON usage \
                 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
            .unwrap();
        let messages = [Message::user("kept")];
        let used = usage(100);
        store
            .append_turn(
                "ses_t",
                &TurnStep {
                    usage: Some(("m", &used, None)),
                    messages: &messages,
                    ..TurnStep::default()
                },
            )
            .unwrap();
        let session = store.get_session("ses_t").unwrap().unwrap();
        // The usage part was rolled back whole (the totals too).
        assert_eq!((session.input_tokens, session.message_count), (0, 1));
        assert!(store.session_usage("ses_t").unwrap().is_empty());
    }

    #[test]
    fn a_turn_of_an_unknown_session_stores_nothing() {
        let mut store = store_with_session();
        let messages = [Message::user("lost")];
        let err = store
            .append_turn(
                "ses_missing",
                &TurnStep {
                    messages: &messages,
                    todos: Some("[]"),
                    ..TurnStep::default()
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("ses_missing"), "{err}");
        let count: i64 = store
            .conn
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 0);
    }

    #[test]
    fn title_is_first_non_blank_line_trimmed() {
        assert_eq!(
            derive_title("\n   \n  fix the build  \nsecond line").as_deref(),
            Some("fix the build")
        );
        assert_eq!(derive_title("  \n\t"), None);
        assert_eq!(derive_title(""), None);
    }

    #[test]
    fn long_titles_are_cut_to_80_chars_with_an_ellipsis() {
        let long = "é".repeat(200);
        let title = derive_title(&long).unwrap();
        assert_eq!(title.chars().count(), 80);
        assert!(title.ends_with('…'));
        let exact = "x".repeat(80);
        assert_eq!(derive_title(&exact).unwrap(), exact);
    }
}
