//! The engine of `session_search` and `herald sessions search`: full-text
//! search grouped by session, plus browse mode.
//!
//! Ranking is FTS5's bm25 (`rank`). To stay fast over millions of messages the
//! search first takes only the best-ranked candidate rows (`ORDER BY rank
//! LIMIT k`), joins those to their messages, applies the role and session
//! filters and keeps the best message per session in Rust. Only if that does
//! not fill `limit` sessions and more candidates exist does it widen `k`.

use std::collections::HashMap;

use herald_protocol::Role;
use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, sql};
use crate::messages::{message_in_session, neighbours, role_str};
use crate::records::{SessionRecord, StoredMessage};
use crate::sanitize::fts_terms;
use crate::sessions::{SESSION_COLUMNS, require_session, session_from_row};
use crate::store::{Store, to_i64};

/// Sessions returned when the caller does not say.
pub const DEFAULT_SEARCH_LIMIT: usize = 3;
/// Most sessions one search returns.
pub const MAX_SEARCH_LIMIT: usize = 10;
/// Messages shown on each side of a match when the caller does not say.
pub const DEFAULT_WINDOW: usize = 5;
/// Most messages shown on each side of a match.
pub const MAX_WINDOW: usize = 20;

/// First candidate batch; widened eightfold while filters starve it.
const FIRST_BATCH: usize = 64;
/// Beyond this batch size the search stops widening and takes every match.
const LAST_BATCH: usize = 32_768;

/// `limit` forced into 1..=10 so every caller gets a bounded answer.
pub(crate) fn clamp_limit(limit: usize) -> usize {
    limit.clamp(1, MAX_SEARCH_LIMIT)
}

/// `window` forced into 1..=20.
pub(crate) fn clamp_window(window: usize) -> usize {
    window.clamp(1, MAX_WINDOW)
}

/// How matching sessions are ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchSort {
    /// Best bm25 match first.
    #[default]
    Relevance,
    /// Most recently started session first (considers every match).
    Newest,
}

/// Whether a hit matched every query term or, after nothing did, any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    AllTerms,
    AnyTerm,
}

/// A full-text query with its filters. `limit` and `window` are clamped by the
/// store (1..=10 and 1..=20), so callers may pass user input straight through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// Free text; sanitised with [`crate::sanitize_fts_query`].
    pub query: String,
    /// How many sessions to return.
    pub limit: usize,
    /// Only match messages with these roles (`None` or empty: any role).
    pub role_filter: Option<Vec<Role>>,
    /// Skip this session (the one doing the searching).
    pub exclude_session: Option<String>,
    /// Messages of context on each side of the match.
    pub window: usize,
    pub sort: SearchSort,
}

impl Default for SearchRequest {
    fn default() -> Self {
        SearchRequest {
            query: String::new(),
            limit: DEFAULT_SEARCH_LIMIT,
            role_filter: None,
            exclude_session: None,
            window: DEFAULT_WINDOW,
            sort: SearchSort::Relevance,
        }
    }
}

/// One matching session: its record, its best-matching message and the
/// messages around that match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub session: SessionRecord,
    pub message: StoredMessage,
    pub before: Vec<StoredMessage>,
    pub after: Vec<StoredMessage>,
    /// Relevance of the match (negated bm25: higher is better).
    pub score: f64,
    pub match_mode: MatchMode,
}

/// A candidate: the best message of one session.
struct Best {
    session_id: String,
    message_id: i64,
    rank: f64,
}

/// Role and session filters applied to candidate rows.
struct Filter<'a> {
    roles: Option<Vec<&'static str>>,
    exclude: Option<&'a str>,
}

impl Filter<'_> {
    fn accepts(&self, session_id: &str, role: &str) -> bool {
        self.exclude != Some(session_id)
            && self
                .roles
                .as_ref()
                .is_none_or(|roles| roles.contains(&role))
    }
}

impl Store {
    /// Full-text search over every stored message, one hit per session.
    ///
    /// All terms must match; if that finds nothing and the query has several
    /// terms, it is retried with any term matching (hits then say
    /// [`MatchMode::AnyTerm`]). Returns no hits for a query with nothing
    /// searchable in it.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, StoreError> {
        let terms = fts_terms(&request.query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let limit = clamp_limit(request.limit);
        let filter = Filter {
            roles: request
                .role_filter
                .as_ref()
                .filter(|r| !r.is_empty())
                .map(|roles| roles.iter().map(|r| role_str(*r)).collect()),
            exclude: request.exclude_session.as_deref(),
        };
        let mut mode = MatchMode::AllTerms;
        let mut best = self.best_per_session(&terms.join(" "), &filter, limit, request.sort)?;
        if best.is_empty() && terms.len() > 1 {
            mode = MatchMode::AnyTerm;
            best = self.best_per_session(&terms.join(" OR "), &filter, limit, request.sort)?;
        }
        let window = clamp_window(request.window);
        best.into_iter()
            .map(|b| {
                let session = require_session(&self.conn, &self.path, &b.session_id)?;
                let message =
                    message_in_session(&self.conn, &self.path, &b.session_id, b.message_id)?;
                let (before, after) =
                    neighbours(&self.conn, &self.path, &b.session_id, message.seq, window)?;
                Ok(SearchHit {
                    session,
                    message,
                    before,
                    after,
                    score: -b.rank,
                    match_mode: mode,
                })
            })
            .collect()
    }

    /// Browse mode of `session_search` (no query): the most recently active
    /// top-level sessions that have messages, `limit` clamped to 1..=10.
    pub fn recent_sessions(
        &self,
        limit: usize,
        exclude: Option<&str>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        const CTX: &str = "listing recent sessions";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions \
                 WHERE parent_session_id IS NULL AND message_count > 0 AND id IS NOT ?1 \
                 ORDER BY last_active_at DESC, rowid DESC LIMIT ?2"
            ))
            .map_err(sql(&self.path, CTX))?;
        stmt.query_map(
            params![exclude, to_i64(clamp_limit(limit) as u64)],
            session_from_row,
        )
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(sql(&self.path, CTX))
    }

    /// The best-ranked message of up to `limit` sessions matching `fts`.
    fn best_per_session(
        &self,
        fts: &str,
        filter: &Filter<'_>,
        limit: usize,
        sort: SearchSort,
    ) -> Result<Vec<Best>, StoreError> {
        match sort {
            SearchSort::Relevance => self.best_by_relevance(fts, filter, limit),
            SearchSort::Newest => self.best_by_date(fts, filter, limit),
        }
    }

    fn best_by_relevance(
        &self,
        fts: &str,
        filter: &Filter<'_>,
        limit: usize,
    ) -> Result<Vec<Best>, StoreError> {
        const CTX: &str = "running a full-text search";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT c.rowid, c.rank, m.session_id, m.role \
                 FROM (SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ?1 \
                       ORDER BY rank LIMIT ?2) AS c \
                 JOIN messages m ON m.id = c.rowid ORDER BY c.rank",
            )
            .map_err(sql(&self.path, CTX))?;
        let mut batch = FIRST_BATCH.max(limit * 16);
        loop {
            // -1 means "no limit" to SQLite.
            let sql_limit = if batch > LAST_BATCH {
                -1
            } else {
                to_i64(batch as u64)
            };
            let mut rows = stmt
                .query(params![fts, sql_limit])
                .map_err(sql(&self.path, CTX))?;
            let mut seen = 0usize;
            let mut best: Vec<Best> = Vec::new();
            while let Some(row) = rows.next().map_err(sql(&self.path, CTX))? {
                seen += 1;
                if best.len() == limit {
                    continue; // keep counting so we know whether the batch was full
                }
                let session_id: String = row.get(2).map_err(sql(&self.path, CTX))?;
                let role: String = row.get(3).map_err(sql(&self.path, CTX))?;
                if !filter.accepts(&session_id, &role)
                    || best.iter().any(|b| b.session_id == session_id)
                {
                    continue;
                }
                best.push(Best {
                    session_id,
                    message_id: row.get(0).map_err(sql(&self.path, CTX))?,
                    rank: row.get(1).map_err(sql(&self.path, CTX))?,
                });
            }
            if best.len() == limit || sql_limit < 0 || seen < batch {
                return Ok(best);
            }
            batch = batch.saturating_mul(8);
        }
    }

    fn best_by_date(
        &self,
        fts: &str,
        filter: &Filter<'_>,
        limit: usize,
    ) -> Result<Vec<Best>, StoreError> {
        const CTX: &str = "running a full-text search";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.rowid, f.rank, m.session_id, m.role, s.started_at \
                 FROM messages_fts f JOIN messages m ON m.id = f.rowid \
                 JOIN sessions s ON s.id = m.session_id \
                 WHERE messages_fts MATCH ?1",
            )
            .map_err(sql(&self.path, CTX))?;
        let mut rows = stmt.query([fts]).map_err(sql(&self.path, CTX))?;
        let mut per_session: HashMap<String, (Best, i64)> = HashMap::new();
        while let Some(row) = rows.next().map_err(sql(&self.path, CTX))? {
            let session_id: String = row.get(2).map_err(sql(&self.path, CTX))?;
            let role: String = row.get(3).map_err(sql(&self.path, CTX))?;
            if !filter.accepts(&session_id, &role) {
                continue;
            }
            let message_id: i64 = row.get(0).map_err(sql(&self.path, CTX))?;
            let rank: f64 = row.get(1).map_err(sql(&self.path, CTX))?;
            let started_at: i64 = row.get(4).map_err(sql(&self.path, CTX))?;
            let entry = per_session.entry(session_id.clone()).or_insert((
                Best {
                    session_id,
                    message_id,
                    rank,
                },
                started_at,
            ));
            if rank < entry.0.rank {
                entry.0.message_id = message_id;
                entry.0.rank = rank;
            }
        }
        let mut sessions: Vec<(Best, i64)> = per_session.into_values().collect();
        sessions.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.rank.total_cmp(&b.0.rank)));
        Ok(sessions.into_iter().take(limit).map(|(b, _)| b).collect())
    }
}
