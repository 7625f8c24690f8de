-- herald state database, schema version 23.
-- Generated from the migrations in migrations.rs by
-- `HERALD_WRITE_SCHEMA=1 cargo test -p herald-store fresh_schema`; do not edit.

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
, summary TEXT, search_rowid INTEGER);

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
    created_at   INTEGER NOT NULL, images TEXT, reasoning TEXT,
    UNIQUE(session_id, seq)
);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content,
    tool_calls,
    content = 'messages',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

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
, call_id TEXT, cache_creation_tokens INTEGER NOT NULL DEFAULT 0, requests INTEGER NOT NULL DEFAULT 0, own_cost_usd REAL DEFAULT 0, tree_input_tokens INTEGER, tree_output_tokens INTEGER, tree_cached_tokens INTEGER, tree_cache_creation_tokens INTEGER, tree_cost_usd REAL, tree_requests INTEGER);

CREATE INDEX agents_parent_session ON agents(parent_session_id, created_at);

CREATE INDEX agents_root_session ON agents(root_session_id, created_at);

CREATE INDEX agents_status ON agents(status, ended_at);

CREATE TABLE todos (
    session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    items       TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE session_leases (
    session_id      TEXT PRIMARY KEY,
    owner_pid       INTEGER NOT NULL,
    owner_started   INTEGER NOT NULL DEFAULT 0,
    acquired_at     INTEGER NOT NULL,
    heartbeat_at    INTEGER NOT NULL
);

CREATE INDEX agents_call ON agents(parent_session_id, call_id);

CREATE TABLE pending_results (
    session_id   TEXT NOT NULL,
    call_id      TEXT NOT NULL,
    content      TEXT NOT NULL,
    is_error     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL, images TEXT,
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

CREATE TABLE "events" (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    agent_id    TEXT NOT NULL DEFAULT 'root',
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_at  INTEGER NOT NULL
, root_session_id TEXT, seq INTEGER);

CREATE INDEX events_session ON events(session_id, id);

CREATE INDEX events_tree ON events(root_session_id, seq);

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

CREATE TABLE prompt_history (
    id          INTEGER PRIMARY KEY,
    cwd         TEXT NOT NULL,
    text        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE INDEX prompt_history_cwd ON prompt_history(cwd, id);

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

CREATE TABLE search_index_state (
    name         TEXT PRIMARY KEY,
    indexed_upto INTEGER NOT NULL
) WITHOUT ROWID;

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

INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)');
