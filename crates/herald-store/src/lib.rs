//! SQLite state for herald: sessions, their messages and event streams,
//! per-request usage, and the FTS5 index behind `session_search` and
//! `herald sessions search`.
//!
//! The store is synchronous on purpose: SQLite calls are short and blocking,
//! so callers own a [`Store`] on a dedicated thread (or behind a mutex inside
//! `spawn_blocking`) rather than paying for an async wrapper on every call.
//!
//! # Conventions
//!
//! * **Timestamps** are `INTEGER` milliseconds since the Unix epoch (UTC)
//!   everywhere (`started_at`, `ended_at`, `last_active_at`, `created_at`).
//!   Integers keep ordering exact and cheap; divide by 1000 for seconds.
//! * **Durability.** The database runs in WAL mode with `synchronous=NORMAL`.
//!   Every write method commits its transaction before returning, so once
//!   [`Store::append_messages`] returns, the messages survive `kill -9` of the
//!   process: the commit has been written to the WAL file (the OS holds it
//!   even if the process dies). Only a power loss or kernel crash before the
//!   WAL is next synced to disk (at checkpoint) can lose the latest commits;
//!   that is the trade-off `NORMAL` makes for commit latency. Inside a group
//!   opened with [`Store::begin_group`], writes are durable at
//!   [`Store::commit_group`] instead.
//! * **Search** is FTS5 with bm25 ranking under a time budget, grouped one hit
//!   per session; see [`Store::search`]. Measure with
//!   `cargo run -p herald-store --release --example store_bench`.
//! * **Schema** is versioned with `PRAGMA user_version` and an append-only list
//!   of migrations, each applied in its own transaction (see `migrations.rs`).

mod agents;
mod busy;
mod checkpoints;
mod cron;
mod error;
mod events;
mod heartbeats;
mod id_prefix;
mod import;
mod learnings;
mod leases;
mod memory_flushes;
mod messages;
mod migrations;
mod owner;
mod pending;
mod permissions;
mod processes;
mod prompts;
mod prune_plan;
mod records;
mod sanitize;
mod schema;
mod search;
mod search_index;
mod sessions;
mod store;
mod todos;
mod usage;
mod usage_report;
mod worktrees;
mod write_unit;

pub mod bench;

pub use agents::{AgentFilter, AgentFinish, AgentRecord, NewAgent};
pub use checkpoints::{ChangeStats, CheckpointRecord, CheckpointReferences, NewCheckpoint};
pub use cron::{CronJob, CronJobSpec, CronRun, RunEnd};
pub use error::StoreError;
pub use events::{NewEvent, StoredEvent};
pub use heartbeats::Heartbeat;
pub use id_prefix::{IdMatch, PREFIX_CANDIDATES};
pub use import::{
    Format as ImportFormat, ImportMode, ImportReport, ImportedSession, MalformedRecord,
};
pub use learnings::{
    Learning, LearningQuery, LearningScope, MAX_LEARNING_TAGS, MAX_LEARNINGS_LIMIT,
    NEAR_DUPLICATE_SIMILARITY, NewLearning, SavedLearning, near_duplicate, normalize_error_type,
    normalize_tags, pattern_similarity,
};
pub use leases::{LeaseHolder, LeaseOutcome};
pub use memory_flushes::{FlushState, MAX_DEFERRED_ATTEMPTS};
pub use messages::TurnStep;
pub use migrations::SCHEMA_VERSION;
pub use owner::ProcessIdentity;
pub use pending::PendingResult;
pub use permissions::{DecidedBy, NewDecision, Ruling, StoredDecision};
pub use processes::ToolProcess;
pub use prompts::MAX_PROMPTS_PER_CWD;
pub use prune_plan::SessionTree;
pub use records::{
    ListFilter, MessageWindow, NewSession, SessionOverview, SessionRecord, SessionSource,
    StoredMessage, UsageRecord,
};
pub use sanitize::sanitize_fts_query;
pub use search::{
    ActiveBetween, DEFAULT_SEARCH_BUDGET, DEFAULT_SEARCH_LIMIT, DEFAULT_WINDOW, MAX_SEARCH_LIMIT,
    MAX_WINDOW, MatchMode, SearchHit, SearchRequest, SearchSort,
};
pub use store::{Store, new_id};
pub use usage_report::{UsageGrouping, UsageRow};
pub use worktrees::AgentWorktree;
