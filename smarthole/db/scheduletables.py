"""The schedule tables (version 10), as SQL text: ``schema`` creates and migrates them, and
``db.schedules`` reads and writes them."""

# Schedules (version 10). A schedule comes from config.toml (kept in step at each start and
# reload), from the agent's schedule_message tool (it belongs to its conversation) or from
# `smarthole schedule add`. A fire takes its slot before its message exists: the primary key
# makes each slot fire once, and the message id it names makes the message once.
SCHEDULE_TABLES = """
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY,
    name TEXT UNIQUE,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    expression TEXT NOT NULL,
    timezone TEXT NOT NULL,
    text TEXT NOT NULL,
    channel TEXT NOT NULL,
    conversation_mode TEXT NOT NULL,
    conversation_id TEXT,
    agents TEXT,
    missed TEXT NOT NULL,
    deliver INTEGER NOT NULL DEFAULT 1,
    state TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    last_slot_at TEXT,
    next_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS schedule_fires (
    schedule_id TEXT NOT NULL,
    slot_at TEXT NOT NULL,
    message_id TEXT NOT NULL UNIQUE,
    reason TEXT NOT NULL,
    missed_slots INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    fired_at TEXT NOT NULL,
    PRIMARY KEY (schedule_id, slot_at)
);
CREATE INDEX IF NOT EXISTS schedule_fires_by_state ON schedule_fires (state);
"""
