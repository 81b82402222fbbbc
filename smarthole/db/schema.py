"""The database file: its schema, and how a connection to it is opened."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..errors import StoreError
from ..fsutil import PRIVATE_FILE, make_private

SCHEMA_VERSION = 4

# Agent teams (version 3). A task belongs to the human turn that started it; its agent turns and
# their tool loops live here, never among the human conversation's messages.
TASK_TABLES = """
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
"""

# Usage (version 4): one row per model response, as the API counted it. Titles and summaries
# have no task; a human turn's entry agent has no agent name. No foreign key: what was spent
# stays spent when `prune` removes the conversation.
USAGE_TABLES = """
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
"""

# What turns a database of version N - 1 into version N. SCHEMA always creates the newest
# tables, so a new database starts at SCHEMA_VERSION and runs none of these.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: ("ALTER TABLE inbox ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0",),
    3: tuple(s.strip() for s in TASK_TABLES.split(";") if s.strip()),
    4: tuple(s.strip() for s in USAGE_TABLES.split(";") if s.strip()),
}

SCHEMA = (
    """
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
"""
    + TASK_TABLES
    + USAGE_TABLES
)


def connect(path: Path, *, check: bool) -> sqlite3.Connection:
    _make_private(path)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    db.row_factory = sqlite3.Row
    try:
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")
        if check:
            (result,) = db.execute("PRAGMA quick_check").fetchone()
            if result != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {result}")
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _make_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does, whatever the umask.

    SQLite gives its -wal and -shm files the database file's own mode, so they follow.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        make_private(path.with_name(path.name + suffix))


def migrate(db: sqlite3.Connection) -> None:
    # CREATE ... IF NOT EXISTS is idempotent, so two processes opening a new database at once
    # are harmless; the busy timeout serialises them.
    db.executescript(SCHEMA)
    db.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then find it done
    try:
        version = _version(db)
        if version is None:  # a new database: SCHEMA made the newest tables
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif version > SCHEMA_VERSION:
            raise StoreError(
                f"the database was written by a newer smarthole "
                f"(schema {version} > {SCHEMA_VERSION})"
            )
        elif version < SCHEMA_VERSION:
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target]:
                    db.execute(statement)
            db.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _version(db: sqlite3.Connection) -> int | None:
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else None
