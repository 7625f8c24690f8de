//! The one error type of the store. Every message names the path or id involved
//! and says what the user can do about it.

use std::path::PathBuf;

use rusqlite::ErrorCode;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory that should hold the database could not be created.
    #[error(
        "cannot create directory {path} for the session database: {source}; \
         check its permissions or set HERALD_HOME to a writable directory"
    )]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Another connection held a lock the store needed: for longer than the
    /// busy timeout, or in a way SQLite reports without waiting.
    #[error(
        "the session database {path} is locked by another process ({} while {context}); \
         close other herald processes using it, or point HERALD_HOME at a separate directory",
        describe_wait(*.waited)
    )]
    Locked {
        path: String,
        context: &'static str,
        /// How long the store really waited for the lock before giving up.
        waited: std::time::Duration,
    },

    /// The file is not a SQLite database or its pages are damaged.
    #[error(
        "the session database {path} is corrupt or not a SQLite database ({detail}); \
         move it aside (for example rename it to state.db.bak) and herald will create a fresh one"
    )]
    Corrupt { path: String, detail: String },

    /// SQLite could not open or write the file (permissions, read-only mount).
    #[error(
        "cannot open the session database {path} for writing ({detail}); \
         check the file and directory permissions, or set HERALD_HOME to a writable directory"
    )]
    Unwritable { path: String, detail: String },

    /// The disk holding the database is full.
    #[error(
        "the disk holding the session database {path} is full; free some space \
         or prune old sessions with `herald sessions prune --older-than 30d`"
    )]
    DiskFull { path: String },

    /// The database was created by a newer herald with a schema this build does not know.
    #[error(
        "the session database {path} has schema version {found}, but this herald only knows up to \
         version {supported}; upgrade herald, or set HERALD_HOME to use a different store"
    )]
    SchemaTooNew {
        path: String,
        found: i64,
        supported: i64,
    },

    /// A migration step failed; its transaction was rolled back.
    #[error(
        "upgrading the session database {path} to schema version {version} ({name}) failed: {source}; \
         the database was left unchanged at the previous version. Back it up and report this, or move it aside"
    )]
    Migration {
        path: String,
        version: i64,
        name: &'static str,
        #[source]
        source: rusqlite::Error,
    },

    /// No session has this id.
    #[error("no session with id '{0}'; `herald sessions list` shows the stored sessions")]
    UnknownSession(String),

    /// No agent with this id is in the registry.
    #[error("no agent '{0}'; `herald agents list` shows the stored agents")]
    UnknownAgent(String),

    /// `create_session` was given an id that is already taken.
    #[error(
        "a session with id '{0}' already exists; use a new id (or resume the existing session)"
    )]
    SessionExists(String),

    /// `add_cron_job` was given a name that is taken.
    #[error(
        "a job named '{0}' exists; pick another name, or change it with `herald cron edit {0}`"
    )]
    JobExists(String),

    /// No scheduled job has this name.
    #[error("no job named '{0}'; `herald cron list` shows the jobs")]
    UnknownJob(String),

    /// A message id was given together with a session it does not belong to.
    #[error(
        "message {message_id} is not in session '{session_id}'; pass a message id \
         returned for that session by a search or an overview"
    )]
    MessageNotInSession { session_id: String, message_id: i64 },

    /// A stored row could not be turned back into a value (hand-edited database?).
    #[error("stored data for {what} is malformed: {detail}")]
    Malformed { what: String, detail: String },

    /// Reading an import file or writing an export failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An import file cannot be imported (empty, unknown format, a line
    /// that cannot be read, no messages); nothing was stored.
    #[error("cannot import {path}: {detail}; nothing was imported")]
    BadImport { path: PathBuf, detail: String },

    /// Any other SQLite failure, with what the store was doing at the time.
    #[error("session database {path}: {context} failed: {source}")]
    Sqlite {
        path: String,
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
}

/// Returns a closure that turns a rusqlite error into a [`StoreError`],
/// classifying the failures a user can act on (lock, corruption, permissions,
/// full disk) and keeping `context` for the rest.
pub(crate) fn sql<'a>(
    path: &'a str,
    context: &'static str,
) -> impl FnOnce(rusqlite::Error) -> StoreError + 'a {
    move |source| classify(path, context, source)
}

/// "gave up after 5.0 s", or that SQLite refused without waiting.
fn describe_wait(waited: std::time::Duration) -> String {
    if waited.is_zero() {
        "SQLite reported the lock without waiting".to_owned()
    } else {
        format!("gave up after {:.1} s", waited.as_secs_f64())
    }
}

/// See [`sql`].
pub(crate) fn classify(path: &str, context: &'static str, source: rusqlite::Error) -> StoreError {
    let path = path.to_owned();
    match source.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
            path,
            context,
            waited: crate::busy::take_waited(),
        },
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
            path,
            detail: source.to_string(),
        },
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
            StoreError::Unwritable {
                path,
                detail: source.to_string(),
            }
        }
        Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
        _ => StoreError::Sqlite {
            path,
            context,
            source,
        },
    }
}
