//! Per-request token usage and cost, rolled up into the session totals.

use crate::write_unit::WriteUnit;
use herald_protocol::Usage;
use rusqlite::params;

use crate::error::{StoreError, sql};
use crate::records::UsageRecord;
use crate::sessions::require_session;
use crate::store::{Store, now_ms, to_i64, to_u64};

impl Store {
    /// Stores one model request's usage and adds it to the session's totals,
    /// in one transaction. `cost_usd` is `None` when the model's price is
    /// unknown (the total then grows by the known part only).
    pub fn record_usage(
        &mut self,
        session_id: &str,
        model: &str,
        usage: &Usage,
        cost_usd: Option<f64>,
    ) -> Result<(), StoreError> {
        const CTX: &str = "recording usage";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        record_usage_in(&tx, path, session_id, model, usage, cost_usd)?;
        tx.commit().map_err(sql(path, CTX))
    }

    /// Every usage row of a session, oldest first (`herald sessions show`, export).
    pub fn session_usage(&self, session_id: &str) -> Result<Vec<UsageRecord>, StoreError> {
        const CTX: &str = "reading usage";
        require_session(&self.conn, &self.path, session_id)?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, model, input_tokens, output_tokens, cached_tokens, \
                 cache_creation_tokens, cost_usd, created_at FROM usage \
                 WHERE session_id = ?1 ORDER BY created_at, id",
            )
            .map_err(sql(&self.path, CTX))?;
        // Bound to a local so the row iterator is dropped before `stmt`.
        let rows: Result<Vec<UsageRecord>, StoreError> = stmt
            .query_map([session_id], |r| {
                Ok(UsageRecord {
                    id: r.get(0)?,
                    model: r.get(1)?,
                    input_tokens: to_u64(r.get(2)?),
                    output_tokens: to_u64(r.get(3)?),
                    cached_tokens: to_u64(r.get(4)?),
                    cache_creation_tokens: to_u64(r.get(5)?),
                    cost_usd: r.get(6)?,
                    created_at: r.get(7)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql(&self.path, CTX));
        rows
    }
}

/// [`Store::record_usage`] inside the caller's transaction (see
/// [`Store::append_turn`], which stores a request's usage with its messages).
pub(crate) fn record_usage_in(
    tx: &rusqlite::Connection,
    path: &str,
    session_id: &str,
    model: &str,
    usage: &Usage,
    cost_usd: Option<f64>,
) -> Result<(), StoreError> {
    const CTX: &str = "recording usage";
    let now = now_ms();
    let updated = tx
        .prepare_cached(
            "UPDATE sessions SET input_tokens = input_tokens + ?2, \
             output_tokens = output_tokens + ?3, cached_tokens = cached_tokens + ?4, \
             cache_creation_tokens = cache_creation_tokens + ?5, \
             cost_usd = cost_usd + coalesce(?6, 0), last_active_at = ?7 WHERE id = ?1",
        )
        .and_then(|mut s| {
            s.execute(params![
                session_id,
                to_i64(usage.input_tokens),
                to_i64(usage.output_tokens),
                to_i64(usage.cached_tokens),
                to_i64(usage.cache_creation_tokens),
                cost_usd,
                now
            ])
        })
        .map_err(sql(path, CTX))?;
    if updated == 0 {
        return Err(StoreError::UnknownSession(session_id.to_owned()));
    }
    tx.prepare_cached(
        "INSERT INTO usage (session_id, model, input_tokens, output_tokens, cached_tokens, \
         cache_creation_tokens, cost_usd, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )
    .and_then(|mut s| {
        s.execute(params![
            session_id,
            model,
            to_i64(usage.input_tokens),
            to_i64(usage.output_tokens),
            to_i64(usage.cached_tokens),
            to_i64(usage.cache_creation_tokens),
            cost_usd,
            now
        ])
    })
    .map_err(sql(path, CTX))?;
    Ok(())
}
