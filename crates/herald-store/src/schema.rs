//! Creating a new database at the latest schema in one step.
//!
//! Replaying every migration on an empty file costs several milliseconds:
//! each `ALTER TABLE` makes SQLite re-parse the whole schema, and a new
//! `$HERALD_HOME` pays that before its first model request. A new database
//! instead runs `schema.sql`, the schema the migrations produce, dumped from
//! a migrated database. The test `the_fresh_schema_is_the_migrated_one`
//! proves both paths give the same database, and tells how to regenerate
//! the file after adding a migration (the dump is test code: only the
//! test writes the file).

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::{StoreError, sql};
use crate::migrations::{MIGRATIONS, current_version, migrate};

/// The latest schema, as [`dump`] writes it.
const FRESH_SCHEMA: &str = include_str!("schema.sql");

/// The version `schema.sql` is at (its first line says so).
const FRESH_VERSION: i64 = crate::migrations::SCHEMA_VERSION;

/// Brings `conn` to the latest schema: a database without any object is
/// created from [`FRESH_SCHEMA`] in one transaction; any other is migrated
/// step by step.
pub(crate) fn create_or_migrate(conn: &mut Connection, path: &str) -> Result<(), StoreError> {
    if current_version(conn, path)? != 0 || !is_empty(conn, path)? {
        return migrate(conn, path, MIGRATIONS);
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql(path, "starting the schema creation"))?;
    // Another process may have created it while this one waited for the lock.
    let now: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sql(path, "reading the schema version"))?;
    if now == 0 && is_empty(&tx, path)? {
        let fail = |source| StoreError::Migration {
            path: path.to_owned(),
            version: FRESH_VERSION,
            name: "creating the schema",
            source,
        };
        tx.execute_batch(FRESH_SCHEMA).map_err(fail)?;
        tx.pragma_update(None, "user_version", FRESH_VERSION)
            .map_err(fail)?;
    }
    tx.commit().map_err(|source| StoreError::Migration {
        path: path.to_owned(),
        version: FRESH_VERSION,
        name: "committing the schema",
        source,
    })?;
    // Created by someone else at an older version: finish it step by step.
    migrate(conn, path, MIGRATIONS)
}

/// Whether the database holds no schema object at all.
fn is_empty(conn: &Connection, path: &str) -> Result<bool, StoreError> {
    conn.query_row("SELECT 1 FROM sqlite_master LIMIT 1", [], |_| Ok(()))
        .optional()
        .map(|found| found.is_none())
        .map_err(sql(path, "reading the schema"))
}

#[cfg(test)]
/// The FTS5 shadow tables SQLite creates with each virtual table.
const FTS5_SHADOWS: &[&str] = &["_data", "_idx", "_content", "_docsize", "_config"];

#[cfg(test)]
/// The schema of `conn` as SQL that recreates it on an empty database:
/// every table, index, trigger and virtual table in creation order (SQLite's
/// own and FTS5's shadow tables left out, as they create themselves), then
/// each FTS5 table's configuration (such as its `rank` function).
pub(crate) fn dump(conn: &Connection) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(
        "SELECT name, sql FROM sqlite_master
         WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
         ORDER BY rowid",
    )?;
    let objects: Vec<(String, String)> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let virtual_tables: Vec<&str> = objects
        .iter()
        .filter(|(_, sql)| sql.starts_with("CREATE VIRTUAL TABLE"))
        .map(|(name, _)| name.as_str())
        .collect();
    let is_shadow = |name: &str| {
        virtual_tables.iter().any(|vt| {
            name.strip_prefix(vt)
                .is_some_and(|rest| FTS5_SHADOWS.contains(&rest))
        })
    };
    let mut out = format!(
        "-- herald state database, schema version {}.\n\
         -- Generated from the migrations in migrations.rs by\n\
         -- `HERALD_WRITE_SCHEMA=1 cargo test -p herald-store fresh_schema`; do not edit.\n",
        current_user_version(conn)?
    );
    for (name, sql) in &objects {
        if !is_shadow(name) {
            out.push('\n');
            out.push_str(sql);
            out.push_str(";\n");
        }
    }
    for vt in virtual_tables {
        let mut config = conn.prepare(&format!(
            "SELECT k, v FROM \"{vt}_config\" WHERE k != 'version' ORDER BY k"
        ))?;
        let rows: Vec<(String, rusqlite::types::Value)> = config
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (key, value) in rows {
            out.push_str(&format!(
                "\nINSERT INTO {vt}({vt}, rank) VALUES ({}, {});\n",
                quote(&rusqlite::types::Value::Text(key)),
                quote(&value)
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
fn current_user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

#[cfg(test)]
/// `value` as an SQL literal.
fn quote(value: &rusqlite::types::Value) -> String {
    use rusqlite::types::Value;
    match value {
        Value::Null => "NULL".to_owned(),
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => r.to_string(),
        Value::Text(t) => format!("'{}'", t.replace('\'', "''")),
        Value::Blob(b) => format!(
            "X'{}'",
            b.iter().map(|x| format!("{x:02X}")).collect::<String>()
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::migrations::Migration;

    /// Every step applied one by one, for comparison with the fresh schema.
    fn migrated(steps: &[Migration]) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, ":memory:", steps).unwrap();
        conn
    }

    fn fresh() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        create_or_migrate(&mut conn, ":memory:").unwrap();
        conn
    }

    /// The schema file is what the migrations make. After adding a
    /// migration, regenerate it with
    /// `HERALD_WRITE_SCHEMA=1 cargo test -p herald-store fresh_schema`.
    #[test]
    fn the_fresh_schema_is_the_migrated_one() {
        let expected = dump(&migrated(MIGRATIONS)).unwrap();
        if std::env::var_os("HERALD_WRITE_SCHEMA").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/schema.sql");
            std::fs::write(path, &expected).unwrap();
        }
        assert!(
            FRESH_SCHEMA == expected,
            "src/schema.sql is not the schema the migrations make; regenerate it with \
             `HERALD_WRITE_SCHEMA=1 cargo test -p herald-store fresh_schema`"
        );
        // And running it gives that schema back, at the latest version.
        let created = fresh();
        assert_eq!(dump(&created).unwrap(), expected);
        assert_eq!(
            current_version(&created, ":memory:").unwrap(),
            FRESH_VERSION
        );
    }

    /// Shadow tables and their contents match too, so the FTS indexes of
    /// both databases behave the same.
    #[test]
    fn fresh_schema_fts_tables_and_shadows_match_the_migrated_ones() {
        let list = |conn: &Connection| -> Vec<(String, String, String)> {
            let mut stmt = conn
                .prepare("SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY name")
                .unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let (a, b) = (migrated(MIGRATIONS), fresh());
        assert_eq!(list(&a), list(&b));
        let config = |conn: &Connection| -> Vec<(String, String)> {
            let mut stmt = conn
                .prepare("SELECT k, CAST(v AS TEXT) FROM messages_fts_config ORDER BY k")
                .unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(config(&a), config(&b));
        assert!(
            config(&b)
                .iter()
                .any(|(k, v)| k == "rank" && v.contains("bm25")),
            "{:?}",
            config(&b)
        );
    }

    #[test]
    fn a_database_at_an_older_version_is_migrated_not_recreated() {
        let mut conn = migrated(&MIGRATIONS[..16]);
        conn.execute(
            "INSERT INTO sessions (id, source, started_at, last_active_at) VALUES ('s', 'cli', 1, 1)",
            [],
        )
        .unwrap();
        create_or_migrate(&mut conn, ":memory:").unwrap();
        assert_eq!(current_version(&conn, ":memory:").unwrap(), FRESH_VERSION);
        let kept: i64 = conn
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, 1);
    }

    /// A v17 database had every message indexed by its triggers: v18 starts
    /// its watermark at the newest message, so nothing is indexed twice and
    /// later messages wait for the next search.
    #[test]
    fn the_search_index_watermark_starts_at_the_newest_indexed_message() {
        let mut conn = migrated(&MIGRATIONS[..17]);
        conn.execute_batch(
            "INSERT INTO sessions (id, source, started_at, last_active_at) VALUES ('s', 'cli', 1, 1);
             INSERT INTO messages (session_id, seq, role, content, created_at) VALUES ('s', 0, 'user', 'old quokka', 1);
             INSERT INTO messages (session_id, seq, role, content, created_at) VALUES ('s', 1, 'assistant', 'old wombat', 1);",
        )
        .unwrap();
        create_or_migrate(&mut conn, ":memory:").unwrap();
        let upto: i64 = conn
            .query_row(
                "SELECT indexed_upto FROM search_index_state WHERE name = 'messages'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let newest: i64 = conn
            .query_row("SELECT max(id) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(upto, newest);
        conn.execute(
            "INSERT INTO messages (session_id, seq, role, content, created_at) VALUES ('s', 2, 'user', 'new dingo', 1)",
            [],
        )
        .unwrap();
        let indexed: i64 = conn
            .query_row("SELECT count(*) FROM messages_fts_docsize", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(indexed, 2, "the new message waits for a search");
        // The index itself is sound (comparing it with the content table,
        // rank 1, would report the waiting message as missing).
        conn.execute(
            "INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')",
            [],
        )
        .unwrap();
    }

    #[test]
    fn a_version_zero_file_with_tables_is_not_taken_for_a_new_one() {
        // Not herald's: a table but no version. Migrating fails on the
        // existing table rather than mixing two schemas silently.
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE sessions (x INTEGER);")
            .unwrap();
        let err = create_or_migrate(&mut conn, "other.db").unwrap_err();
        assert!(
            matches!(err, StoreError::Migration { version: 1, .. }),
            "{err}"
        );
        assert_eq!(current_version(&conn, "other.db").unwrap(), 0);
    }
}
