//! One write method's all-or-nothing unit, and the group of writes the
//! store thread commits together.
//!
//! Alone, a write method's unit is its own `BEGIN IMMEDIATE` transaction:
//! it takes the write lock before it reads, so another process cannot
//! change what it read before it writes. Inside a group (see
//! [`Store::begin_group`]) the unit is a savepoint: it still rolls back on
//! its own when the method fails, and its writes become durable with the
//! group's one `COMMIT`. Every commit writes each page it changed to the
//! write-ahead log again, so one commit for many small writes saves most of
//! that work when many sessions write at once.

use std::ops::Deref;

use rusqlite::Connection;

use crate::error::{StoreError, sql};
use crate::store::Store;

/// A write method's unit of work: commit it with [`WriteUnit::commit`];
/// dropping it uncommitted rolls its writes back.
pub(crate) struct WriteUnit<'c> {
    conn: &'c Connection,
    nested: bool,
    finished: bool,
}

impl<'c> WriteUnit<'c> {
    /// Starts a unit: a savepoint inside an open transaction, else an
    /// immediate transaction of its own.
    pub(crate) fn begin(conn: &'c Connection) -> rusqlite::Result<Self> {
        let nested = !conn.is_autocommit();
        conn.execute_batch(if nested {
            "SAVEPOINT write_unit"
        } else {
            "BEGIN IMMEDIATE"
        })?;
        Ok(Self {
            conn,
            nested,
            finished: false,
        })
    }

    /// A unit inside this one, which fails and rolls back on its own
    /// (bookkeeping whose failure must not cost the main write).
    pub(crate) fn part(&self) -> rusqlite::Result<WriteUnit<'c>> {
        WriteUnit::begin(self.conn)
    }

    /// Keeps the unit's writes: commits its transaction, or releases its
    /// savepoint into the enclosing one.
    pub(crate) fn commit(mut self) -> rusqlite::Result<()> {
        self.finished = true;
        self.conn.execute_batch(if self.nested {
            "RELEASE write_unit"
        } else {
            "COMMIT"
        })
    }
}

impl Deref for WriteUnit<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for WriteUnit<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Errors are ignored: SQLite may already have rolled the whole
        // transaction back after the failure that got us here.
        let _ = self.conn.execute_batch(if self.nested {
            "ROLLBACK TO write_unit; RELEASE write_unit"
        } else {
            "ROLLBACK"
        });
    }
}

impl Store {
    /// Opens a group: every write method until [`Store::commit_group`]
    /// joins one transaction, which holds the write lock (waiting for
    /// another process's like any write). For the thread that owns the
    /// store and runs queued writes: it answers their callers after the
    /// commit, so nothing is reported saved before it is.
    pub fn begin_group(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(sql(&self.path, "starting a group of writes"))
    }

    /// Whether a group is open. False after [`Store::commit_group`], and
    /// also when SQLite rolled the group back itself after a failure (a
    /// full disk, an I/O error): then the writes since
    /// [`Store::begin_group`] are lost.
    pub fn in_group(&self) -> bool {
        !self.conn.is_autocommit()
    }

    /// Commits the open group; on failure the group is rolled back and
    /// none of its writes is kept.
    pub fn commit_group(&mut self) -> Result<(), StoreError> {
        let committed = self
            .conn
            .execute_batch("COMMIT")
            .map_err(sql(&self.path, "committing a group of writes"));
        if committed.is_err() && self.in_group() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        committed
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        conn
    }

    fn count(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_unit_alone_is_its_own_transaction() {
        let conn = table();
        let unit = WriteUnit::begin(&conn).unwrap();
        unit.execute("INSERT INTO t VALUES (1)", []).unwrap();
        unit.commit().unwrap();
        assert!(conn.is_autocommit());
        assert_eq!(count(&conn), 1);
        {
            let unit = WriteUnit::begin(&conn).unwrap();
            unit.execute("INSERT INTO t VALUES (2)", []).unwrap();
        }
        assert!(conn.is_autocommit());
        assert_eq!(count(&conn), 1, "a dropped unit rolls back");
    }

    #[test]
    fn inside_a_transaction_a_unit_rolls_back_alone_and_commits_with_it() {
        let conn = table();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let kept = WriteUnit::begin(&conn).unwrap();
        kept.execute("INSERT INTO t VALUES (1)", []).unwrap();
        {
            let part = kept.part().unwrap();
            part.execute("INSERT INTO t VALUES (2)", []).unwrap();
        }
        kept.commit().unwrap();
        {
            let dropped = WriteUnit::begin(&conn).unwrap();
            dropped.execute("INSERT INTO t VALUES (3)", []).unwrap();
        }
        assert!(!conn.is_autocommit(), "the enclosing transaction is open");
        conn.execute_batch("COMMIT").unwrap();
        let rows: Vec<i64> = conn
            .prepare("SELECT x FROM t")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, vec![1]);
    }

    #[test]
    fn a_group_that_cannot_commit_keeps_none_of_its_writes() {
        let mut store = Store::open_in_memory().unwrap();
        store.begin_group().unwrap();
        assert!(store.in_group());
        // A foreign key checked at commit makes the commit fail.
        store
            .conn
            .execute_batch(
                "PRAGMA defer_foreign_keys = ON; \
                 INSERT INTO messages (session_id, seq, role, content, created_at) \
                 VALUES ('ses_missing', 1, 'user', 'x', 0);",
            )
            .unwrap();
        let err = store.commit_group().unwrap_err();
        assert!(err.to_string().contains("committing a group"), "{err}");
        assert!(!store.in_group(), "the failed group was left open");
        let rows: i64 = store
            .conn
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 0);
    }

    #[test]
    fn the_sub_journals_of_units_in_a_group_stay_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("state.db")).unwrap();
        let temp_store: i64 = store
            .conn
            .pragma_query_value(None, "temp_store", |row| row.get(0))
            .unwrap();
        assert_eq!(temp_store, 2, "temp_store is not MEMORY");
    }

    #[test]
    fn the_page_cache_holds_the_pages_of_a_group() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("state.db")).unwrap();
        let cache_size: i64 = store
            .conn
            .pragma_query_value(None, "cache_size", |row| row.get(0))
            .unwrap();
        assert_eq!(cache_size, -4096, "the page cache is not 4 MiB");
    }
}
