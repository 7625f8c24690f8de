//! The engine of `session_search` and `herald sessions search`: full-text
//! search grouped by session, plus browse mode.
//!
//! Ranking is FTS5's bm25 (`rank`). To stay fast over millions of messages the
//! search first takes only the best-ranked candidate rows (`ORDER BY rank
//! LIMIT k`), joins those to their messages, applies the role and session
//! filters and keeps the best message per session in Rust. Only if that does
//! not fill `limit` sessions and more candidates exist does it widen `k`.
//!
//! bm25 has to score every matching row, so a query made of very common words
//! over a large store can take seconds. Ranking therefore runs under a time
//! budget (default 50 ms, [`Store::set_search_budget`]); past it, the query is
//! interrupted and answered newest-match-first instead, which FTS5 serves
//! without scoring. Such hits report `sorted_by: Newest`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use herald_protocol::Role;
use rusqlite::{ErrorCode, params};
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, classify, sql};
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

/// How long bm25 ranking may run before the search falls back to newest first.
pub const DEFAULT_SEARCH_BUDGET: Duration = Duration::from_millis(50);

/// VM instructions between checks of the search deadline.
const BUDGET_CHECK_OPS: i32 = 1_000;

/// A deadline the connection's progress handler enforces: when set and past,
/// the running statement is interrupted. Shared between the `Store` (which
/// arms it around ranked queries) and the handler installed at open.
pub(crate) struct SearchDeadline {
    origin: Instant,
    /// Microseconds after `origin`; 0 means no deadline.
    at_micros: AtomicU64,
}

impl SearchDeadline {
    pub(crate) fn new() -> Arc<SearchDeadline> {
        Arc::new(SearchDeadline {
            origin: Instant::now(),
            at_micros: AtomicU64::new(0),
        })
    }

    /// Installs the progress handler that checks this deadline on `conn`.
    pub(crate) fn install(
        self: &Arc<Self>,
        conn: &mut rusqlite::Connection,
    ) -> rusqlite::Result<()> {
        let deadline = Arc::clone(self);
        conn.progress_handler(BUDGET_CHECK_OPS, Some(move || deadline.expired()))
    }

    fn micros_now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn expired(&self) -> bool {
        let at = self.at_micros.load(Ordering::Relaxed);
        at != 0 && self.micros_now() >= at
    }

    /// Arms the deadline `budget` from now until the guard is dropped.
    fn arm(&self, budget: Duration) -> DeadlineGuard<'_> {
        let budget = u64::try_from(budget.as_micros()).unwrap_or(u64::MAX);
        let at = self.micros_now().saturating_add(budget).max(1);
        self.at_micros.store(at, Ordering::Relaxed);
        DeadlineGuard(self)
    }
}

/// Disarms a [`SearchDeadline`] when dropped.
struct DeadlineGuard<'a>(&'a SearchDeadline);

impl Drop for DeadlineGuard<'_> {
    fn drop(&mut self) {
        self.0.at_micros.store(0, Ordering::Relaxed);
    }
}

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
    /// Sessions with the most recent matching message first; each hit shows
    /// that session's newest match.
    Newest,
}

/// Whether a hit matched every query term or, after nothing did, any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// The matched message contains every query term.
    AllTerms,
    /// No message had them all; this one has at least one.
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
    /// Relevance of the match (negated bm25: higher is better); 0 when the
    /// hits are ordered newest first.
    pub score: f64,
    pub match_mode: MatchMode,
    /// The order the hits are really in: `Newest` when asked for, or when
    /// ranking ran out of its time budget.
    pub sorted_by: SearchSort,
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
        let (mut best, mut sorted_by) =
            self.best_per_session(&terms.join(" "), &filter, limit, request.sort)?;
        if best.is_empty() && terms.len() > 1 {
            mode = MatchMode::AnyTerm;
            (best, sorted_by) =
                self.best_per_session(&terms.join(" OR "), &filter, limit, request.sort)?;
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
                    score: 0.0 - b.rank, // not `-rank`: keeps 0 from becoming -0
                    match_mode: mode,
                    sorted_by,
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

    /// How long bm25 ranking may run before a search falls back to newest
    /// first (default [`DEFAULT_SEARCH_BUDGET`]). A longer budget gives exact
    /// ranking for very common words at the cost of latency.
    pub fn set_search_budget(&mut self, budget: Duration) {
        self.search_budget = budget;
    }

    /// The first match of up to `limit` sessions, in the order of `sort`, and
    /// the order actually used.
    fn best_per_session(
        &self,
        fts: &str,
        filter: &Filter<'_>,
        limit: usize,
        sort: SearchSort,
    ) -> Result<(Vec<Best>, SearchSort), StoreError> {
        const CTX: &str = "running a full-text search";
        if sort == SearchSort::Relevance {
            let guard = self.deadline.arm(self.search_budget);
            match self.first_per_session(fts, filter, limit, SearchSort::Relevance) {
                Ok(best) => return Ok((best, SearchSort::Relevance)),
                Err(e) if e.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) => {
                    drop(guard);
                }
                Err(e) => return Err(classify(&self.path, CTX, e)),
            }
        }
        self.first_per_session(fts, filter, limit, SearchSort::Newest)
            .map(|best| (best, SearchSort::Newest))
            .map_err(|e| classify(&self.path, CTX, e))
    }

    /// Walks matches in `order` (best rank, or newest message), keeping the
    /// first accepted match of each session until `limit` sessions are found,
    /// widening the candidate batch only while filters starve it.
    fn first_per_session(
        &self,
        fts: &str,
        filter: &Filter<'_>,
        limit: usize,
        order: SearchSort,
    ) -> rusqlite::Result<Vec<Best>> {
        let mut stmt = self.conn.prepare_cached(match order {
            SearchSort::Relevance => {
                "SELECT c.rowid, c.rank, m.session_id, m.role \
                 FROM (SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ?1 \
                       ORDER BY rank LIMIT ?2) AS c \
                 JOIN messages m ON m.id = c.rowid ORDER BY c.rank"
            }
            SearchSort::Newest => {
                "SELECT c.rowid, 0.0, m.session_id, m.role \
                 FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 \
                       ORDER BY rowid DESC LIMIT ?2) AS c \
                 JOIN messages m ON m.id = c.rowid ORDER BY c.rowid DESC"
            }
        })?;
        let mut batch = FIRST_BATCH.max(limit * 16);
        loop {
            // -1 means "no limit" to SQLite.
            let sql_limit = if batch > LAST_BATCH {
                -1
            } else {
                to_i64(batch as u64)
            };
            let mut rows = stmt.query(params![fts, sql_limit])?;
            let mut seen = 0usize;
            let mut best: Vec<Best> = Vec::new();
            while let Some(row) = rows.next()? {
                seen += 1;
                if best.len() == limit {
                    continue; // keep counting so we know whether the batch was full
                }
                let session_id: String = row.get(2)?;
                let role: String = row.get(3)?;
                if !filter.accepts(&session_id, &role)
                    || best.iter().any(|b| b.session_id == session_id)
                {
                    continue;
                }
                best.push(Best {
                    session_id,
                    message_id: row.get(0)?,
                    rank: row.get(1)?,
                });
            }
            if best.len() == limit || sql_limit < 0 || seen < batch {
                return Ok(best);
            }
            batch = batch.saturating_mul(8);
        }
    }
}
