"""The full-text search index: the FTS5 table, the triggers that keep it, its first build.

One FTS5 table, ``search_index``, indexes every message row (the person's, the entry agent's,
tool results, notes) and the ``search_docs`` rows: titles, summaries, team task texts, team
agent turns and their tool results. Triggers on the source tables write it, so whatever stores
a row indexes it in the same transaction, and a deleted conversation leaves no entry behind.

The index is *external content*: it keeps no copy of a message's text, only its tokens; the
view ``search_text`` gives FTS5 the text back (for snippets) by document id. A message is its
own ``message_rows.id``; a ``search_docs`` row has a negative id, so the two never meet.
"""

from __future__ import annotations

import logging
import sqlite3

from .records import KIND_CODES

logger = logging.getLogger(__name__)


def _message_body(row: str, *, text: bool = True) -> str:
    """SQL: the searchable text of message row ``row`` (``new``, ``old`` or an alias): its
    text, else its content's text blocks and tool results' text (never tool inputs, images).
    ``text``: the row has a ``text`` column (``message_rows``; a task message has not)."""
    blocks = f"json_each({row}.content)"
    kind = "json_extract(b.value, '$.type')"
    return (
        (f"CASE WHEN {row}.text IS NOT NULL THEN {row}.text ELSE (" if text else "(")
        + "SELECT group_concat(t, char(10)) FROM ("
        f"SELECT json_extract(b.value, '$.text') AS t FROM {blocks} b WHERE {kind} = 'text' "
        "UNION ALL SELECT json_extract(b.value, '$.content') "
        f"FROM {blocks} b WHERE {kind} = 'tool_result' "
        "AND json_type(b.value, '$.content') = 'text' "
        f"UNION ALL SELECT json_extract(c.value, '$.text') FROM {blocks} b, "
        "json_each(b.value, '$.content') c "
        f"WHERE {kind} = 'tool_result' AND json_type(b.value, '$.content') = 'array' "
        "AND json_extract(c.value, '$.type') = 'text'))" + (" END" if text else "")
    )


def _micros_of(column: str) -> str:
    """SQL: integer microseconds of an ISO time column (to the millisecond)."""
    return f"CAST(round((julianday({column}) - 2440587.5) * 86400000) AS INTEGER) * 1000"


_K = KIND_CODES
# Who said a message, and the role ``--role`` filters by (NULL: only found unfiltered).
MESSAGE_ROLE = (
    f"CASE m.kind WHEN {_K['user']} THEN 'human' WHEN {_K['tool_result']} THEN 'tool' "
    f"WHEN {_K['note']} THEN NULL WHEN {_K['error']} THEN NULL ELSE 'agent' END"
)
MESSAGE_WHO = (
    f"CASE m.kind WHEN {_K['user']} THEN 'person' WHEN {_K['tool_result']} THEN 'tool' "
    f"WHEN {_K['note']} THEN 'smarthole' WHEN {_K['error']} THEN 'smarthole' ELSE 'agent' END"
)

# Sources of search_docs rows.
TITLE, SUMMARY, TASK, TEAM_TURN, TEAM_TOOL = 1, 2, 3, 4, 5
_NEXT_DOC = "(SELECT coalesce(min(doc), 0) - 1 FROM search_docs)"
_DOC_COLUMNS = "doc, conversation, source, role, who, task_id, body, created_at"
_TASK_KEY = (
    "(SELECT c.key FROM tasks t JOIN conversations c ON c.id = t.conversation_id "
    "WHERE t.id = new.task_id)"
)


def _conversation_text(column: str, source: int) -> str:
    """The trigger that keeps a conversation's title (or summary) in search_docs."""
    return f"""
CREATE TRIGGER IF NOT EXISTS search_{column} AFTER UPDATE OF {column} ON conversations
WHEN old.{column} IS NOT new.{column} BEGIN
    DELETE FROM search_docs WHERE conversation = new.key AND source = {source};
    INSERT INTO search_docs ({_DOC_COLUMNS}) SELECT {_NEXT_DOC}, new.key, {source}, NULL,
        '{column}', NULL, new.{column}, {_micros_of("new.updated_at")}
        WHERE new.{column} != '' AND new.key IS NOT NULL;
END"""


SEARCH_TABLES = f"""
CREATE TABLE IF NOT EXISTS search_docs (
    doc INTEGER PRIMARY KEY,
    conversation INTEGER NOT NULL REFERENCES conversations (key) ON DELETE CASCADE,
    source INTEGER NOT NULL,
    role TEXT,
    who TEXT NOT NULL,
    task_id TEXT,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS search_docs_by_conversation ON search_docs (conversation, source);
CREATE VIEW IF NOT EXISTS search_text (doc, body) AS
    SELECT id, body FROM (SELECT m.id, {_message_body("m")} AS body FROM message_rows m)
    WHERE body != ''
    UNION ALL SELECT doc, body FROM search_docs;
CREATE VIRTUAL TABLE IF NOT EXISTS search_index USING fts5 (
    body, content = 'search_text', content_rowid = 'doc'
);
CREATE TRIGGER IF NOT EXISTS search_message_added AFTER INSERT ON message_rows BEGIN
    INSERT INTO search_index (rowid, body)
    SELECT new.id, body FROM (SELECT {_message_body("new")} AS body) WHERE body != '';
END;
CREATE TRIGGER IF NOT EXISTS search_message_deleted AFTER DELETE ON message_rows BEGIN
    INSERT INTO search_index (search_index, rowid, body)
    SELECT 'delete', old.id, body FROM (SELECT {_message_body("old")} AS body) WHERE body != '';
END;
CREATE TRIGGER IF NOT EXISTS search_message_changed AFTER UPDATE OF text, content
ON message_rows BEGIN
    INSERT INTO search_index (search_index, rowid, body)
    SELECT 'delete', old.id, body FROM (SELECT {_message_body("old")} AS body) WHERE body != '';
    INSERT INTO search_index (rowid, body)
    SELECT new.id, body FROM (SELECT {_message_body("new")} AS body) WHERE body != '';
END;
CREATE TRIGGER IF NOT EXISTS search_doc_added AFTER INSERT ON search_docs BEGIN
    INSERT INTO search_index (rowid, body) VALUES (new.doc, new.body);
END;
CREATE TRIGGER IF NOT EXISTS search_doc_deleted AFTER DELETE ON search_docs BEGIN
    INSERT INTO search_index (search_index, rowid, body) VALUES ('delete', old.doc, old.body);
END;
{_conversation_text("title", TITLE)};
{_conversation_text("summary", SUMMARY)};
CREATE TRIGGER IF NOT EXISTS search_task_added AFTER INSERT ON tasks BEGIN
    INSERT INTO search_docs ({_DOC_COLUMNS}) SELECT {_NEXT_DOC}, c.key, {TASK}, 'team', 'task',
        new.id, new.task, {_micros_of("new.created_at")}
        FROM conversations c WHERE c.id = new.conversation_id AND new.task != '';
END;
CREATE TRIGGER IF NOT EXISTS search_team_turn_added AFTER INSERT ON task_turns BEGIN
    INSERT INTO search_docs ({_DOC_COLUMNS}) SELECT {_NEXT_DOC}, {_TASK_KEY}, {TEAM_TURN},
        'team', new.agent, new.task_id, new.text, {_micros_of("new.created_at")}
        WHERE new.text != '' AND {_TASK_KEY} IS NOT NULL;
END;
CREATE TRIGGER IF NOT EXISTS search_team_tool_added AFTER INSERT ON task_messages
WHEN new.kind = 'tool_result' BEGIN
    INSERT INTO search_docs ({_DOC_COLUMNS}) SELECT {_NEXT_DOC}, {_TASK_KEY}, {TEAM_TOOL},
        'tool', 'tool', new.task_id, body, {_micros_of("new.created_at")}
        FROM (SELECT {_message_body("new", text=False)} AS body)
        WHERE body != '' AND {_TASK_KEY} IS NOT NULL;
END
"""

# search_docs rows for what an older store holds (the triggers make them from now on).
_EXISTING_DOCS = (
    f"SELECT key, {TITLE}, NULL, 'title', NULL, title, {_micros_of('updated_at')} "
    "FROM conversations WHERE title != '' AND key IS NOT NULL",
    f"SELECT key, {SUMMARY}, NULL, 'summary', NULL, summary, {_micros_of('updated_at')} "
    "FROM conversations WHERE summary != '' AND key IS NOT NULL",
    f"SELECT c.key, {TASK}, 'team', 'task', t.id, t.task, {_micros_of('t.created_at')} "
    "FROM tasks t JOIN conversations c ON c.id = t.conversation_id WHERE t.task != ''",
    f"SELECT c.key, {TEAM_TURN}, 'team', a.agent, a.task_id, a.text, "
    f"{_micros_of('a.created_at')} FROM task_turns a JOIN tasks t ON t.id = a.task_id "
    "JOIN conversations c ON c.id = t.conversation_id WHERE a.text != ''",
    f"SELECT key, {TEAM_TOOL}, 'tool', 'tool', task_id, body, at FROM (SELECT c.key, "
    f"new.task_id, {_message_body('new', text=False)} AS body, "
    f"{_micros_of('new.created_at')} AS at "
    "FROM task_messages new JOIN tasks t ON t.id = new.task_id "
    "JOIN conversations c ON c.id = t.conversation_id WHERE new.kind = 'tool_result') "
    "WHERE body != ''",
)
BATCH = 5_000  # message rows indexed per step of building the index
LOUD_FROM = 20_000  # a store with more rows than this says how far the build is


def build_index(db: sqlite3.Connection) -> None:
    """Index what an older store already holds (the migration's step, inside its
    transaction): its documents, then its messages in batches, logging progress."""
    for select in _EXISTING_DOCS:
        rows = db.execute(select).fetchall()
        for doc, row in enumerate(rows, start=_next_doc(db)):
            db.execute(
                f"INSERT INTO search_docs ({_DOC_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (-doc, *row),
            )
    low, high, count = db.execute("SELECT min(id), max(id), count(*) FROM message_rows").fetchone()
    if not count:
        return
    say = logger.warning if count > LOUD_FROM else logger.info
    say("building the search index of %s messages (once, for this upgrade)", f"{count:,}")
    done = 0
    for start in range(low, high + 1, BATCH):
        done += db.execute(
            "INSERT INTO search_index (rowid, body) SELECT doc, body FROM search_text "
            "WHERE doc BETWEEN ? AND ?",
            (start, start + BATCH - 1),
        ).rowcount
        if count > LOUD_FROM:
            say("search index: %s of %s messages", f"{min(done, count):,}", f"{count:,}")
    say("search index built")


def _next_doc(db: sqlite3.Connection) -> int:
    (lowest,) = db.execute("SELECT coalesce(min(doc), 0) FROM search_docs").fetchone()
    return 1 - int(lowest)
