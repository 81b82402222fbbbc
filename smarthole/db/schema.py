"""The database's schema: every table as SQL text, and the migrations from each old version.

``opening`` opens a connection and brings the file to :data:`SCHEMA_VERSION` with these."""

from __future__ import annotations

from collections.abc import Callable
from sqlite3 import Connection

from .approvaltables import APPROVAL_TABLES
from .forktables import FORK_TABLES
from .memorytables import FORGET_TABLES, MEMORY_TABLES
from .records import KIND_CODES, KINDS, ROLES
from .scheduletables import SCHEDULE_TABLES
from .searchindex import SEARCH_TABLES, build_index
from .spendtables import SPEND_TABLES

SCHEMA_VERSION = 13

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
    tool_use_id TEXT NOT NULL,
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    agent_turn INTEGER NOT NULL,
    name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    runs INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (task_id, tool_use_id)
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

# Messages and turns (version 5): the tables that grow with every message, kept compact. A
# conversation is its integer ``key`` here (its rowid is not stable across VACUUM), a kind its
# code in records.KINDS (its role follows from it), a content that is one text block its text
# alone (``content`` NULL; JSON otherwise), a time integer microseconds (formats.micros).
MESSAGE_TABLES = """
CREATE TABLE IF NOT EXISTS message_rows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation INTEGER NOT NULL REFERENCES conversations (key) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    text TEXT,
    content TEXT,
    tool_use_id TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS message_rows_by_conversation ON message_rows (conversation, turn, id);
CREATE UNIQUE INDEX IF NOT EXISTS message_rows_by_conversation_tool_use
    ON message_rows (conversation, tool_use_id, kind) WHERE tool_use_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS turn_rows (
    conversation INTEGER NOT NULL REFERENCES conversations (key) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    message_id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    error TEXT,
    note TEXT,
    end_requested TEXT,
    PRIMARY KEY (conversation, number)
) WITHOUT ROWID;
"""


def _iso(column: str) -> str:
    """SQL making formats.iso's text of a time in integer microseconds."""
    return (
        f"strftime('%Y-%m-%dT%H:%M:%S', {column} / 1000000, 'unixepoch') "
        f"|| printf('.%06dZ', {column} % 1000000)"
    )


def _kind_names(column: str) -> str:
    cases = " ".join(f"WHEN {code} THEN '{kind}'" for code, kind in enumerate(KINDS))
    return f"CASE {column} {cases} END"


def _kind_codes(column: str) -> str:
    cases = " ".join(f"WHEN '{kind}' THEN {code}" for code, kind in enumerate(KINDS))
    return f"CASE {column} {cases} END"


_USER_ROLE = ", ".join(str(KIND_CODES[k]) for k, role in ROLES.items() if role == "user")

# The version 4 tables' shape, for reading the database by hand (and the tests' checks); the
# store itself reads the tables.
MESSAGE_VIEWS = f"""
CREATE VIEW IF NOT EXISTS messages AS SELECT m.id, c.id AS conversation_id, m.turn,
    CASE WHEN m.kind IN ({_USER_ROLE}) THEN 'user' ELSE 'assistant' END AS role,
    {_kind_names("m.kind")} AS kind,
    coalesce(m.content, json_array(json_object('type', 'text', 'text', m.text))) AS content,
    m.tool_use_id, {_iso("m.created_at")} AS created_at
    FROM message_rows m JOIN conversations c ON c.key = m.conversation;
CREATE VIEW IF NOT EXISTS turns AS SELECT c.id AS conversation_id, t.number, t.message_id,
    t.status, {_iso("t.started_at")} AS started_at,
    CASE WHEN t.finished_at IS NOT NULL THEN {_iso("t.finished_at")} END AS finished_at,
    t.error, t.note, t.end_requested
    FROM turn_rows t JOIN conversations c ON c.key = t.conversation;
"""

# Version 4 to 5: every row copied into the compact tables by the Python functions
# migrate() defines (exact: the same parse_time, the same text test as the store's writes).
# Rows of no conversation (none: foreign keys are on) would not be reachable, and are left out.
COMPACT_MESSAGES = (
    "ALTER TABLE conversations ADD COLUMN key INTEGER",
    "UPDATE conversations SET key = rowid",
    "CREATE UNIQUE INDEX IF NOT EXISTS conversations_by_key ON conversations (key)",
    *(s.strip() for s in MESSAGE_TABLES.split(";") if s.strip()),
    "INSERT INTO message_rows (id, conversation, turn, kind, text, content, tool_use_id, "
    f"created_at) SELECT m.id, c.key, m.turn, {_kind_codes('m.kind')}, "
    "smarthole_text(m.content), "
    "CASE WHEN smarthole_text(m.content) IS NULL THEN m.content END, "
    "m.tool_use_id, smarthole_micros(m.created_at) "
    "FROM messages m JOIN conversations c ON c.id = m.conversation_id ORDER BY m.id",
    # AUTOINCREMENT: never again an id that a deleted message had.
    "DELETE FROM sqlite_sequence WHERE name = 'message_rows'",
    "INSERT INTO sqlite_sequence (name, seq) "
    "SELECT 'message_rows', seq FROM sqlite_sequence WHERE name = 'messages'",
    "INSERT INTO turn_rows (conversation, number, message_id, status, started_at, finished_at, "
    "error, note, end_requested) SELECT c.key, t.number, t.message_id, t.status, "
    "smarthole_micros(t.started_at), smarthole_micros(t.finished_at), t.error, t.note, "
    "t.end_requested FROM turns t JOIN conversations c ON c.id = t.conversation_id",
    "DROP TABLE messages",
    "DROP TABLE turns",
)


def rekeyed(table: str, scope: str, place: str) -> tuple[str, ...]:
    """Rebuild tool-call table ``table`` (no table refers to it) keyed by its ``scope`` and
    the tool-use id: ids come from the model, unique only within a conversation or task."""
    columns = f"tool_use_id, {scope}, {place}, name, started_at, runs"
    parent = "conversations" if scope == "conversation_id" else "tasks"
    return (
        f"CREATE TABLE {table}_rekeyed (tool_use_id TEXT NOT NULL, {scope} TEXT NOT NULL "
        f"REFERENCES {parent} (id) ON DELETE CASCADE, {place} INTEGER NOT NULL, name TEXT NOT "
        "NULL, started_at TEXT NOT NULL, runs INTEGER NOT NULL DEFAULT 1, "
        f"PRIMARY KEY ({scope}, tool_use_id))",
        f"INSERT INTO {table}_rekeyed ({columns}) SELECT {columns} FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE {table}_rekeyed RENAME TO {table}",
    )


def statements(script: str) -> tuple[str, ...]:
    """The statements of ``script``, split at each ``;`` that ends a line (a trigger's body
    holds several, each ending its line too: they are split at ``END;`` only)."""
    found, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        stripped = line.strip()
        inside = any(part.lstrip().upper().startswith("CREATE TRIGGER") for part in current)
        if stripped.endswith(";") and (not inside or stripped.upper() == "END;"):
            found.append("\n".join(current).strip().rstrip(";"))
            current = []
    if "".join(current).strip():
        found.append("\n".join(current).strip())
    return tuple(found)


def add_outbox_extra(db: Connection) -> None:
    """The outbox's ``extra`` column (an item's own front matter), unless it is there already
    (a store of this version whose version number was set back)."""
    if not any(row[1] == "extra" for row in db.execute("PRAGMA table_info(outbox)")):
        db.execute("ALTER TABLE outbox ADD COLUMN extra TEXT")


# A step of a migration: SQL text, or a function of the connection (inside its transaction).
Step = str | Callable[[Connection], None]

# What turns a database of version N - 1 into version N. SCHEMA always creates the newest
# tables, so a new database starts at SCHEMA_VERSION and runs none of these.
MIGRATIONS: dict[int, tuple[Step, ...]] = {
    2: ("ALTER TABLE inbox ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0",),
    3: tuple(s.strip() for s in TASK_TABLES.split(";") if s.strip()),
    4: tuple(s.strip() for s in USAGE_TABLES.split(";") if s.strip()),
    5: COMPACT_MESSAGES,
    # A final reply after `smarthole retry` names the error reply it follows.
    6: ("ALTER TABLE outbox ADD COLUMN retry_of TEXT",),
    # Tool-use ids come from the model, unique only within a conversation (a task): keyed so.
    7: (
        "DROP INDEX IF EXISTS message_rows_by_tool_use",
        "CREATE UNIQUE INDEX IF NOT EXISTS message_rows_by_conversation_tool_use "
        "ON message_rows (conversation, tool_use_id, kind) WHERE tool_use_id IS NOT NULL",
        *rekeyed("tool_calls", "conversation_id", "turn"),
        *rekeyed("task_tool_calls", "task_id", "agent_turn"),
    ),
    # Full-text search: the index, its triggers, and what the store already holds indexed.
    8: (*statements(SEARCH_TABLES), build_index),
    # Approvals; an outbox item's extra front matter (an approval's id, tool, hash...).
    9: (*statements(APPROVAL_TABLES), add_outbox_extra),
    # Schedules: what fires when, and each slot taken.
    10: statements(SCHEDULE_TABLES),
    11: statements(FORK_TABLES),  # forks and replays of conversations
    12: statements(MEMORY_TABLES + FORGET_TABLES),  # memory's files, writes, profiles; forgets
    13: statements(SPEND_TABLES),  # each model call's reservation and cost; raised caps
}

# Every message moves its conversation's ``updated_at``, so no index holds that column: each
# one would be one more page written with every message. A channel has one open conversation
# at a time, and listing every conversation by it sorts a small table. Dropping the indexes
# that did needs no new schema version: an older smarthole only creates them again.
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
    end_reason TEXT,
    key INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS conversations_by_key ON conversations (key);
DROP INDEX IF EXISTS conversations_by_channel;
DROP INDEX IF EXISTS conversations_by_update;
CREATE INDEX IF NOT EXISTS conversations_of_channel ON conversations (channel, ended_at);
CREATE INDEX IF NOT EXISTS conversations_by_end ON conversations (ended_at);
CREATE INDEX IF NOT EXISTS conversations_needing_title ON conversations (title_state)
    WHERE title_state = 'pending';
CREATE INDEX IF NOT EXISTS conversations_needing_summary ON conversations (summary_state)
    WHERE summary_state = 'pending';
CREATE TABLE IF NOT EXISTS tool_calls (
    tool_use_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    runs INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (conversation_id, tool_use_id)
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
    state TEXT NOT NULL,
    retry_of TEXT,
    extra TEXT
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
    + APPROVAL_TABLES
    + USAGE_TABLES
    + MESSAGE_TABLES
    + MESSAGE_VIEWS
    + SCHEDULE_TABLES
    + FORK_TABLES
    + MEMORY_TABLES
    + FORGET_TABLES
    + SPEND_TABLES
    + SEARCH_TABLES
)
