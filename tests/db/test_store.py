"""The SQLite store, the ledger and the history the model sees."""

from __future__ import annotations

import itertools
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from smarthole.agent.messages import NOT_RUN, to_api_messages
from smarthole.db.connection import PAGE_CACHE_KIB
from smarthole.db.ledger import Admission, Ledger
from smarthole.db.pending import PendingQuestion, PendingQuestions
from smarthole.db.records import KINDS, StoredMessage
from smarthole.db.store import Store
from smarthole.errors import CorruptStoreError
from smarthole.pipeline.message import parse_message

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path):
    store = Store.open(tmp_path / "smarthole.db", clock=lambda: NOW)
    yield store
    store.close()


def text(t):
    return [{"type": "text", "text": t}]


def stored(kind, content, turn=1, tool_use_id=None):
    role = "assistant" if kind == "assistant" else "user"
    return StoredMessage(
        id=0,
        conversation_id="c",
        turn=turn,
        role=role,
        kind=kind,
        content=content,
        created_at=NOW,
        tool_use_id=tool_use_id,
    )


def tool_use(id, name="t"):
    return {"type": "tool_use", "id": id, "name": name, "input": {}}


def result(id):
    return [{"type": "tool_result", "tool_use_id": id, "content": "ok", "is_error": False}]


def assert_valid(messages):
    """The rules the Messages API enforces on history."""
    assert messages[0]["role"] == "user"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"]
        ids = [b["id"] for b in before["content"] if b["type"] == "tool_use"]
        if ids:
            answered = [b["tool_use_id"] for b in after["content"] if b["type"] == "tool_result"]
            assert answered == ids
    for message in messages:
        assert all(b.get("text", "x").strip() for b in message["content"])


# -- history ------------------------------------------------------------------------------------


def test_a_tool_round_trip_becomes_alternating_messages():
    history = to_api_messages(
        [
            stored("user", text("hi")),
            stored("assistant", [*text("checking"), tool_use("a"), tool_use("b")]),
            stored("tool_result", result("a"), tool_use_id="a"),
            stored("tool_result", result("b"), tool_use_id="b"),
            stored("assistant", text("done")),
        ]
    )
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert len(history[2]["content"]) == 2
    assert_valid(history)


def test_a_turn_that_died_after_the_user_message_merges_with_the_next():
    history = to_api_messages(
        [
            stored("user", text("first"), turn=1),
            stored("error", text("HTTP 500"), turn=1),
            stored("user", text("second"), turn=2),
        ]
    )
    assert history == [{"role": "user", "content": text("first") + text("second")}]


def test_unanswered_tool_calls_of_a_dead_turn_get_error_results():
    history = to_api_messages(
        [
            stored("user", text("first"), turn=1),
            stored("assistant", [tool_use("a"), tool_use("b")], turn=1),
            stored("tool_result", result("a"), turn=1, tool_use_id="a"),
            stored("user", text("second"), turn=2),
        ]
    )
    assert_valid(history)
    results = history[2]["content"]
    assert [b.get("tool_use_id") for b in results[:2]] == ["a", "b"]
    assert results[1]["content"] == NOT_RUN and results[1]["is_error"]
    assert results[2] == text("second")[0]


def test_empty_text_blocks_are_dropped():
    history = to_api_messages(
        [
            stored("user", text("hi")),
            stored("assistant", text("")),
            stored("user", text("again"), turn=2),
        ]
    )
    assert history == [{"role": "user", "content": text("hi") + text("again")}]


# -- store ------------------------------------------------------------------------------------


def start(store, conversation, message_id, words):
    with store.transaction() as db:
        number = store.start_turn(db, conversation.id, message_id)
        store.append_message(conversation.id, number, "user", text(words), db=db)
    return number


def test_turns_are_numbered_from_one(store):
    conversation = store.create_conversation("default")
    assert start(store, conversation, "m1", "a") == 1
    assert start(store, conversation, "m2", "b") == 2
    assert store.conversation(conversation.id).turns == 2
    assert store.turn_for_message("m2").number == 2


def test_the_history_tail_reads_whole_turns_back_to_the_first_that_does_not_fit(store):
    conversation = store.create_conversation("default")
    for n in range(1, 6):
        start(store, conversation, f"m{n}", "x" * 100)
        store.append_message(conversation.id, n, "assistant", text("y" * 100))
    size = len(store.history_rows(conversation.id, after_id=0)[0][3])

    def turns(budget):
        rows, older = store.history_tail(conversation.id, current_turn=5, budget_chars=budget)
        return sorted({row[1] for row in rows}), older

    assert turns(4 * size) == ([3, 4, 5], True), "turn 3 is where the budget ends"
    assert turns(10**9) == ([1, 2, 3, 4, 5], False)
    assert turns(1) == ([4, 5], True), "the current turn always, and the boundary"
    last_but_one = store.history_rows(conversation.id, after_id=0)[-2][0]
    new = store.history_rows(conversation.id, after_id=last_but_one)
    assert [(row[1], KINDS[row[2]]) for row in new] == [(5, "assistant")]


def test_a_pinned_title_is_never_overwritten(store):
    conversation = store.create_conversation("default")
    assert store.set_title(conversation.id, "Mine", pinned=True)
    assert not store.set_title(conversation.id, "Generated")
    assert store.conversation(conversation.id).title == "Mine"
    assert store.set_title(conversation.id, "Mine again", pinned=True)


def test_plugin_data_round_trips_and_corrupt_values_are_moved_aside(store, caplog):
    data = store.plugin_data("demo")
    data.set("k", {"a": [1, 2]})
    assert data.get("k") == {"a": [1, 2]}
    with store.transaction() as db:
        db.execute("UPDATE plugin_data SET value = '{broken' WHERE plugin = 'demo'")
    assert data.get("k", "default") == "default"
    assert "CORRUPT plugin data demo/k" in caplog.text
    assert store.query("SELECT value FROM plugin_data_corrupt")[0]["value"] == "{broken"
    assert data.get("k") is None


def test_a_corrupt_database_is_moved_aside_when_recovering(tmp_path, caplog):
    path = tmp_path / "smarthole.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CorruptStoreError):
        Store.open(path, clock=lambda: NOW)
    store = Store.open(path, clock=lambda: NOW, recover=True)
    store.close()
    aside = list(tmp_path.glob("smarthole.db.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not")
    assert str(path) in caplog.text and "CORRUPT" in caplog.text
    sqlite3.connect(path).execute("SELECT * FROM conversations").fetchall()


def test_hooks_run_only_after_commit(store):
    seen = []
    with store.transaction():
        store.after_commit(lambda: seen.append("hook"))
        assert seen == []
    assert seen == ["hook"]
    with pytest.raises(RuntimeError), store.transaction():
        store.after_commit(lambda: seen.append("rolled back"))
        raise RuntimeError
    assert seen == ["hook"]


# -- ledger and pending questions ---------------------------------------------------------------


def message(name, data):
    return parse_message(name, data.encode(), modified=NOW)


def test_ledger_admits_once_and_spots_reuse(store, tmp_path):
    ledger = Ledger(store)
    first = message("a.md", "+++\nid = 'x'\n+++\nhello")
    assert ledger.admit(first, channel="default", claimed_path=tmp_path / "a") is Admission.NEW
    assert (
        ledger.admit(first, channel="default", claimed_path=tmp_path / "b") is Admission.DUPLICATE
    )
    other = message("a.md", "+++\nid = 'x'\n+++\ngoodbye")
    assert ledger.admit(other, channel="default", claimed_path=tmp_path / "c") is Admission.CONFLICT
    ledger.set_status("x", "dead")
    assert ledger.admit(first, channel="default", claimed_path=tmp_path / "d") is Admission.REDRIVE
    entry = ledger.get("x")
    assert (entry.status, entry.attempts, entry.generation) == ("queued", 0, 1)


def test_only_the_head_of_each_channel_is_runnable(store, tmp_path):
    ledger = Ledger(store)
    for name, channel, when in [("a", "one", "01"), ("b", "one", "02"), ("c", "two", "03")]:
        msg = message(
            f"{name}.md", f"+++\nid = '{name}'\ntimestamp = 2026-01-{when}T00:00:00Z\n+++\n{name}"
        )
        ledger.admit(msg, channel=channel, claimed_path=tmp_path / name)
    assert [e.id for e in ledger.channel_heads()] == ["a", "c"]
    ledger.set_status("a", "done")
    assert [e.id for e in ledger.channel_heads()] == ["b", "c"]
    ledger.set_status("c", "deferred", next_attempt_at="2026-01-04T00:00:00Z")
    heads = ledger.channel_heads()
    assert [(e.id, e.status) for e in heads] == [("b", "queued"), ("c", "deferred")]
    assert ledger.channel_heads()[0] is heads[0], "a head that did not change is not parsed again"


def test_channels_with_work_are_those_with_an_unfinished_message(store, tmp_path):
    ledger = Ledger(store)
    for name, channel in [("a", "one"), ("b", "two"), ("c", "three"), ("d", "four")]:
        ledger.admit(
            message(f"{name}.md", f"+++\nid = '{name}'\n+++\n{name}"),
            channel=channel,
            claimed_path=tmp_path / name,
        )
    ledger.set_status("a", "done")
    ledger.set_status("b", "dead")
    ledger.set_status("c", "deferred", next_attempt_at="2026-01-04T00:00:00Z")
    ledger.set_status("d", "in_progress")
    assert ledger.channels_with_work() == {"three", "four"}
    ledger.admit(message("e.md", "+++\nid = 'e'\n+++\ne"), channel="one", claimed_path=tmp_path)
    assert ledger.channels_with_work() == {"one", "three", "four"}


def test_pending_questions_expire_strictly_after_the_timeout(store):
    pending = PendingQuestions(store)
    for minutes, conversation in ((59, "young"), (61, "old")):
        pending.save(
            PendingQuestion(conversation, "m", "Which list?", 1, NOW - timedelta(minutes=minutes))
        )
    dropped = pending.expire(NOW, 60)
    assert [q.conversation_id for q in dropped] == ["old"]
    assert pending.get("young") is not None and pending.get("old") is None


def test_the_connection_keeps_a_small_page_cache(store):
    (size,) = store.query_one("PRAGMA cache_size")
    assert size == -PAGE_CACHE_KIB, "negative: in KiB, not pages"


def indexed_columns(db, table):
    return {
        column
        for (index,) in db.execute(f"SELECT name FROM pragma_index_list('{table}')")
        for (column,) in db.execute(f"SELECT name FROM pragma_index_info('{index}')")
    }


def test_no_index_holds_what_every_message_changes(tmp_path):
    """Every message moves its conversation's ``updated_at``; an index of it would be one
    more page written per message. The ones an earlier version made go at the next open."""
    path = tmp_path / "smarthole.db"
    Store.open(path, clock=lambda: NOW).close()
    db = sqlite3.connect(path)
    db.execute("DROP INDEX conversations_of_channel")
    db.execute("CREATE INDEX conversations_by_update ON conversations (updated_at)")
    db.execute(
        "CREATE INDEX conversations_by_channel ON conversations (channel, ended_at, updated_at)"
    )
    db.commit()
    assert "updated_at" in indexed_columns(db, "conversations")
    db.close()
    store = Store.open(path, clock=lambda: NOW)
    try:
        assert "updated_at" not in indexed_columns(store._db, "conversations")
        assert {"channel", "ended_at"} <= indexed_columns(store._db, "conversations")
    finally:
        store.close()


def test_a_commit_waits_for_the_disk_unless_it_is_one_a_power_cut_may_undo(tmp_path):
    """``durable=False`` commits with ``synchronous = NORMAL`` (no fsync), then the
    connection is back to FULL, also when the transaction failed."""
    seen: list[str] = []
    store = Store.open(tmp_path / "smarthole.db", clock=lambda: NOW)
    store._db.set_trace_callback(seen.append)
    with store.transaction(durable=False) as db:
        db.execute("INSERT INTO meta (key, value) VALUES ('a', '1')")
    assert seen == [
        "PRAGMA synchronous = NORMAL",
        "BEGIN IMMEDIATE",
        "INSERT INTO meta (key, value) VALUES ('a', '1')",
        "COMMIT",
        "PRAGMA synchronous = FULL",
    ]
    with pytest.raises(RuntimeError), store.transaction(durable=False) as db:
        db.execute("INSERT INTO meta (key, value) VALUES ('b', '2')")
        raise RuntimeError("undone")
    seen.clear()
    with store.transaction() as db:
        db.execute("INSERT INTO meta (key, value) VALUES ('c', '3')")
    assert seen == ["BEGIN IMMEDIATE", "INSERT INTO meta (key, value) VALUES ('c', '3')", "COMMIT"]
    assert store.query_one("PRAGMA synchronous")[0] == 2  # FULL
    store.close()
    again = sqlite3.connect(tmp_path / "smarthole.db")
    assert again.execute("SELECT key FROM meta WHERE key IN ('a', 'b', 'c')").fetchall() == [
        ("a",),
        ("c",),
    ]


def test_ledger_tells_a_repeated_id_by_its_text_not_its_bytes(store, tmp_path):
    ledger = Ledger(store)
    first = message("a.md", "+++\nid = 'x'\n+++\nhello")
    ledger.admit(first, channel="default", claimed_path=tmp_path / "a")
    rewritten = message("b.md", "+++\nid = 'x'\nchannel = 'other'\n+++\n\nhello\n\n")
    assert rewritten.content_hash != first.content_hash
    assert ledger.admit(rewritten, channel="other", claimed_path=tmp_path / "b") is (
        Admission.DUPLICATE
    )
    other = message("c.md", "+++\nid = 'x'\n+++\nhello!")
    assert ledger.admit(other, channel="default", claimed_path=tmp_path / "c") is Admission.CONFLICT
    assert ledger.get("x").message.text == "hello"
