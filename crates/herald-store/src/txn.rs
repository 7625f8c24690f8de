//! Write transactions for the store's per-turn paths, with their control
//! statements prepared once.
//!
//! `rusqlite::Transaction` runs `BEGIN`, `COMMIT`, `SAVEPOINT` and `RELEASE`
//! through `execute_batch`, which parses the text again every time. Every
//! agent turn commits two or three transactions, so here the statements come
//! from the connection's statement cache instead. The saving is modest
//! (about 11,000 instructions per model request in the 60-turn benchmark;
//! most of a commit's cost is the commit itself), but it is on every turn.

use std::ops::Deref;

use rusqlite::Connection;

/// An open `BEGIN IMMEDIATE` transaction on a connection. Dropped without
/// [`WriteTxn::commit`] (an error on the way), it rolls back.
pub(crate) struct WriteTxn<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> WriteTxn<'c> {
    /// Takes the write lock now (`BEGIN IMMEDIATE`), so a busy database
    /// fails here, through the busy handler, rather than at the first write.
    /// `&mut` so nothing else can use the connection meanwhile.
    pub(crate) fn begin(conn: &'c mut Connection) -> rusqlite::Result<Self> {
        run(conn, "BEGIN IMMEDIATE")?;
        Ok(Self { conn, open: true })
    }

    /// Commits. On failure the transaction is rolled back when `self` drops.
    pub(crate) fn commit(mut self) -> rusqlite::Result<()> {
        run(self.conn, "COMMIT")?;
        self.open = false;
        Ok(())
    }

    /// Runs `part` under a savepoint: its changes stay when it returns `Ok`
    /// and are undone alone when it returns `Err`, leaving the rest of the
    /// transaction. The outer error is the savepoint's own failure.
    pub(crate) fn part<T, E>(
        &self,
        part: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> rusqlite::Result<Result<T, E>> {
        run(self.conn, "SAVEPOINT part")?;
        let result = part(self.conn);
        if result.is_err() {
            run(self.conn, "ROLLBACK TO part")?;
        }
        run(self.conn, "RELEASE part")?;
        Ok(result)
    }
}

impl Deref for WriteTxn<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for WriteTxn<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            // Nothing to report to: the caller already has the error that
            // brought it here.
            let _ = run(self.conn, "ROLLBACK");
        }
    }
}

/// Steps a cached control statement.
fn run(conn: &Connection, statement: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(statement)?.execute([]).map(drop)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn table() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("t.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER NOT NULL)")
            .unwrap();
        (dir, conn)
    }

    fn values(conn: &Connection) -> Vec<i64> {
        let mut stmt = conn.prepare("SELECT v FROM t ORDER BY v").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_committed_transaction_keeps_its_rows_and_a_dropped_one_none() {
        let (_dir, mut conn) = table();
        let txn = WriteTxn::begin(&mut conn).unwrap();
        txn.execute("INSERT INTO t VALUES (1)", []).unwrap();
        txn.commit().unwrap();
        let txn = WriteTxn::begin(&mut conn).unwrap();
        txn.execute("INSERT INTO t VALUES (2)", []).unwrap();
        drop(txn);
        assert!(
            conn.is_autocommit(),
            "the dropped transaction is still open"
        );
        assert_eq!(values(&conn), vec![1]);
        // The cached statements serve the next transactions too.
        for v in 3..6 {
            let txn = WriteTxn::begin(&mut conn).unwrap();
            txn.execute("INSERT INTO t VALUES (?1)", [v]).unwrap();
            txn.commit().unwrap();
        }
        assert_eq!(values(&conn), vec![1, 3, 4, 5]);
    }

    #[test]
    fn a_failed_part_is_undone_alone() {
        let (_dir, mut conn) = table();
        let txn = WriteTxn::begin(&mut conn).unwrap();
        txn.execute("INSERT INTO t VALUES (1)", []).unwrap();
        let failed = txn
            .part(|c| {
                c.execute("INSERT INTO t VALUES (2)", [])?;
                // NOT NULL fails after the first insert of the part.
                c.execute("INSERT INTO t VALUES (NULL)", []).map(drop)
            })
            .unwrap();
        assert!(failed.is_err());
        txn.part(|c| c.execute("INSERT INTO t VALUES (3)", []).map(drop))
            .unwrap()
            .unwrap();
        txn.execute("INSERT INTO t VALUES (4)", []).unwrap();
        txn.commit().unwrap();
        assert_eq!(values(&conn), vec![1, 3, 4]);
    }

    #[test]
    fn a_busy_database_fails_at_begin_and_leaves_no_transaction() {
        let (dir, mut conn) = table();
        let mut other = Connection::open(dir.path().join("t.db")).unwrap();
        let holder = WriteTxn::begin(&mut other).unwrap();
        let err = WriteTxn::begin(&mut conn).err().unwrap();
        assert_eq!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy)
        );
        assert!(conn.is_autocommit());
        drop(holder);
        let txn = WriteTxn::begin(&mut conn).unwrap();
        txn.execute("INSERT INTO t VALUES (7)", []).unwrap();
        txn.commit().unwrap();
        assert_eq!(values(&conn), vec![7]);
    }
}
