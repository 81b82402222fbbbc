"""The memory's tables and the forget jobs' (version 11), as SQL text: ``schema`` creates and
migrates them, ``db.memory`` and ``db.forgetting`` read and write them."""

# Memory (version 11): files by path, their writes, and each conversation's profile as it
# stood when the conversation began (so its system prompt is the same bytes every turn).
MEMORY_TABLES = """
CREATE TABLE IF NOT EXISTS memory_files (
    path TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    lines TEXT NOT NULL,
    size INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_writes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    operation TEXT NOT NULL,
    by TEXT NOT NULL,
    agent TEXT,
    conversation_id TEXT,
    turn INTEGER,
    sources TEXT NOT NULL,
    tool_use_id TEXT,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_writes_by_path ON memory_writes (path);
CREATE TABLE IF NOT EXISTS memory_profiles (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    lines TEXT NOT NULL
);
"""

# Forgets (version 11): what a committed forget still has to remove outside the database.
FORGET_TABLES = """
CREATE TABLE IF NOT EXISTS forget_jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    files TEXT NOT NULL,
    blobs TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""
