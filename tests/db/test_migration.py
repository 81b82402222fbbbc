"""Schema version 5: a version 4 database with data opens, migrates and loses nothing."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime

from smarthole.agent.history import HistoryCache
from smarthole.agent.messages import to_api_messages
from smarthole.agent.prompts import turn_context
from smarthole.db.records import StoredMessage
from smarthole.db.schema import SCHEMA_VERSION
from smarthole.db.store import Store
from smarthole.formats import micros, parse_time
from tests.db.oldschema import version_4_database

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def text(words):
    return json.dumps([{"type": "text", "text": words}], ensure_ascii=False, separators=(",", ":"))


def at(day, clock):
    return f"2026-11-{day}T{clock}Z"


HELLO = 'Hello, "world"\n\tä 🙂 \\'
USE = [{"type": "text", "text": "Let me look."}, {"type": "tool_use", "id": "tu1", "name": "t"}]
RESULT = [{"type": "tool_result", "tool_use_id": "tu1", "content": "ok", "is_error": False}]
CACHED = [{"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}}]
# (id, conversation, turn, role, kind, content, tool_use_id, created_at): every kind, and
# contents that are one text block and that are not (a block with more keys, two blocks).
MESSAGES = [
    (1, "c1", 1, "user", "user", text(HELLO), None, at(20, "08:00:00.000001")),
    (2, "c1", 1, "assistant", "assistant", json.dumps(USE), None, at(20, "08:00:01.500000")),
    (3, "c1", 1, "user", "tool_result", json.dumps(RESULT), "tu1", at(20, "08:00:02.000000")),
    (4, "c1", 1, "assistant", "question", text("Which one?"), "tu2", at(20, "08:00:03.000000")),
    (5, "c1", 1, "assistant", "assistant", text(""), None, at(20, "08:00:04.999999")),
    (6, "c1", 1, "assistant", "note", text("stopped"), None, at(20, "08:00:05.000000")),
    (7, "c1", 2, "user", "user", text("the second"), None, at(21, "10:30:00.250000")),
    (8, "c1", 2, "assistant", "error", text("the API failed"), None, at(21, "10:30:01.000000")),
    (9, "c2", 1, "user", "user", text("other"), None, at(21, "11:00:00.000000")),
    (10, "c2", 1, "assistant", "agent_message", text("sent"), "tu3", at(21, "11:00:01.000000")),
    (11, "c2", 1, "assistant", "assistant", json.dumps(CACHED), None, at(21, "11:00:02.000000")),
    (12, "c2", 1, "assistant", "assistant", text("a"), None, at(21, "11:00:03.000000")),
]
START, END = at(20, "08:00:00.000000"), at(20, "08:00:06.123456")
TURNS = [
    ("c1", 1, "m1", "completed", START, END, None, "stopped", None),
    ("c1", 2, "m2", "failed", at(21, "10:30:00.000000"), None, "the API failed", None, "end"),
    ("c2", 1, "m3", "running", at(21, "11:00:00.000000"), None, None, None, None),
]
ENDED = (START, at(21, "10:30:01.000000"), at(21, "12:00:00.000000"), "ended")
OPEN = (at(21, "11:00:00.000000"), at(21, "11:00:03.000000"), None, None)
CONVERSATIONS = [
    ("c1", "default", "Hello", 1, "done", "A summary", "done", 2, *ENDED),
    ("c2", "work", None, 0, "none", None, "none", 1, *OPEN),
]


def old_database(path):
    """A version 4 database holding the rows above, its last message deleted (id 13)."""
    db = version_4_database(path)
    db.executemany(
        "INSERT INTO conversations (id, channel, title, title_pinned, title_state, summary, "
        "summary_state, turns, created_at, updated_at, ended_at, end_reason) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        CONVERSATIONS,
    )
    db.executemany("INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", TURNS)
    db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", MESSAGES)
    db.execute(
        "INSERT INTO messages (conversation_id, turn, role, kind, content, created_at) "
        "VALUES ('c2', 1, 'user', 'user', '[]', '2026-11-21T11:00:04.000000Z')"
    )
    db.execute("DELETE FROM messages WHERE id = 13")
    db.commit()
    return db


def rows(db, sql):
    return [tuple(row) for row in db.execute(sql)]


def test_a_version_4_database_keeps_every_message_turn_and_conversation(tmp_path):
    path = tmp_path / "old.db"
    old = old_database(path)
    conversations = rows(old, "SELECT * FROM conversations ORDER BY id")
    old.close()

    store = Store.open(path, clock=lambda: NOW)
    try:
        (version,) = store.query_one("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version == str(SCHEMA_VERSION) == "13"
        # The views show the version 4 rows byte for byte: nothing was lost or changed.
        assert rows(store._db, "SELECT * FROM messages ORDER BY id") == MESSAGES
        assert rows(store._db, "SELECT * FROM turns ORDER BY conversation_id, number") == TURNS
        migrated = rows(store._db, "SELECT * FROM conversations ORDER BY id")
        assert [row[:-1] for row in migrated] == conversations  # and a key each
        # What the store hands out is what version 4 stored.
        (first,) = [m for m in store.messages("c1") if m.id == 1]
        assert first.text == HELLO
        assert first.created_at == datetime(2026, 11, 20, 8, 0, 0, 1, tzinfo=UTC)
        assert [m.kind for m in store.messages("c1", turn=1)] == [
            "user",
            "assistant",
            "tool_result",
            "question",
            "assistant",
            "note",
        ]
        assert [(m.role, m.content) for m in store.messages("c1")][1:3] == [
            ("assistant", USE),
            ("user", RESULT),
        ]
        turn = store.turn_for_message("m1")
        assert turn is not None and turn.finished_at == datetime(
            2026, 11, 20, 8, 0, 6, 123456, tzinfo=UTC
        )
        # One text block is stored as its text; any other content stays JSON.
        stored = rows(store._db, "SELECT id, text IS NOT NULL, content IS NULL FROM message_rows")
        kept_json = {2, 3, 11}
        assert stored == [(id, id not in kept_json, id not in kept_json) for id in range(1, 13)]
        # A deleted message's id is never given again.
        again = store.append_message("c2", 1, "user", [{"type": "text", "text": "x"}])
        assert again.id == 14
    finally:
        store.close()


def test_the_history_of_a_migrated_conversation_is_what_version_4_made(tmp_path):
    path = tmp_path / "old.db"
    old_database(path).close()
    as_before = [  # the history from the version 4 rows, as version 4 read them
        StoredMessage(id, conversation, turn, role, kind, json.loads(content), parse_time(at))
        for id, conversation, turn, role, kind, content, _, at in MESSAGES
        if conversation == "c1"
    ]
    for index, message in enumerate(as_before):
        if message.kind == "user":
            context = turn_context(message.turn, micros(message.created_at))
            as_before[index] = replace(message, content=[context, *message.content])
    store = Store.open(path, clock=lambda: NOW)
    try:
        cache = HistoryCache(store, turn_context)
        window = cache.window("c1", current_turn=2, budget_chars=10**9)
        assert window.messages == to_api_messages(as_before)
        assert window.messages[0]["content"][1]["text"] == HELLO
    finally:
        store.close()


def test_a_migrated_database_has_the_tables_of_a_new_one(tmp_path):
    old_database(tmp_path / "old.db").close()
    Store.open(tmp_path / "old.db", clock=lambda: NOW).close()
    Store.open(tmp_path / "new.db", clock=lambda: NOW).close()

    def shape(name):
        db = sqlite3.connect(tmp_path / name)
        objects = rows(db, "SELECT type, name, tbl_name FROM sqlite_schema ORDER BY name")
        columns = {
            table: rows(db, f"SELECT name, type, [notnull], pk FROM pragma_table_info('{table}')")
            for _, table, _ in objects
        }
        db.close()
        return objects, columns

    assert shape("old.db") == shape("new.db")


def test_opening_a_migrated_database_again_changes_nothing(tmp_path):
    path = tmp_path / "old.db"
    old_database(path).close()
    Store.open(path, clock=lambda: NOW).close()
    db = sqlite3.connect(path)
    before = rows(db, "SELECT * FROM messages"), rows(db, "SELECT * FROM turns")
    db.close()
    store = Store.open(path, clock=lambda: NOW)
    try:
        after = rows(store._db, "SELECT * FROM messages"), rows(store._db, "SELECT * FROM turns")
        assert after == before
    finally:
        store.close()


def test_a_conversation_deleted_after_the_migration_takes_its_rows(tmp_path):
    path = tmp_path / "old.db"
    old_database(path).close()
    store = Store.open(path, clock=lambda: NOW)
    try:
        store.delete_conversation("c1")
        assert rows(store._db, "SELECT DISTINCT conversation_id FROM messages") == [("c2",)]
        assert rows(store._db, "SELECT conversation_id FROM turns") == [("c2",)]
        created = store.create_conversation("default")
        assert store.messages(created.id) == [] and store.turns(created.id) == []
    finally:
        store.close()
