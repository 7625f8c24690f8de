//! The schema, as an ordered, append-only list of migrations.
//!
//! `PRAGMA user_version` records how many steps a database has seen. Opening a
//! store applies the missing steps in order, each in its own `IMMEDIATE`
//! transaction together with the version bump, so a crash or a failing step
//! leaves the database at the previous version. Never edit a released step:
//! add a new one at the end (v4 agents registry, v5 todo state, v6 tool events,
//! v7 crash safety, v8 the stored event stream, v9 its per-tree sequence,
//! v10 permission decisions, v11 tool result images, v12 prompt history).
//!
//! A new, empty database skips the steps: it is created from `schema.sql`,
//! what the steps produce (see `schema.rs`). After adding a step, regenerate
//! that file with `HERALD_WRITE_SCHEMA=1 cargo test -p herald-store fresh_schema`;
//! a test fails until it matches.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{StoreError, sql};

/// One schema step: the SQL that moves a database from `version - 1` to `version`.
pub(crate) struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

/// v1: sessions and their messages.
///
/// `UNIQUE(session_id, seq)` doubles as the index on `messages(session_id, seq)`
/// used for ordered loads, windows and the `ON DELETE CASCADE` lookup.
const V1_SESSIONS_AND_MESSAGES: &str = r#"
CREATE TABLE sessions (
    id                    TEXT PRIMARY KEY,
    parent_session_id     TEXT,
    agent_id              TEXT,
    source                TEXT NOT NULL,
    cwd                   TEXT NOT NULL DEFAULT '',
    model                 TEXT NOT NULL DEFAULT '',
    provider              TEXT NOT NULL DEFAULT '',
    title                 TEXT,
    system_prompt         TEXT NOT NULL DEFAULT '',
    started_at            INTEGER NOT NULL,
    ended_at              INTEGER,
    end_reason            TEXT,
    last_active_at        INTEGER NOT NULL,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cached_tokens         INTEGER NOT NULL DEFAULT 0,
    cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd              REAL NOT NULL DEFAULT 0,
    message_count         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_cwd_started ON sessions(cwd, started_at);
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_last_active ON sessions(last_active_at);

CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    role         TEXT NOT NULL,
    content      TEXT NOT NULL DEFAULT '',
    tool_calls   TEXT,
    tool_call_id TEXT,
    tool_name    TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0,
    tokens       INTEGER,
    created_at   INTEGER NOT NULL,
    UNIQUE(session_id, seq)
);
"#;

/// v2: full-text index over message text, kept in step by triggers.
///
/// External content (`content='messages'`), so the text is stored once. Both
/// the message text and the tool-call JSON are indexed (a past command such as
/// `cargo build --release` usually lives only in the assistant's tool call);
/// bm25 weighs the tool-call column at half. The default `unicode61` separators
/// are kept on purpose: `foo-bar`, `v1.2.3` and `config.toml` are indexed as
/// their parts, and the query sanitiser turns such terms into phrases, so they
/// match exactly that sequence while `foo` alone still finds `foo-bar`.
const V2_FTS: &str = r#"
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content,
    tool_calls,
    content = 'messages',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)');

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content, tool_calls)
    VALUES (new.id, new.content, new.tool_calls);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_calls)
    VALUES ('delete', old.id, old.content, old.tool_calls);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, tool_calls ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_calls)
    VALUES ('delete', old.id, old.content, old.tool_calls);
    INSERT INTO messages_fts(rowid, content, tool_calls)
    VALUES (new.id, new.content, new.tool_calls);
END;

INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
"#;

/// v3: per-request token usage and cost.
const V3_USAGE: &str = r#"
CREATE TABLE usage (
    id                    INTEGER PRIMARY KEY,
    session_id            TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model                 TEXT NOT NULL,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cached_tokens         INTEGER NOT NULL DEFAULT 0,
    cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd              REAL,
    created_at            INTEGER NOT NULL
);
CREATE INDEX usage_session ON usage(session_id, created_at);
"#;

/// v4: the background/delegated agents registry.
///
/// One row per subagent; `session_id` is the child's own session (its stored
/// conversation), `parent_session_id` the session that spawned it, so a
/// resumed parent finds its unfinished background agents.
const V4_AGENTS: &str = r#"
CREATE TABLE agents (
    id                TEXT PRIMARY KEY,
    parent_agent_id   TEXT,
    parent_session_id TEXT NOT NULL,
    root_session_id   TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    depth             INTEGER NOT NULL,
    role              TEXT NOT NULL,
    goal              TEXT NOT NULL,
    context           TEXT,
    toolsets          TEXT,
    background        INTEGER NOT NULL DEFAULT 0,
    status            TEXT NOT NULL,
    exit_reason       TEXT,
    result            TEXT,
    error             TEXT,
    iterations        INTEGER NOT NULL DEFAULT 0,
    input_tokens      INTEGER NOT NULL DEFAULT 0,
    output_tokens     INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL NOT NULL DEFAULT 0,
    model             TEXT NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL,
    started_at        INTEGER,
    ended_at          INTEGER,
    delivered         INTEGER NOT NULL DEFAULT 0,
    spec              TEXT
);
CREATE INDEX agents_parent_session ON agents(parent_session_id, created_at);
CREATE INDEX agents_root_session ON agents(root_session_id, created_at);
CREATE INDEX agents_status ON agents(status, ended_at);
"#;

/// v5: a session's todo list, one JSON document per session.
const V5_TODOS: &str = r#"
CREATE TABLE todos (
    session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    items       TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
);
"#;

/// v6: events recorded with a session that are not conversation messages,
/// such as the tool calls an `execute_code` script made.
const V6_EVENTS: &str = r#"
CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX events_session ON events(session_id, id);
"#;

/// v7: crash safety. `session_leases` gives each session one writing process
/// (owner pid, its start time to tell a reused pid apart, a heartbeat);
/// `agents.call_id` links a child to the `delegate_task` call that spawned it,
/// so a resumed parent can rebuild that call's result from the journal;
/// `pending_results` holds each finished tool result of a batch until the
/// batch is stored as messages; `tool_processes` records the process groups
/// tools started, so the next run can end those a killed run left behind.
const V7_CRASH_SAFETY: &str = r#"
CREATE TABLE session_leases (
    session_id      TEXT PRIMARY KEY,
    owner_pid       INTEGER NOT NULL,
    owner_started   INTEGER NOT NULL DEFAULT 0,
    acquired_at     INTEGER NOT NULL,
    heartbeat_at    INTEGER NOT NULL
);
ALTER TABLE agents ADD COLUMN call_id TEXT;
CREATE INDEX agents_call ON agents(parent_session_id, call_id);
CREATE TABLE pending_results (
    session_id   TEXT NOT NULL,
    call_id      TEXT NOT NULL,
    content      TEXT NOT NULL,
    is_error     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (session_id, call_id)
);
CREATE TABLE tool_processes (
    pgid          INTEGER NOT NULL,
    session_id    TEXT NOT NULL,
    owner_pid     INTEGER NOT NULL,
    owner_started INTEGER NOT NULL DEFAULT 0,
    proc_started  INTEGER NOT NULL DEFAULT 0,
    background    INTEGER NOT NULL DEFAULT 0,
    command       TEXT NOT NULL DEFAULT '',
    log_path      TEXT,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (pgid, owner_pid)
);
CREATE INDEX tool_processes_session ON tool_processes(session_id);
"#;

/// v8: the whole event stream of a session, not only
/// `sandbox.call`: `AUTOINCREMENT` so ids only grow per database (never
/// reused after a delete; a replay "after id N" stays correct), and the
/// emitting agent beside each event. Existing rows keep their ids.
const V8_EVENT_STREAM: &str = r#"
CREATE TABLE events_v8 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    agent_id    TEXT NOT NULL DEFAULT 'root',
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
INSERT INTO events_v8 (id, session_id, kind, payload, created_at)
    SELECT id, session_id, kind, payload, created_at FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_v8 RENAME TO events;
CREATE INDEX events_session ON events(session_id, id);
"#;

/// v9: the event stream of a whole session tree, replayable in order: each
/// event names the root session of its tree and carries the sequence
/// number the emitting process gave it (monotonic per tree; one process owns
/// a tree at a time through its lease). Older rows get their own id as
/// sequence and their tree's root from the agents registry.
const V9_EVENT_SEQUENCE: &str = r#"
ALTER TABLE events ADD COLUMN root_session_id TEXT;
ALTER TABLE events ADD COLUMN seq INTEGER;
UPDATE events SET seq = id, root_session_id = COALESCE(
    (SELECT a.root_session_id FROM agents a WHERE a.session_id = events.session_id LIMIT 1),
    session_id);
CREATE INDEX events_tree ON events(root_session_id, seq);
"#;

/// v10: every permission decision: which agent of which session
/// called which tool, a digest of its arguments, what was decided, by which
/// rule and by whom. Not tied to `sessions` by a foreign key: `herald
/// permissions check` and a session's first calls are audited alike.
const V10_PERMISSION_DECISIONS: &str = r#"
CREATE TABLE permission_decisions (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments_digest TEXT NOT NULL,
    summary TEXT NOT NULL,
    decision TEXT NOT NULL,
    rule TEXT,
    reason TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX permission_decisions_session ON permission_decisions(session_id, id);
"#;

/// v11: images of tool results (JSON `[{"mime_type","data"}]`, NULL when
/// none) on messages and on the kept results of a running batch. Not part
/// of the full-text index: its triggers name `content` and `tool_calls`
/// only, so base64 is never indexed.
const V11_IMAGES: &str = r#"
ALTER TABLE messages ADD COLUMN images TEXT;
ALTER TABLE pending_results ADD COLUMN images TEXT;
"#;

/// v12: the prompts typed into the interactive composer, per working
/// directory, so ↑ and Ctrl-R recall them in the next session started there.
/// `id` orders them (newest last); the index serves "the latest N of a cwd".
const V12_PROMPT_HISTORY: &str = r#"
CREATE TABLE prompt_history (
    id          INTEGER PRIMARY KEY,
    cwd         TEXT NOT NULL,
    text        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX prompt_history_cwd ON prompt_history(cwd, id);
"#;

/// v13: learnings, the error memory: what failed, why and what
/// fixed it, shared by every session; `project` scopes a project-specific
/// fix (NULL: everywhere). Searched by FTS like messages. `tool` and
/// `error_type` are stored lowercase (see `learnings.rs`).
const V13_LEARNINGS: &str = r#"
CREATE TABLE learnings (
    id            INTEGER PRIMARY KEY,
    pattern       TEXT NOT NULL,
    error_type    TEXT NOT NULL DEFAULT '',
    fix           TEXT NOT NULL,
    context       TEXT NOT NULL DEFAULT '',
    tags          TEXT NOT NULL DEFAULT '',
    tool          TEXT NOT NULL DEFAULT '',
    project       TEXT,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER,
    times_used    INTEGER NOT NULL DEFAULT 0
);
-- Consolidation compares a new learning with those of its tool and kind.
CREATE INDEX learnings_kind ON learnings(tool, error_type);
CREATE VIRTUAL TABLE learnings_fts USING fts5(
    pattern,
    error_type,
    fix,
    context,
    tags,
    tool,
    content = 'learnings',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER learnings_fts_insert AFTER INSERT ON learnings BEGIN
    INSERT INTO learnings_fts(rowid, pattern, error_type, fix, context, tags, tool)
    VALUES (new.id, new.pattern, new.error_type, new.fix, new.context, new.tags, new.tool);
END;
CREATE TRIGGER learnings_fts_delete AFTER DELETE ON learnings BEGIN
    INSERT INTO learnings_fts(learnings_fts, rowid, pattern, error_type, fix, context, tags, tool)
    VALUES ('delete', old.id, old.pattern, old.error_type, old.fix, old.context, old.tags, old.tool);
END;
CREATE TRIGGER learnings_fts_update AFTER UPDATE OF pattern, error_type, fix, context, tags, tool ON learnings BEGIN
    INSERT INTO learnings_fts(learnings_fts, rowid, pattern, error_type, fix, context, tags, tool)
    VALUES ('delete', old.id, old.pattern, old.error_type, old.fix, old.context, old.tags, old.tool);
    INSERT INTO learnings_fts(rowid, pattern, error_type, fix, context, tags, tool)
    VALUES (new.id, new.pattern, new.error_type, new.fix, new.context, new.tags, new.tool);
END;
"#;

/// v14: checkpoints: one row per user turn of a session, taken
/// before the turn: `turn` (1-based), how many stored messages preceded it
/// (`message_count`: the conversation before the turn is the live history
/// of the messages with `seq <= message_count`), and the snapshot of the
/// working tree `cwd` in the shadow git repository under `$HERALD_HOME`
/// (`commit_id`; NULL with the reason in `note` when none was taken: a
/// read-only session, git missing, a failed or skipped snapshot).
/// `end_commit_id` and the stats are what the turn changed (its snapshot
/// at the turn's end against `commit_id`). A rewind to turn N marks the
/// rows of turns N and later `rewound_at` (kept, never deleted); only one
/// row per turn is live.
const V14_CHECKPOINTS: &str = r#"
CREATE TABLE checkpoints (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn           INTEGER NOT NULL,
    message_count  INTEGER NOT NULL,
    cwd            TEXT NOT NULL,
    commit_id      TEXT,
    end_commit_id  TEXT,
    files_changed  INTEGER NOT NULL DEFAULT 0,
    insertions     INTEGER NOT NULL DEFAULT 0,
    deletions      INTEGER NOT NULL DEFAULT 0,
    note           TEXT,
    created_at     INTEGER NOT NULL,
    rewound_at     INTEGER
);
CREATE UNIQUE INDEX checkpoints_live_turn ON checkpoints(session_id, turn) WHERE rewound_at IS NULL;
"#;

/// v15: a short summary of each ended session (the model's closing
/// paragraph from the end-of-session memory flush, else the latest
/// compaction summary, cut), searchable with its title.
///
/// `sessions_fts` indexes the title and summary of top-level sessions (a
/// subagent's title is its goal, already in the message index). It keeps its
/// own copy of the text with the `session_id`, and `sessions.search_rowid`
/// names the session's row in it, so updates and deletes find that row by
/// key. (External content on `sessions.rowid` would be smaller, but that
/// table has a text primary key: a `VACUUM` may renumber its rowids and
/// would silently attach one session's summary to another.) The update
/// trigger fires only when the title or summary really changed: every
/// message append sets the title with `coalesce`.
const V15_SESSION_SUMMARY: &str = r#"
ALTER TABLE sessions ADD COLUMN summary TEXT;
ALTER TABLE sessions ADD COLUMN search_rowid INTEGER;

CREATE VIRTUAL TABLE sessions_fts USING fts5(
    session_id UNINDEXED,
    title,
    summary,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions
WHEN new.parent_session_id IS NULL AND (new.title IS NOT NULL OR new.summary IS NOT NULL) BEGIN
    INSERT INTO sessions_fts(session_id, title, summary) VALUES (new.id, new.title, new.summary);
    UPDATE sessions SET search_rowid = last_insert_rowid() WHERE id = new.id;
END;
CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions
WHEN old.search_rowid IS NOT NULL BEGIN
    DELETE FROM sessions_fts WHERE rowid = old.search_rowid;
END;
CREATE TRIGGER sessions_fts_update AFTER UPDATE OF title, summary ON sessions
WHEN new.parent_session_id IS NULL
     AND (old.title IS NOT new.title OR old.summary IS NOT new.summary) BEGIN
    DELETE FROM sessions_fts WHERE rowid = old.search_rowid;
    INSERT INTO sessions_fts(session_id, title, summary) VALUES (new.id, new.title, new.summary);
    UPDATE sessions SET search_rowid = last_insert_rowid() WHERE id = new.id;
END;

INSERT INTO sessions_fts(rowid, session_id, title, summary)
    SELECT rowid, id, title, summary FROM sessions
    WHERE parent_session_id IS NULL AND (title IS NOT NULL OR summary IS NOT NULL);
UPDATE sessions SET search_rowid = rowid
    WHERE parent_session_id IS NULL AND (title IS NOT NULL OR summary IS NOT NULL);
"#;

/// v16: an assistant message's reasoning: Anthropic thinking blocks (sent
/// back unchanged across tool use) and streamed reasoning text, as JSON;
/// NULL for a message without any.
const V16_REASONING: &str = r#"
ALTER TABLE messages ADD COLUMN reasoning TEXT;
"#;

/// v17: the agents journal carries each agent's own and subtree usage
///. `own_cost_usd` is NULL when a request ran on a model without
/// a price (the v4 `cost_usd` is NOT NULL and stays, written as before);
/// the `tree_*` columns are NULL until the agent finishes (and for agents
/// that finished before this step: their subtree was never recorded).
/// Earlier rows keep their cost as the own cost and count their API calls
/// as requests.
const V17_AGENT_TOTALS: &str = r#"
ALTER TABLE agents ADD COLUMN cache_creation_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN requests INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN own_cost_usd REAL DEFAULT 0;
ALTER TABLE agents ADD COLUMN tree_input_tokens INTEGER;
ALTER TABLE agents ADD COLUMN tree_output_tokens INTEGER;
ALTER TABLE agents ADD COLUMN tree_cached_tokens INTEGER;
ALTER TABLE agents ADD COLUMN tree_cache_creation_tokens INTEGER;
ALTER TABLE agents ADD COLUMN tree_cost_usd REAL;
ALTER TABLE agents ADD COLUMN tree_requests INTEGER;
UPDATE agents SET own_cost_usd = cost_usd, requests = iterations;
"#;

/// v18: the message search index is brought up to date when it is searched,
/// not in the transaction that stores each message.
///
/// Indexing a message (FTS5 tokenising plus a segment write and merges at
/// each commit) cost more than everything else a turn stores: 41% of the
/// instructions of a turn with 13 KB tool results. `search_index_state`
/// holds a watermark: a message is in `messages_fts` exactly when its id is
/// at or below `indexed_upto`. Searching first indexes everything above it
/// in a few large batches (`Store::catch_up_search_index`), which also
/// writes fewer, larger segments. The triggers keep the invariant for rows
/// already indexed (edits and deletes) and for a new row whose id is at or
/// below the watermark (SQLite reuses the highest id after it is deleted).
/// Existing databases are fully indexed, so their watermark starts at the
/// newest message.
/// Statuses, exit reasons and deciders are typed: rows written before
/// carry only their words. A suspended agent's `exit_reason` was once
/// `suspended` (its status) and is `interrupted`; a person's decision was
/// once recorded as `user` and names the answer now.
/// A heartbeat per session: how often it wakes, in which hours, when next,
/// and how its last wake ended.
const V23_AGENT_WORKTREES: &str = r#"
CREATE TABLE agent_worktrees (
    agent_id    TEXT PRIMARY KEY,
    repo        TEXT NOT NULL,
    path        TEXT NOT NULL,
    branch      TEXT NOT NULL,
    base        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    removed_at  INTEGER
);
CREATE INDEX agent_worktrees_present ON agent_worktrees(removed_at, created_at);
"#;

const V22_HEARTBEATS: &str = r#"
CREATE TABLE heartbeats (
    session_id   TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    every_ms     INTEGER NOT NULL,
    active_hours TEXT,
    tz           TEXT NOT NULL,
    next_due_at  INTEGER NOT NULL,
    last_wake_at INTEGER,
    last_outcome TEXT,
    last_reply   TEXT,
    wakes        INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
"#;

const V21_CRON: &str = r#"
CREATE TABLE cron_jobs (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    schedule       TEXT NOT NULL,
    tz             TEXT NOT NULL,
    prompt         TEXT NOT NULL,
    cwd            TEXT NOT NULL,
    model          TEXT,
    toolsets       TEXT,
    mode           TEXT NOT NULL,
    budget_usd     REAL,
    skills         TEXT,
    resume_session INTEGER NOT NULL DEFAULT 0,
    session_id     TEXT,
    catch_up       TEXT NOT NULL DEFAULT 'once',
    overlap        TEXT NOT NULL DEFAULT 'skip',
    webhook_url    TEXT,
    webhook_secret_env TEXT,
    notify         INTEGER NOT NULL DEFAULT 0,
    paused         INTEGER NOT NULL DEFAULT 0,
    next_fire_at   INTEGER,
    last_run_at    INTEGER,
    last_state     TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE TABLE cron_runs (
    id                INTEGER PRIMARY KEY,
    job_id            INTEGER NOT NULL,
    scheduled_for     INTEGER NOT NULL,
    trigger           TEXT NOT NULL,
    state             TEXT NOT NULL,
    claimed_at        INTEGER NOT NULL,
    started_at        INTEGER,
    finished_at       INTEGER,
    owner_pid         INTEGER,
    owner_started     INTEGER,
    session_id        TEXT,
    result            TEXT,
    error             TEXT,
    cost_usd          REAL,
    tokens            INTEGER,
    delivery          TEXT NOT NULL DEFAULT 'none',
    delivery_attempts INTEGER NOT NULL DEFAULT 0,
    delivery_error    TEXT,
    delivered_at      INTEGER
);
CREATE INDEX cron_runs_by_job ON cron_runs(job_id, id);
CREATE INDEX cron_runs_open ON cron_runs(state) WHERE state IN ('claimed', 'running');
"#;

const V19_TYPED_WORDS: &str = r#"
UPDATE agents SET exit_reason = 'interrupted'
    WHERE exit_reason IS NOT NULL AND exit_reason NOT IN
        ('completed', 'max_iterations', 'interrupted', 'error', 'budget', 'timeout');
UPDATE permission_decisions
    SET decided_by = CASE decision WHEN 'deny' THEN 'user:deny' ELSE 'user:once' END
    WHERE decided_by = 'user';
UPDATE permission_decisions SET decided_by = 'policy'
    WHERE decided_by NOT IN ('policy', 'approval', 'yolo', 'headless', 'interrupt',
        'user:once', 'user:session', 'user:always', 'user:deny');
UPDATE permission_decisions SET decision = 'deny' WHERE decision NOT IN ('allow', 'deny');
"#;

const V18_DEFERRED_SEARCH_INDEX: &str = r#"
CREATE TABLE search_index_state (
    name         TEXT PRIMARY KEY,
    indexed_upto INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO search_index_state (name, indexed_upto)
    SELECT 'messages', coalesce(max(id), 0) FROM messages;

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN new.id <= coalesce((SELECT indexed_upto FROM search_index_state WHERE name = 'messages'), 0)
BEGIN
    INSERT INTO messages_fts(rowid, content, tool_calls)
    VALUES (new.id, new.content, new.tool_calls);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
WHEN old.id <= coalesce((SELECT indexed_upto FROM search_index_state WHERE name = 'messages'), 0)
BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_calls)
    VALUES ('delete', old.id, old.content, old.tool_calls);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, tool_calls ON messages
WHEN old.id <= coalesce((SELECT indexed_upto FROM search_index_state WHERE name = 'messages'), 0)
BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, tool_calls)
    VALUES ('delete', old.id, old.content, old.tool_calls);
    INSERT INTO messages_fts(rowid, content, tool_calls)
    VALUES (new.id, new.content, new.tool_calls);
END;
"#;

/// v20: which sessions still owe their end-of-session memory flush (see
/// `memory_flushes.rs`): marked when a conversation has enough user turns
/// for it, cleared when a flush of it is done, tried again at later starts
/// otherwise. `tools` is the JSON tool list the session's requests carry.
const V20_MEMORY_FLUSHES: &str = r#"
CREATE TABLE memory_flushes (
    session_id   TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    due          INTEGER NOT NULL,
    through_seq  INTEGER NOT NULL,
    tools        TEXT NOT NULL,
    status       TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX memory_flushes_due ON memory_flushes(due, updated_at);
"#;

/// Every schema step, in order. Append only.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "sessions and messages",
        sql: V1_SESSIONS_AND_MESSAGES,
    },
    Migration {
        version: 2,
        name: "full-text search index",
        sql: V2_FTS,
    },
    Migration {
        version: 3,
        name: "usage",
        sql: V3_USAGE,
    },
    Migration {
        version: 4,
        name: "agents registry",
        sql: V4_AGENTS,
    },
    Migration {
        version: 5,
        name: "todo state",
        sql: V5_TODOS,
    },
    Migration {
        version: 6,
        name: "session events",
        sql: V6_EVENTS,
    },
    Migration {
        version: 7,
        name: "crash safety: leases, delegate call ids, pending results, tool processes",
        sql: V7_CRASH_SAFETY,
    },
    Migration {
        version: 8,
        name: "event stream",
        sql: V8_EVENT_STREAM,
    },
    Migration {
        version: 9,
        name: "event sequence per session tree",
        sql: V9_EVENT_SEQUENCE,
    },
    Migration {
        version: 10,
        name: "permission decisions",
        sql: V10_PERMISSION_DECISIONS,
    },
    Migration {
        version: 11,
        name: "tool result images",
        sql: V11_IMAGES,
    },
    Migration {
        version: 12,
        name: "prompt history",
        sql: V12_PROMPT_HISTORY,
    },
    Migration {
        version: 13,
        name: "learnings",
        sql: V13_LEARNINGS,
    },
    Migration {
        version: 14,
        name: "checkpoints",
        sql: V14_CHECKPOINTS,
    },
    Migration {
        version: 15,
        name: "session summaries",
        sql: V15_SESSION_SUMMARY,
    },
    Migration {
        version: 16,
        name: "assistant reasoning",
        sql: V16_REASONING,
    },
    Migration {
        version: 17,
        name: "agent own and subtree usage",
        sql: V17_AGENT_TOTALS,
    },
    Migration {
        version: 18,
        name: "search index caught up when searched",
        sql: V18_DEFERRED_SEARCH_INDEX,
    },
    Migration {
        version: 19,
        name: "typed statuses, exit reasons and deciders",
        sql: V19_TYPED_WORDS,
    },
    Migration {
        version: 20,
        name: "memory flushes still due",
        sql: V20_MEMORY_FLUSHES,
    },
    Migration {
        version: 21,
        name: "scheduled jobs and their run ledger",
        sql: V21_CRON,
    },
    Migration {
        version: 22,
        name: "session heartbeats",
        sql: V22_HEARTBEATS,
    },
    Migration {
        version: 23,
        name: "agent worktrees",
        sql: V23_AGENT_WORKTREES,
    },
];

/// The schema version this build creates and understands.
pub const SCHEMA_VERSION: i64 = 23;

/// Reads `PRAGMA user_version`.
pub(crate) fn current_version(conn: &Connection, path: &str) -> Result<i64, StoreError> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sql(path, "reading the schema version"))
}

/// Brings `conn` up to the last step of `steps`.
///
/// All pending steps run in one write transaction (one commit: a new store
/// is created in one go), each inside its own savepoint: a failing step is
/// rolled back alone and the steps before it are kept. The version is
/// re-read inside the transaction, so two processes opening the same new
/// file at once apply every step exactly once.
pub(crate) fn migrate(
    conn: &mut Connection,
    path: &str,
    steps: &[Migration],
) -> Result<(), StoreError> {
    let latest = steps.last().map_or(0, |m| m.version);
    let found = current_version(conn, path)?;
    if found > latest {
        return Err(StoreError::SchemaTooNew {
            path: path.to_owned(),
            found,
            supported: latest,
        });
    }
    if found == latest {
        return Ok(());
    }
    let mut tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql(path, "starting a schema migration"))?;
    let now: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sql(path, "reading the schema version"))?;
    let mut failure = None;
    for step in steps.iter().filter(|m| m.version > now) {
        let fail = |source| StoreError::Migration {
            path: path.to_owned(),
            version: step.version,
            name: step.name,
            source,
        };
        let applied = tx.savepoint().and_then(|point| {
            point.execute_batch(step.sql)?;
            point.pragma_update(None, "user_version", step.version)?;
            point.commit()
        });
        if let Err(source) = applied {
            // Dropping the savepoint rolled this step back; the steps
            // before it are committed below.
            failure = Some(fail(source));
            break;
        }
    }
    tx.commit().map_err(|source| StoreError::Migration {
        path: path.to_owned(),
        version: latest,
        name: "committing the schema steps",
        source,
    })?;
    failure.map_or(Ok(()), Err)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_and_match_the_constant() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.name);
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(SCHEMA_VERSION));
    }

    #[test]
    fn a_failing_step_rolls_back_and_keeps_the_previous_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        let steps = [
            Migration {
                version: 1,
                name: "ok",
                sql: "CREATE TABLE a (x INTEGER);",
            },
            Migration {
                version: 2,
                name: "broken",
                sql: "CREATE TABLE b (y INTEGER); THIS IS NOT SQL;",
            },
        ];
        let err = migrate(&mut conn, ":memory:", &steps).unwrap_err();
        assert!(
            matches!(err, StoreError::Migration { version: 2, .. }),
            "{err}"
        );
        assert_eq!(current_version(&conn, ":memory:").unwrap(), 1);
        let b_exists: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'b'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(b_exists, 0, "the failed step's table must be rolled back");
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        let err = migrate(&mut conn, "x.db", MIGRATIONS).unwrap_err();
        assert!(matches!(err, StoreError::SchemaTooNew { found: 99, .. }));
        assert!(err.to_string().contains("upgrade herald"));
    }
}
