//! The engine of `session_search` and `herald sessions search`: full-text
//! search grouped by session, plus browse mode.
//!
//! A session matches through its messages (`messages_fts`) or through its
//! title and end-of-session summary (`sessions_fts`); both are bm25-ranked
//! and a session's better match decides its place. Both modes can be limited
//! to sessions active in a period ([`ActiveBetween`]).
//!
//! Messages stored since the last search are indexed first
//! ([`Store::catch_up_search_index`]): storing a message does not index it.
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

/// A period a session must have been active in to be found: started before
/// `until_ms` and last active at or after `since_ms` (Unix ms; `None` leaves
/// that side open). So `since` = a week ago finds every session touched in
/// the last week, however long ago it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveBetween {
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
}

impl ActiveBetween {
    /// Whether a session started at `started_at` and last active at
    /// `last_active_at` falls in the period.
    pub fn contains(&self, started_at: i64, last_active_at: i64) -> bool {
        self.since_ms.is_none_or(|since| last_active_at >= since)
            && self.until_ms.is_none_or(|until| started_at < until)
    }
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
    /// Only sessions active in this period.
    pub active: ActiveBetween,
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
            active: ActiveBetween::default(),
        }
    }
}

/// One matching session: its record, its best-matching message and the
/// messages around that match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub session: SessionRecord,
    /// The best-matching message; `None` when only the session's title or
    /// summary matched (then `before` and `after` are empty).
    pub message: Option<StoredMessage>,
    pub before: Vec<StoredMessage>,
    pub after: Vec<StoredMessage>,
    /// Whether the session's title or summary matched the query.
    pub summary_match: bool,
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

/// A session whose title or summary matched.
struct SummaryMatch {
    session_id: String,
    rank: f64,
}

/// Role, session and period filters applied to candidate rows.
struct Filter<'a> {
    roles: Option<Vec<&'static str>>,
    exclude: Option<&'a str>,
    active: ActiveBetween,
}

impl Filter<'_> {
    fn accepts(&self, session_id: &str, role: &str, started_at: i64, last_active_at: i64) -> bool {
        self.exclude != Some(session_id)
            && self
                .roles
                .as_ref()
                .is_none_or(|roles| roles.contains(&role))
            && self.active.contains(started_at, last_active_at)
    }

    /// Whether a title or summary match counts: not with a role filter
    /// (the caller asked for messages of those roles).
    fn takes_summaries(&self) -> bool {
        self.roles.is_none()
    }
}

impl Store {
    /// Full-text search over every stored message and every top-level
    /// session's title and summary, one hit per session.
    ///
    /// All terms must match; if that finds nothing and the query has several
    /// terms, it is retried with any term matching (hits then say
    /// [`MatchMode::AnyTerm`]). Returns no hits for a query with nothing
    /// searchable in it. A session found both ways shows its best message
    /// and says `summary_match`; ranked by relevance, the better of its two
    /// bm25 ranks places it.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, StoreError> {
        let terms = fts_terms(&request.query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        self.catch_up_search_index()?;
        let limit = clamp_limit(request.limit);
        let filter = Filter {
            roles: request
                .role_filter
                .as_ref()
                .filter(|r| !r.is_empty())
                .map(|roles| roles.iter().map(|r| role_str(*r)).collect()),
            exclude: request.exclude_session.as_deref(),
            active: request.active,
        };
        let mut mode = MatchMode::AllTerms;
        let mut fts = terms.join(" ");
        let (mut best, mut sorted_by) =
            self.best_per_session(&fts, &filter, limit, request.sort)?;
        let mut summaries = self.summary_matches(&fts, &filter, limit, request.sort)?;
        if best.is_empty() && summaries.is_empty() && terms.len() > 1 {
            mode = MatchMode::AnyTerm;
            fts = terms.join(" OR ");
            (best, sorted_by) = self.best_per_session(&fts, &filter, limit, request.sort)?;
            summaries = self.summary_matches(&fts, &filter, limit, request.sort)?;
        }
        let window = clamp_window(request.window);
        let mut hits = Vec::with_capacity(best.len() + summaries.len());
        for b in best {
            let session = require_session(&self.conn, &self.path, &b.session_id)?;
            let message = message_in_session(&self.conn, &self.path, &b.session_id, b.message_id)?;
            let (before, after) =
                neighbours(&self.conn, &self.path, &b.session_id, message.seq, window)?;
            let summary = summaries.iter().position(|m| m.session_id == b.session_id);
            let rank = match summary.map(|at| summaries.remove(at)) {
                Some(matched) => (b.rank.min(matched.rank), true),
                None => (b.rank, false),
            };
            hits.push(SearchHit {
                session,
                message: Some(message),
                before,
                after,
                summary_match: rank.1,
                score: 0.0 - rank.0, // not `-rank`: keeps 0 from becoming -0
                match_mode: mode,
                sorted_by,
            });
        }
        for matched in summaries {
            hits.push(SearchHit {
                session: require_session(&self.conn, &self.path, &matched.session_id)?,
                message: None,
                before: Vec::new(),
                after: Vec::new(),
                summary_match: true,
                score: 0.0 - matched.rank,
                match_mode: mode,
                sorted_by,
            });
        }
        match sorted_by {
            SearchSort::Relevance => hits.sort_by(|a, b| b.score.total_cmp(&a.score)),
            SearchSort::Newest => hits.sort_by_key(|h| std::cmp::Reverse(newest_of(h))),
        }
        hits.truncate(limit);
        Ok(hits)
    }

    /// Browse mode of `session_search` (no query): the most recently active
    /// top-level sessions that have messages, `limit` clamped to 1..=10.
    pub fn recent_sessions(
        &self,
        limit: usize,
        exclude: Option<&str>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        self.recent_sessions_in(limit, exclude, ActiveBetween::default())
    }

    /// [`Store::recent_sessions`] limited to sessions active in `active`.
    pub fn recent_sessions_in(
        &self,
        limit: usize,
        exclude: Option<&str>,
        active: ActiveBetween,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        const CTX: &str = "listing recent sessions";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions \
                 WHERE parent_session_id IS NULL AND message_count > 0 AND id IS NOT ?1 \
                 AND (?3 IS NULL OR last_active_at >= ?3) AND (?4 IS NULL OR started_at < ?4) \
                 ORDER BY last_active_at DESC, rowid DESC LIMIT ?2"
            ))
            .map_err(sql(&self.path, CTX))?;
        stmt.query_map(
            params![
                exclude,
                to_i64(clamp_limit(limit) as u64),
                active.since_ms,
                active.until_ms
            ],
            session_from_row,
        )
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(sql(&self.path, CTX))
    }

    /// Up to `limit` top-level sessions whose title or summary match `fts`,
    /// best bm25 first (or most recently active first), filtered like
    /// message matches. None when the filter asks for message roles.
    fn summary_matches(
        &self,
        fts: &str,
        filter: &Filter<'_>,
        limit: usize,
        sort: SearchSort,
    ) -> Result<Vec<SummaryMatch>, StoreError> {
        const CTX: &str = "searching session titles and summaries";
        if !filter.takes_summaries() {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached(match sort {
                SearchSort::Relevance => {
                    "SELECT f.session_id, f.rank, s.started_at, s.last_active_at \
                     FROM sessions_fts f JOIN sessions s ON s.id = f.session_id \
                     WHERE sessions_fts MATCH ?1 ORDER BY f.rank"
                }
                SearchSort::Newest => {
                    "SELECT f.session_id, 0.0, s.started_at, s.last_active_at \
                     FROM sessions_fts f JOIN sessions s ON s.id = f.session_id \
                     WHERE sessions_fts MATCH ?1 ORDER BY s.last_active_at DESC"
                }
            })
            .map_err(sql(&self.path, CTX))?;
        let mut rows = stmt
            .query([fts])
            .map_err(|e| classify(&self.path, CTX, e))?;
        let mut found = Vec::new();
        while found.len() < limit
            && let Some(row) = rows.next().map_err(|e| classify(&self.path, CTX, e))?
        {
            let session_id: String = row.get(0).map_err(sql(&self.path, CTX))?;
            let started_at: i64 = row.get(2).map_err(sql(&self.path, CTX))?;
            let last_active_at: i64 = row.get(3).map_err(sql(&self.path, CTX))?;
            if filter.exclude == Some(session_id.as_str())
                || !filter.active.contains(started_at, last_active_at)
            {
                continue;
            }
            found.push(SummaryMatch {
                session_id,
                rank: row.get(1).map_err(sql(&self.path, CTX))?,
            });
        }
        Ok(found)
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
                "SELECT c.rowid, c.rank, m.session_id, m.role, s.started_at, s.last_active_at \
                 FROM (SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ?1 \
                       ORDER BY rank LIMIT ?2) AS c \
                 JOIN messages m ON m.id = c.rowid JOIN sessions s ON s.id = m.session_id \
                 ORDER BY c.rank"
            }
            SearchSort::Newest => {
                "SELECT c.rowid, 0.0, m.session_id, m.role, s.started_at, s.last_active_at \
                 FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 \
                       ORDER BY rowid DESC LIMIT ?2) AS c \
                 JOIN messages m ON m.id = c.rowid JOIN sessions s ON s.id = m.session_id \
                 ORDER BY c.rowid DESC"
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
                if !filter.accepts(&session_id, &role, row.get(4)?, row.get(5)?)
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

/// When a hit was last relevant, for newest-first order: its message's
/// time, or the session's last activity for a title or summary match.
fn newest_of(hit: &SearchHit) -> i64 {
    match &hit.message {
        Some(message) if !hit.summary_match => message.created_at,
        _ => hit.session.last_active_at,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rusqlite::Connection;

    use crate::migrations::{MIGRATIONS, migrate};

    /// A database from before v15 gets its existing top-level titles into
    /// the session index, each row linked by `search_rowid`.
    #[test]
    fn v15_indexes_the_titles_already_stored() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, ":memory:", &MIGRATIONS[..14]).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, source, started_at, last_active_at, title) \
                 VALUES ('a', 'cli', 1, 1, 'tune the narwhal cache'); \
             INSERT INTO sessions (id, parent_session_id, source, started_at, last_active_at, title) \
                 VALUES ('c', 'a', 'subagent', 1, 1, 'narwhal child'); \
             INSERT INTO sessions (id, source, started_at, last_active_at) \
                 VALUES ('b', 'cli', 1, 1);",
        )
        .unwrap();
        migrate(&mut conn, ":memory:", MIGRATIONS).unwrap();
        let found: Vec<String> = conn
            .prepare("SELECT session_id FROM sessions_fts WHERE sessions_fts MATCH 'narwhal'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(found, ["a"]);
        let linked: i64 = conn
            .query_row(
                "SELECT count(*) FROM sessions s JOIN sessions_fts f ON f.rowid = s.search_rowid \
                 WHERE f.session_id = s.id",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(linked, 1);
        // A later title change replaces the row instead of adding one.
        conn.execute(
            "UPDATE sessions SET title = 'other words' WHERE id = 'a'",
            [],
        )
        .unwrap();
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM sessions_fts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
    }
}
