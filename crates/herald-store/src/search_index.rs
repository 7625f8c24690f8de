//! Bringing the message search index up to date before it is read.
//!
//! Storing a message does not index it (schema v18): a turn's transaction
//! would otherwise spend most of its time tokenising tool output nobody may
//! ever search. `search_index_state.indexed_upto` is a watermark — a message
//! is in `messages_fts` exactly when its id is at or below it — and every
//! search first indexes the messages above it here. Results are the same as
//! with an index kept in step; the cost moves from each turn to the first
//! search after new messages, and is smaller there, because many messages
//! indexed in one transaction make one FTS5 segment instead of one per turn.

use crate::write_unit::WriteUnit;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{StoreError, sql};
use crate::store::Store;

/// Most messages indexed per transaction.
const BATCH_MESSAGES: i64 = 500;
/// Text indexed per transaction, in bytes (a batch stops before the message
/// that would pass it, but always takes one). With the message cap, this
/// bounds how long a catch-up holds the write lock, which other writers
/// wait on, to about 50 ms; a backlog of many batches commits as it goes,
/// so an interrupted catch-up keeps what it did.
const BATCH_BYTES: i64 = 1 << 20;

impl Store {
    /// Indexes every stored message the search index does not hold yet, and
    /// returns how many it indexed. [`Store::search`] calls it first; call it
    /// directly after writing many messages (an import) to pay the cost then
    /// rather than at the next search.
    pub fn catch_up_search_index(&self) -> Result<u64, StoreError> {
        const CTX: &str = "indexing new messages for search";
        let path = &self.path;
        if self.search_index_is_current()? {
            return Ok(0);
        }
        let mut indexed = 0;
        loop {
            // Immediate: read the watermark and move it under the write lock,
            // so two processes never index the same message twice.
            let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
            let upto = indexed_upto(&tx).map_err(sql(path, CTX))?;
            // The next messages while the text before each stays under
            // BATCH_BYTES (octet_length reads sizes, not the text).
            let end: Option<i64> = tx
                .prepare_cached(
                    "SELECT max(id) FROM ( \
                       SELECT id, coalesce(sum(size) OVER (ORDER BY id \
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before \
                       FROM (SELECT id, octet_length(content) + coalesce(octet_length(tool_calls), 0) AS size \
                             FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2)) \
                     WHERE before < ?3",
                )
                .and_then(|mut stmt| {
                    stmt.query_row(params![upto, BATCH_MESSAGES, BATCH_BYTES], |row| {
                        row.get(0)
                    })
                })
                .map_err(sql(path, CTX))?;
            let Some(end) = end else {
                tx.commit().map_err(sql(path, CTX))?;
                return Ok(indexed);
            };
            let rows = tx
                .prepare_cached(
                    "INSERT INTO messages_fts(rowid, content, tool_calls) \
                     SELECT id, content, tool_calls FROM messages WHERE id > ?1 AND id <= ?2",
                )
                .and_then(|mut stmt| stmt.execute(params![upto, end]))
                .map_err(sql(path, CTX))?;
            tx.prepare_cached(
                "INSERT INTO search_index_state (name, indexed_upto) VALUES ('messages', ?1) \
                 ON CONFLICT (name) DO UPDATE SET indexed_upto = excluded.indexed_upto",
            )
            .and_then(|mut stmt| stmt.execute(params![end]))
            .map_err(sql(path, CTX))?;
            tx.commit().map_err(sql(path, CTX))?;
            indexed += rows as u64;
        }
    }

    /// Whether every stored message is in the search index: one read, no
    /// write lock, so a search over an index already current costs nothing
    /// extra.
    fn search_index_is_current(&self) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT coalesce((SELECT max(id) FROM messages), 0) <= \
                 coalesce((SELECT indexed_upto FROM search_index_state WHERE name = 'messages'), 0)",
            )
            .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
            .map_err(sql(&self.path, "reading the search index watermark"))
    }

    /// How many stored messages wait to be indexed.
    pub fn unindexed_messages(&self) -> Result<u64, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT count(*) FROM messages WHERE id > \
                 coalesce((SELECT indexed_upto FROM search_index_state WHERE name = 'messages'), 0)",
            )
            .and_then(|mut stmt| stmt.query_row([], |row| row.get::<_, i64>(0)))
            .map(|n| n.max(0) as u64)
            .map_err(sql(&self.path, "counting unindexed messages"))
    }
}

/// The watermark; 0 when the row is missing (a new database).
fn indexed_upto(tx: &Connection) -> rusqlite::Result<i64> {
    tx.prepare_cached("SELECT indexed_upto FROM search_index_state WHERE name = 'messages'")?
        .query_row([], |row| row.get(0))
        .optional()
        .map(|found| found.unwrap_or(0))
}
