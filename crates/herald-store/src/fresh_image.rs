//! A new database copied from an image rather than built statement by
//! statement.
//!
//! Running `schema.sql` on an empty file costs about 10 million instructions
//! (3–4 ms here): after each of its 41 statements SQLite parses the schema
//! entry it just wrote, and each FTS5 table creates its shadow tables through
//! SQL of its own. `build.rs` runs the same script once, at build time, with
//! the same SQLite, and the image it leaves (about 220 KB) is written to a new
//! `$HERALD_HOME` instead. The test `the_image_is_the_schema` proves the image
//! and the script give the same database.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The database `schema.sql` creates, in WAL mode, at its version.
pub(crate) const IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fresh.db"));

/// Writes the image at `path` when neither the database nor a WAL of it
/// exists, and says whether it did. Anything in the way (an existing file,
/// another process creating the same database, a file system without hard
/// links) leaves `path` to be opened (or created) the usual way, so a
/// failure here only costs the time saved.
pub(crate) fn lay_down(path: &Path) -> bool {
    if exists(path) || exists(&sibling(path, "-wal")) {
        return false;
    }
    let staged = sibling(path, &format!(".{}.new", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    // The mode SQLite gives the files it creates (before the umask).
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
    let written = options.open(&staged).and_then(|mut file| {
        file.write_all(IMAGE)?;
        // On disk before its name is: a crash must not leave a
        // database file of zeros behind the real name.
        file.sync_all()
    });
    // A link never replaces a file: when another process got there first,
    // its database stays and this one opens it.
    let laid = written.is_ok() && std::fs::hard_link(&staged, path).is_ok();
    let _ = std::fs::remove_file(&staged);
    laid
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// `path` with `suffix` added to its file name (`state.db` → `state.db-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rusqlite::Connection;

    use super::*;
    use crate::{NewSession, Store};

    /// Every schema object with its SQL, and the schema version.
    fn schema_of(conn: &Connection) -> (Vec<(String, String, Option<String>)>, i64) {
        let mut stmt = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
            .unwrap();
        let objects = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let version = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        (objects, version)
    }

    #[test]
    fn the_image_is_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        let copied = dir.path().join("copied.db");
        assert!(lay_down(&copied));
        let conn = Connection::open(&copied).unwrap();
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let built = Connection::open_in_memory().unwrap();
        built.execute_batch(include_str!("schema.sql")).unwrap();
        built
            .pragma_update(None, "user_version", crate::migrations::SCHEMA_VERSION)
            .unwrap();
        let (objects, version) = schema_of(&conn);
        assert_eq!(version, crate::migrations::SCHEMA_VERSION);
        assert!(objects.len() > 40, "only {} objects", objects.len());
        assert_eq!(
            (objects, version),
            schema_of(&built),
            "the image differs from schema.sql: rebuild (build.rs makes it)"
        );
    }

    #[test]
    fn a_new_store_starts_from_the_image_and_works() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home").join("state.db");
        let mut store = Store::open(&path).unwrap();
        // Nothing else was written yet: the file is the image.
        assert_eq!(std::fs::read(&path).unwrap(), IMAGE);
        #[cfg(unix)]
        {
            // With the permissions SQLite gives a file it creates.
            use std::os::unix::fs::PermissionsExt;
            let by_sqlite = dir.path().join("by_sqlite.db");
            Connection::open(&by_sqlite)
                .unwrap()
                .execute_batch("CREATE TABLE t (x)")
                .unwrap();
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), mode(&by_sqlite));
        }
        assert_eq!(
            store.schema_version().unwrap(),
            crate::migrations::SCHEMA_VERSION
        );
        store
            .create_session(&NewSession::for_test("ses_image"))
            .unwrap();
        store
            .append_messages(
                "ses_image",
                &[herald_protocol::Message::user("hello image")],
            )
            .unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.load_messages("ses_image").unwrap().len(), 1);
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.contains(".new"))
            .collect();
        assert!(left.is_empty(), "staged files left: {left:?}");
    }

    #[test]
    fn an_existing_file_or_wal_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        std::fs::write(&path, b"").unwrap();
        assert!(!lay_down(&path));
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let other = dir.path().join("other.db");
        std::fs::write(sibling(&other, "-wal"), b"x").unwrap();
        assert!(!lay_down(&other));
        assert!(!other.exists());
    }

    #[test]
    fn stores_opened_at_once_on_a_new_path_share_one_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open(&path).unwrap();
                    let session = format!("ses_{i}");
                    store
                        .create_session(&NewSession::for_test(&session))
                        .unwrap();
                    store
                        .append_messages(&session, &[herald_protocol::Message::user("x")])
                        .unwrap();
                    session
                })
            })
            .collect();
        let sessions: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let store = Store::open(&path).unwrap();
        for session in &sessions {
            assert_eq!(store.load_messages(session).unwrap().len(), 1);
        }
    }
}
