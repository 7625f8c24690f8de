//! Builds `fresh.db`: the image of a new database at the latest schema,
//! made by running `src/schema.sql` through the same bundled SQLite the
//! store links. A new `$HERALD_HOME` copies the image instead of running
//! the schema's 41 statements (about 10 million instructions, most of them
//! SQLite parsing the schema again after each one).

use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed=src/schema.sql");
    println!("cargo::rerun-if-changed=build.rs");
    let schema = std::fs::read_to_string("src/schema.sql")?;
    // The first line names the version: "-- herald state database, schema version 18."
    let version: i64 = schema
        .lines()
        .next()
        .and_then(|line| line.rsplit(' ').next())
        .map(|word| word.trim_end_matches('.'))
        .ok_or("schema.sql does not start with its version line")?
        .parse()?;
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    let image = out.join("fresh.db");
    for stale in ["fresh.db", "fresh.db-wal", "fresh.db-shm"] {
        match std::fs::remove_file(out.join(stale)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err.into()),
            _ => {}
        }
    }
    let conn = rusqlite::Connection::open(&image)?;
    // As `Store::setup` opens it: WAL mode is kept in the file's header.
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if mode != "wal" {
        return Err(format!("the image is in {mode} mode, not WAL").into());
    }
    conn.execute_batch(&schema)?;
    conn.pragma_update(None, "user_version", version)?;
    // Closing the only connection folds the WAL into the file and removes it.
    conn.close().map_err(|(_, err)| err)?;
    if out.join("fresh.db-wal").exists() {
        return Err("the image's WAL was not folded in".into());
    }
    Ok(())
}
