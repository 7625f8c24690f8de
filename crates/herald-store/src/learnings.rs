//! Learnings, the error memory: what failed, what kind of
//! failure it was and what fixed it, shared by every session. A learning is
//! global unless it was saved as project-specific (`project` holds the
//! project path); a search in a project sees the global ones and that
//! project's own.
//!
//! Saving consolidates: a near duplicate of an existing learning (see
//! [`near_duplicate`]) updates that row instead of adding one, so repeated
//! saves of the same lesson count as uses rather than pile up.

use std::collections::BTreeSet;

use crate::write_unit::WriteUnit;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, sql};
use crate::sanitize::fts_terms;
use crate::store::{Store, now_ms};

/// Jaccard similarity of two patterns' word sets at or above which two
/// learnings of the same tool, error type and scope are one learning.
pub const NEAR_DUPLICATE_SIMILARITY: f64 = 0.7;
/// Most tags kept on one learning (a merge unions them up to this).
pub const MAX_LEARNING_TAGS: usize = 12;
/// Most rows one list or search returns.
pub const MAX_LEARNINGS_LIMIT: usize = 200;
/// Rows of one tool and error type compared when saving; older ones are
/// left alone (a bound on the work, not on what is stored).
const MERGE_CANDIDATES: usize = 500;

/// bm25 column weights: pattern, error_type, fix, context, tags, tool. The
/// failure's description matters most, then its kind and tags.
const RANK: &str = "bm25(learnings_fts, 4.0, 2.0, 1.0, 1.0, 2.0, 1.0)";

const COLUMNS: &str = "l.id, l.pattern, l.error_type, l.fix, l.context, l.tags, l.tool, \
                       l.project, l.created_at, l.last_used_at, l.times_used";

/// One stored learning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learning {
    pub id: i64,
    /// The failure as it shows (an error message, a symptom).
    pub pattern: String,
    /// A short kind, normalised to lowercase words joined by `-`.
    pub error_type: String,
    /// What fixed it.
    pub fix: String,
    /// When it applies (versions, platform), possibly empty.
    pub context: String,
    pub tags: Vec<String>,
    /// The tool whose call failed (lowercase), empty when not known.
    pub tool: String,
    /// The project path a project-specific learning is limited to.
    pub project: Option<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub times_used: i64,
}

/// A learning to save. Fields are normalised on the way in (trimmed; tool
/// and error type lowercased; tags lowercased, deduplicated, capped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewLearning {
    pub pattern: String,
    pub error_type: String,
    pub fix: String,
    pub context: String,
    pub tags: Vec<String>,
    pub tool: String,
    pub project: Option<String>,
}

/// What [`Store::save_learning`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedLearning {
    /// The row as it is now.
    pub learning: Learning,
    /// True when a near duplicate was updated instead of a row added.
    pub merged: bool,
}

/// Which learnings a list or search sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearningScope<'a> {
    /// Every learning, of every project (the user's `herald learnings`).
    All,
    /// The global learnings plus those of this project path (an agent).
    Project(&'a str),
}

/// A full-text search over learnings.
#[derive(Debug, Clone, Copy)]
pub struct LearningQuery<'a> {
    /// Any text; it is sanitised, so it cannot break the FTS syntax.
    pub text: &'a str,
    /// `false`: every term must match (a person's or model's query);
    /// `true`: any term may (recall from a failure's text, ranked by how
    /// much matches).
    pub any_term: bool,
    pub scope: LearningScope<'a>,
    /// Only learnings of this tool or of no tool in particular.
    pub tool: Option<&'a str>,
    pub limit: usize,
}

/// `error_type` as stored: lowercase words joined by `-`.
pub fn normalize_error_type(raw: &str) -> String {
    raw.split(|c: char| c.is_whitespace() || c == '_' || c == '-')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("-")
}

/// Tags as stored: trimmed, lowercase, no empty ones or duplicates, in
/// first-seen order, at most [`MAX_LEARNING_TAGS`]. A tag may not hold a comma (the
/// column is comma-separated), so commas split tags.
pub fn normalize_tags<S: AsRef<str>>(raw: &[S]) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for tag in raw.iter().flat_map(|t| t.as_ref().split(',')) {
        let tag = tag.trim().to_lowercase();
        if !tag.is_empty() && !tags.contains(&tag) && tags.len() < MAX_LEARNING_TAGS {
            tags.push(tag);
        }
    }
    tags
}

/// The words a pattern is compared by: lowercase alphanumeric runs, every
/// number written as `#` (so `port 8080` and `port 3000` read alike).
fn pattern_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.chars().all(|c| c.is_ascii_digit()) {
                "#".to_owned()
            } else {
                w.to_lowercase()
            }
        })
        .collect()
}

/// Jaccard similarity (shared words / all words) of two patterns' word sets;
/// 1.0 for two patterns equal after trimming and lowercasing (also when they
/// have no words at all).
pub fn pattern_similarity(a: &str, b: &str) -> f64 {
    let (wa, wb) = (pattern_words(a), pattern_words(b));
    if wa.is_empty() || wb.is_empty() {
        let same = a.trim().to_lowercase() == b.trim().to_lowercase();
        return if same { 1.0 } else { 0.0 };
    }
    let shared = wa.intersection(&wb).count();
    let all = wa.union(&wb).count();
    shared as f64 / all as f64
}

/// The consolidation rule: two learnings are one when they name the same
/// tool and error type (after normalising), have the same scope, and their
/// patterns share at least [`NEAR_DUPLICATE_SIMILARITY`] of their words.
pub fn near_duplicate(existing: &Learning, new: &NewLearning) -> bool {
    existing.tool == new.tool.trim().to_lowercase()
        && existing.error_type == normalize_error_type(&new.error_type)
        && existing.project == new.project
        && pattern_similarity(&existing.pattern, &new.pattern) >= NEAR_DUPLICATE_SIMILARITY
}

fn learning_from_row(row: &Row<'_>) -> rusqlite::Result<Learning> {
    let tags: String = row.get(5)?;
    Ok(Learning {
        id: row.get(0)?,
        pattern: row.get(1)?,
        error_type: row.get(2)?,
        fix: row.get(3)?,
        context: row.get(4)?,
        tags: normalize_tags(&[tags]),
        tool: row.get(6)?,
        project: row.get(7)?,
        created_at: row.get(8)?,
        last_used_at: row.get(9)?,
        times_used: row.get(10)?,
    })
}

fn get(tx: &rusqlite::Connection, id: i64) -> rusqlite::Result<Option<Learning>> {
    tx.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM learnings l WHERE l.id = ?1"
    ))?
    .query_row([id], learning_from_row)
    .optional()
}

/// The scope as SQL parameter: `None` sees everything.
fn scope_param<'a>(scope: LearningScope<'a>) -> Option<&'a str> {
    match scope {
        LearningScope::All => None,
        LearningScope::Project(path) => Some(path),
    }
}

/// The row `new` merges into, if any: the most recently active near
/// duplicate of the same tool, error type and scope.
fn merge_target(tx: &Connection, new: &NewLearning) -> rusqlite::Result<Option<Learning>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM learnings l \
         WHERE l.tool = ?1 AND l.error_type = ?2 AND l.project IS ?3 \
         ORDER BY COALESCE(l.last_used_at, l.created_at) DESC, l.id DESC LIMIT ?4"
    ))?;
    let rows = stmt.query_map(
        params![
            new.tool,
            new.error_type,
            new.project,
            MERGE_CANDIDATES as i64
        ],
        learning_from_row,
    )?;
    for row in rows {
        let row = row?;
        if near_duplicate(&row, new) {
            return Ok(Some(row));
        }
    }
    Ok(None)
}

impl Store {
    /// Saves a learning, or merges it into a near duplicate ([`near_duplicate`]):
    /// the existing row takes the new fix, the new context when one is given
    /// and the union of the tags, keeps its pattern and id, and counts the
    /// save as a use (the failure came back). One transaction.
    pub fn save_learning(&mut self, new: &NewLearning) -> Result<SavedLearning, StoreError> {
        const CTX: &str = "saving a learning";
        let new = NewLearning {
            pattern: new.pattern.trim().to_owned(),
            error_type: normalize_error_type(&new.error_type),
            fix: new.fix.trim().to_owned(),
            context: new.context.trim().to_owned(),
            tags: normalize_tags(&new.tags),
            tool: new.tool.trim().to_lowercase(),
            project: new.project.clone(),
        };
        let path = self.path.clone();
        let tx = WriteUnit::begin(&self.conn).map_err(sql(&path, CTX))?;
        let now = now_ms();
        let (id, merged) = match merge_target(&tx, &new).map_err(sql(&path, CTX))? {
            Some(old) => {
                let mut tags = old.tags.clone();
                tags.extend(new.tags.iter().cloned());
                let tags = normalize_tags(&tags).join(", ");
                let context = if new.context.is_empty() {
                    old.context
                } else {
                    new.context.clone()
                };
                tx.prepare_cached(
                    "UPDATE learnings SET fix = ?2, context = ?3, tags = ?4, \
                     times_used = times_used + 1, last_used_at = ?5 WHERE id = ?1",
                )
                .and_then(|mut stmt| stmt.execute(params![old.id, new.fix, context, tags, now]))
                .map_err(sql(&path, CTX))?;
                (old.id, true)
            }
            None => {
                tx.prepare_cached(
                    "INSERT INTO learnings (pattern, error_type, fix, context, tags, tool, \
                     project, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        new.pattern,
                        new.error_type,
                        new.fix,
                        new.context,
                        new.tags.join(", "),
                        new.tool,
                        new.project,
                        now
                    ])
                })
                .map_err(sql(&path, CTX))?;
                (tx.last_insert_rowid(), false)
            }
        };
        let learning = get(&tx, id).map_err(sql(&path, CTX))?;
        tx.commit().map_err(sql(&path, CTX))?;
        let learning = learning.ok_or_else(|| StoreError::Malformed {
            what: format!("learning #{id}"),
            detail: "the row just written cannot be read back".to_owned(),
        })?;
        Ok(SavedLearning { learning, merged })
    }

    /// Learnings matching `query.text`, best bm25 rank first. Text with no
    /// searchable word matches nothing.
    pub fn search_learnings(&self, query: &LearningQuery<'_>) -> Result<Vec<Learning>, StoreError> {
        const CTX: &str = "searching learnings";
        let terms = fts_terms(query.text);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let expression = terms.join(if query.any_term { " OR " } else { " " });
        let tool = query.tool.map(|t| t.trim().to_lowercase());
        let limit = query.limit.clamp(1, MAX_LEARNINGS_LIMIT) as i64;
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM learnings_fts JOIN learnings l ON l.id = learnings_fts.rowid \
                 WHERE learnings_fts MATCH ?1 \
                 AND (?2 IS NULL OR l.project IS NULL OR l.project = ?2) \
                 AND (?3 IS NULL OR l.tool = '' OR l.tool = ?3) \
                 ORDER BY {RANK}, l.id DESC LIMIT ?4"
            ))
            .map_err(sql(&self.path, CTX))?;
        let rows = stmt
            .query_map(
                params![expression, scope_param(query.scope), tool, limit],
                learning_from_row,
            )
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql(&self.path, CTX))?;
        Ok(rows)
    }

    /// Learnings in `scope`, most recently used or saved first.
    pub fn list_learnings(
        &self,
        scope: LearningScope<'_>,
        limit: usize,
    ) -> Result<Vec<Learning>, StoreError> {
        const CTX: &str = "listing learnings";
        let limit = limit.clamp(1, MAX_LEARNINGS_LIMIT) as i64;
        self.conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM learnings l \
                 WHERE ?1 IS NULL OR l.project IS NULL OR l.project = ?1 \
                 ORDER BY COALESCE(l.last_used_at, l.created_at) DESC, l.id DESC LIMIT ?2"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![scope_param(scope), limit], learning_from_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(sql(&self.path, CTX))
    }

    /// How many learnings `scope` holds.
    pub fn count_learnings(&self, scope: LearningScope<'_>) -> Result<usize, StoreError> {
        const CTX: &str = "counting learnings";
        self.conn
            .prepare_cached(
                "SELECT COUNT(*) FROM learnings l \
                 WHERE ?1 IS NULL OR l.project IS NULL OR l.project = ?1",
            )
            .and_then(|mut stmt| stmt.query_row([scope_param(scope)], |row| row.get::<_, i64>(0)))
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(sql(&self.path, CTX))
    }

    /// One learning by id, whatever its scope.
    pub fn get_learning(&self, id: i64) -> Result<Option<Learning>, StoreError> {
        get(&self.conn, id).map_err(sql(&self.path, "reading a learning"))
    }

    /// Deletes one learning; `false` when no row has this id.
    pub fn delete_learning(&mut self, id: i64) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached("DELETE FROM learnings WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute([id]))
            .map(|n| n > 0)
            .map_err(sql(&self.path, "deleting a learning"))
    }

    /// Counts one use of each learning (`times_used` + 1, `last_used_at`
    /// now) and returns them as they are afterwards, in the order given
    /// (ids with no row are skipped). One transaction.
    pub fn mark_learnings_used(&mut self, ids: &[i64]) -> Result<Vec<Learning>, StoreError> {
        const CTX: &str = "counting uses of learnings";
        let path = self.path.clone();
        let tx = WriteUnit::begin(&self.conn).map_err(sql(&path, CTX))?;
        let now = now_ms();
        let mut used = Vec::with_capacity(ids.len());
        for &id in ids {
            tx.prepare_cached(
                "UPDATE learnings SET times_used = times_used + 1, last_used_at = ?2 WHERE id = ?1",
            )
            .and_then(|mut stmt| stmt.execute(params![id, now]))
            .map_err(sql(&path, CTX))?;
            if let Some(learning) = get(&tx, id).map_err(sql(&path, CTX))? {
                used.push(learning);
            }
        }
        tx.commit().map_err(sql(&path, CTX))?;
        Ok(used)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn new(pattern: &str, error_type: &str, fix: &str) -> NewLearning {
        NewLearning {
            pattern: pattern.into(),
            error_type: error_type.into(),
            fix: fix.into(),
            tool: "terminal".into(),
            ..NewLearning::default()
        }
    }

    fn search<'a>(store: &Store, text: &'a str, scope: LearningScope<'a>) -> Vec<i64> {
        store
            .search_learnings(&LearningQuery {
                text,
                any_term: false,
                scope,
                tool: None,
                limit: 10,
            })
            .unwrap()
            .iter()
            .map(|l| l.id)
            .collect()
    }

    #[test]
    fn saved_learnings_read_back_normalised() {
        let mut store = Store::open_in_memory().unwrap();
        let saved = store
            .save_learning(&NewLearning {
                pattern: "  error: linker `cc` not found ".into(),
                error_type: "Missing Dependency".into(),
                fix: "apt-get install -y build-essential".into(),
                context: "Debian images".into(),
                tags: vec!["Rust".into(), "linker, rust".into(), " ".into()],
                tool: "Terminal".into(),
                project: None,
            })
            .unwrap();
        assert!(!saved.merged);
        let l = saved.learning;
        assert_eq!(l.pattern, "error: linker `cc` not found");
        assert_eq!(l.error_type, "missing-dependency");
        assert_eq!(l.tags, vec!["rust", "linker"]);
        assert_eq!(l.tool, "terminal");
        assert_eq!((l.times_used, l.last_used_at), (0, None));
        assert_eq!(store.get_learning(l.id).unwrap(), Some(l.clone()));
        assert_eq!(store.get_learning(l.id + 1).unwrap(), None);
    }

    #[test]
    fn the_similarity_rule() {
        // Same words in another order and punctuation: one learning.
        assert_eq!(
            pattern_similarity(
                "error: linker `cc` not found",
                "linker 'cc' not found (error)"
            ),
            1.0
        );
        // Numbers read alike.
        assert_eq!(
            pattern_similarity("failed to bind port 8080", "Failed to bind port 3000"),
            1.0
        );
        // 5 of 7 words shared (0.71): just above the threshold.
        assert!(
            pattern_similarity(
                "cargo build: linker cc not found",
                "cargo test: linker cc not found"
            ) >= NEAR_DUPLICATE_SIMILARITY
        );
        // 3 of 6 shared (0.5): two learnings.
        assert!(
            pattern_similarity("npm install fails EACCES", "npm install fails ENOSPC disk")
                < NEAR_DUPLICATE_SIMILARITY
        );
        assert!(
            pattern_similarity(
                "permission denied writing /etc/hosts",
                "permission denied reading ~/.ssh/config"
            ) < 0.3
        );
        assert_eq!(pattern_similarity("!!!", " !!! "), 1.0);
        assert_eq!(pattern_similarity("!!!", "???"), 0.0);
    }

    #[test]
    fn a_near_duplicate_merges_into_the_existing_row() {
        let mut store = Store::open_in_memory().unwrap();
        let first = store
            .save_learning(&NewLearning {
                tags: vec!["rust".into()],
                context: "CI image".into(),
                ..new(
                    "error: linker `cc` not found",
                    "missing-dependency",
                    "install gcc",
                )
            })
            .unwrap()
            .learning;
        let again = store
            .save_learning(&NewLearning {
                tags: vec!["linker".into(), "rust".into()],
                ..new(
                    "Linker 'cc' not found: error",
                    "Missing dependency",
                    "apt-get install -y build-essential",
                )
            })
            .unwrap();
        assert!(again.merged);
        let merged = again.learning;
        assert_eq!(merged.id, first.id);
        assert_eq!(merged.pattern, first.pattern, "the pattern stays");
        assert_eq!(merged.fix, "apt-get install -y build-essential");
        assert_eq!(merged.context, "CI image", "an empty context keeps the old");
        assert_eq!(merged.tags, vec!["rust", "linker"]);
        assert_eq!(merged.times_used, 1);
        assert!(merged.last_used_at.is_some());
        assert_eq!(store.count_learnings(LearningScope::All).unwrap(), 1);
        // The index follows the update: the new fix is found, the old is not.
        assert_eq!(
            search(&store, "build-essential", LearningScope::All),
            vec![first.id]
        );
        assert!(search(&store, "gcc", LearningScope::All).is_empty());
    }

    #[test]
    fn another_tool_type_scope_or_pattern_adds_a_row() {
        let mut store = Store::open_in_memory().unwrap();
        let base = new("linker cc not found", "missing-dependency", "install gcc");
        store.save_learning(&base).unwrap();
        let others = [
            NewLearning {
                tool: "execute_code".into(),
                ..base.clone()
            },
            NewLearning {
                error_type: "wrong-flag".into(),
                ..base.clone()
            },
            NewLearning {
                project: Some("/work/app".into()),
                ..base.clone()
            },
            NewLearning {
                pattern: "linker ld64 crashed with signal 11".into(),
                ..base.clone()
            },
        ];
        for other in &others {
            assert!(!store.save_learning(other).unwrap().merged, "{other:?}");
        }
        assert_eq!(store.count_learnings(LearningScope::All).unwrap(), 5);
    }

    #[test]
    fn search_is_ranked_scoped_and_safe() {
        let mut store = Store::open_in_memory().unwrap();
        let global = store
            .save_learning(&new(
                "pytest: ModuleNotFoundError: No module named requests",
                "missing-module",
                "pip install requests",
            ))
            .unwrap()
            .learning;
        let mine = store
            .save_learning(&NewLearning {
                project: Some("/work/app".into()),
                ..new(
                    "make test fails: No module named app",
                    "wrong-cwd",
                    "run make from /work/app, not its parent",
                )
            })
            .unwrap()
            .learning;
        let theirs = store
            .save_learning(&NewLearning {
                project: Some("/work/other".into()),
                ..new("No module named other", "wrong-cwd", "cd /work/other")
            })
            .unwrap()
            .learning;
        let here = LearningScope::Project("/work/app");
        // AND: every term must match.
        assert_eq!(search(&store, "module requests", here), vec![global.id]);
        // Scope: the other project's learning is never seen from here.
        let mut seen = search(&store, "module", here);
        seen.sort_unstable();
        assert_eq!(seen, vec![global.id, mine.id]);
        assert_eq!(search(&store, "module", LearningScope::All).len(), 3);
        assert!(search(&store, "other", here).is_empty());
        assert_eq!(
            search(&store, "other", LearningScope::Project("/work/other")),
            vec![theirs.id]
        );
        // Any term, ranked: the row matching more terms comes first.
        let ranked = store
            .search_learnings(&LearningQuery {
                text: "No module named app make",
                any_term: true,
                scope: here,
                tool: Some("Terminal"),
                limit: 10,
            })
            .unwrap();
        assert_eq!(ranked[0].id, mine.id, "{ranked:?}");
        assert_eq!(ranked.len(), 2);
        // The tool filter keeps learnings of that tool (or of no tool).
        let none = store
            .search_learnings(&LearningQuery {
                text: "module",
                any_term: true,
                scope: here,
                tool: Some("read_file"),
                limit: 10,
            })
            .unwrap();
        assert!(none.is_empty(), "{none:?}");
        // FTS syntax in the input cannot break the query.
        for text in [
            "\"unbalanced",
            "NEAR(",
            "a AND",
            "col:x",
            "*",
            "(module",
            "",
        ] {
            search(&store, text, here);
        }
        assert_eq!(search(&store, "(module\" AND", here).len(), 2);
    }

    #[test]
    fn delete_and_mark_used() {
        let mut store = Store::open_in_memory().unwrap();
        let a = store
            .save_learning(&new("first failure", "x", "fix a"))
            .unwrap()
            .learning;
        let b = store
            .save_learning(&new("second problem entirely", "y", "fix b"))
            .unwrap()
            .learning;
        let used = store.mark_learnings_used(&[b.id, 999, a.id]).unwrap();
        assert_eq!(
            used.iter()
                .map(|l| (l.id, l.times_used))
                .collect::<Vec<_>>(),
            vec![(b.id, 1), (a.id, 1)]
        );
        let used = store.mark_learnings_used(&[b.id]).unwrap();
        assert_eq!(used[0].times_used, 2);
        // Most recently used first.
        let listed = store.list_learnings(LearningScope::All, 10).unwrap();
        assert_eq!(listed[0].id, b.id);
        assert!(store.delete_learning(a.id).unwrap());
        assert!(!store.delete_learning(a.id).unwrap());
        assert_eq!(store.get_learning(a.id).unwrap(), None);
        assert!(search(&store, "first", LearningScope::All).is_empty());
        assert_eq!(search(&store, "second", LearningScope::All), vec![b.id]);
        assert_eq!(store.count_learnings(LearningScope::All).unwrap(), 1);
    }
}
