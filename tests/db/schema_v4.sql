-- The schema of version 4 (smarthole/db/schema.py's SCHEMA at d8104da), to build real old
-- databases in tests of the migrations.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    title TEXT,
    title_pinned INTEGER NOT NULL DEFAULT 0,
    title_state TEXT NOT NULL DEFAULT 'none',
    summary TEXT,
    summary_state TEXT NOT NULL DEFAULT 'none',
    turns INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at TEXT,
    end_reason TEXT
);
CREATE INDEX IF NOT EXISTS conversations_by_channel
    ON conversations (channel, ended_at, updated_at);
CREATE INDEX IF NOT EXISTS conversations_by_update ON conversations (updated_at);
CREATE INDEX IF NOT EXISTS conversations_by_end ON conversations (ended_at);
CREATE INDEX IF NOT EXISTS conversations_needing_title ON conversations (title_state)
    WHERE title_state = 'pending';
CREATE INDEX IF NOT EXISTS conversations_needing_summary ON conversations (summary_state)
    WHERE summary_state = 'pending';
CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    message_id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    error TEXT,
    note TEXT,
    end_requested TEXT,
    PRIMARY KEY (conversation_id, number)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_use_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, turn, id);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_tool_use
    ON messages (tool_use_id, kind) WHERE tool_use_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS tool_calls (
    tool_use_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    runs INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS plugin_data (
    plugin TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (plugin, key)
);
CREATE TABLE IF NOT EXISTS plugin_data_corrupt (
    plugin TEXT NOT NULL, key TEXT NOT NULL, value TEXT, found_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inbox (
    message_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    source_name TEXT NOT NULL,
    claimed_path TEXT,
    payload TEXT NOT NULL,
    channel TEXT NOT NULL,
    conversation_id TEXT,
    turn INTEGER,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_error TEXT,
    sort_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    failed_path TEXT,
    duplicates INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS inbox_by_status ON inbox (status, channel, sort_at);
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT PRIMARY KEY,
    in_reply_to TEXT NOT NULL,
    conversation_id TEXT,
    channel TEXT NOT NULL,
    turn INTEGER,
    kind TEXT NOT NULL,
    waiting_for_reply INTEGER NOT NULL,
    text TEXT NOT NULL,
    file_name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    state TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_by_reply ON outbox (in_reply_to, created_at);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    at TEXT NOT NULL,
    conversation_id TEXT,
    channel TEXT,
    turn INTEGER,
    message_id TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_conversation ON events (conversation_id, id);

CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    started_by TEXT NOT NULL UNIQUE,
    task TEXT NOT NULL,
    agents TEXT NOT NULL,
    max_turns INTEGER NOT NULL,
    status TEXT NOT NULL,
    abort_requested INTEGER NOT NULL DEFAULT 0,
    note TEXT,
    result TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, created_at);
CREATE INDEX IF NOT EXISTS tasks_by_conversation ON tasks (conversation_id, turn);
CREATE TABLE IF NOT EXISTS task_turns (
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    agent TEXT NOT NULL,
    text TEXT NOT NULL,
    tool_calls TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (task_id, idx)
);
CREATE TABLE IF NOT EXISTS task_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    agent_turn INTEGER NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_use_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS task_messages_by_turn ON task_messages (task_id, agent_turn, id);
CREATE TABLE IF NOT EXISTS task_tool_calls (
    tool_use_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    agent_turn INTEGER NOT NULL,
    name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    runs INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    conversation_id TEXT,
    turn INTEGER,
    task_id TEXT,
    agent TEXT,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_input_tokens INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS usage_by_time ON usage (at);
CREATE INDEX IF NOT EXISTS usage_by_conversation ON usage (conversation_id, turn);
