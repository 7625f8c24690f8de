//! Tool results of a batch that is still running. Each call's result is
//! written here as soon as the call finishes; the batch's messages replace
//! them when the whole batch is stored. After a crash mid-batch, `--resume`
//! answers the finished calls with their real results instead of
//! "interrupted".

use herald_protocol::ImageData;
use rusqlite::params;

use crate::error::{StoreError, sql};
use crate::store::{Store, now_ms};

/// A finished call's result waiting for its batch to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
    /// The result's images, kept like its text.
    pub images: Vec<ImageData>,
}

impl Store {
    /// Keeps one finished call's result (committed before this returns).
    pub fn save_pending_result(
        &mut self,
        session_id: &str,
        result: &PendingResult,
    ) -> Result<(), StoreError> {
        let images = crate::messages::images_json(
            &result.images,
            &format!("images of the kept result of call '{}'", result.call_id),
        )?;
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO pending_results (session_id, call_id, content, is_error, created_at, images) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    session_id,
                    result.call_id,
                    result.content,
                    i64::from(result.is_error),
                    now_ms(),
                    images
                ])
            })
            .map_err(sql(&self.path, "saving a tool result"))?;
        Ok(())
    }

    /// Every result kept for a session, oldest first.
    pub fn pending_results(&self, session_id: &str) -> Result<Vec<PendingResult>, StoreError> {
        const CTX: &str = "reading kept tool results";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT call_id, content, is_error, images FROM pending_results \
                 WHERE session_id = ?1 ORDER BY created_at, rowid",
            )
            .map_err(sql(&self.path, CTX))?;
        let rows = stmt
            .query_map([session_id], |row| {
                Ok((
                    PendingResult {
                        call_id: row.get(0)?,
                        content: row.get(1)?,
                        is_error: row.get::<_, i64>(2)? != 0,
                        images: Vec::new(),
                    },
                    row.get::<_, Option<String>>(3)?,
                ))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql(&self.path, CTX))?;
        rows.into_iter()
            .map(|(mut result, images)| {
                if let Some(json) = images {
                    result.images =
                        serde_json::from_str(&json).map_err(|e| StoreError::Malformed {
                            what: format!("kept result of call '{}'", result.call_id),
                            detail: format!("images is not valid JSON: {e}"),
                        })?;
                }
                Ok(result)
            })
            .collect()
    }

    /// Forgets a session's kept results (its batch is stored as messages).
    pub fn clear_pending_results(&mut self, session_id: &str) -> Result<(), StoreError> {
        clear(&self.conn, &self.path, session_id)
    }
}

/// Deletes a session's kept results on `conn` (also inside a transaction).
pub(crate) fn clear(
    conn: &rusqlite::Connection,
    path: &str,
    session_id: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM pending_results WHERE session_id = ?1")
        .and_then(|mut s| s.execute([session_id]))
        .map_err(sql(path, "clearing kept tool results"))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn results_are_kept_in_order_and_cleared() {
        let mut store = Store::open_in_memory().unwrap();
        for (id, text) in [("c1", "one"), ("c2", "two")] {
            store
                .save_pending_result(
                    "s",
                    &PendingResult {
                        call_id: id.into(),
                        content: text.into(),
                        is_error: id == "c2",
                        images: Vec::new(),
                    },
                )
                .unwrap();
        }
        let kept = store.pending_results("s").unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].content, "one");
        assert!(kept[1].is_error);
        assert!(store.pending_results("other").unwrap().is_empty());
        store.clear_pending_results("s").unwrap();
        assert!(store.pending_results("s").unwrap().is_empty());
    }
}
