"""Full-text search: every side of a conversation indexed as it is stored, found, ranked, cut."""

from __future__ import annotations

import logging
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smarthole.db import searchindex
from smarthole.db.schema import SCHEMA_VERSION
from smarthole.db.search import MAX_QUERY_CHARS, Filters, Search
from smarthole.db.states import TitleState
from smarthole.db.store import Store
from smarthole.db.tasks import Tasks
from smarthole.errors import UsageError
from smarthole.testing import text, tool_use
from tests.db.oldschema import version_4_database
from tests.db.searchcheck import index_problems
from tests.helpers import drop, run_once, write_config

START = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


class Clock:
    """A clock that moves a minute each time it is read: every row has its own time."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


@pytest.fixture
def store(tmp_path):
    opened = Store.open(tmp_path / "smarthole.db", clock=Clock())
    yield opened
    opened.close()


def say(store, channel, *texts, conversation=None):
    """A conversation of ``channel`` where the person says each text, one turn each."""
    conversation = conversation or store.create_conversation(channel)
    for number, words in enumerate(texts, start=conversation.turns + 1):
        with store.transaction() as db:
            store.start_turn(db, conversation.id, f"{conversation.id}-{number}")
            store.append_message(conversation.id, number, "user", [block(words)], db=db)
    return conversation


def block(words):
    return {"type": "text", "text": words}


def found(store, query, **filters):
    return [(h.who, h.snippet) for h in Search(store).search(query, filters=Filters(**filters))]


# -- what is indexed ---------------------------------------------------------------------------


def test_every_side_of_a_conversation_and_its_team_is_found(home, fake, env):
    """The person, the entry agent, a tool result, the team's task and turns, title, summary."""
    baker = {"description": "Knows bread", "instructions": "Bake.", "tools": ["read_file"]}
    write_config(home, agents={"baker": baker})
    (home / "workspace" / "notes.md").write_text("The bakery on Elm Street opens at seven.")
    (home / "workspace" / "flour.md").write_text("The spelt flour is in the pantry.")
    fake.add(tool_use("read_file", {"path": "notes.md"}), entry_agent=True)
    fake.add(
        tool_use("start_task", {"task": "Compare sourdough recipes", "agents": ["baker"]}),
        entry_agent=True,
    )
    fake.add(tool_use("read_file", {"path": "flour.md"}), agent="baker")
    fake.add(tool_use("finish_task", {"result": "Rye starter wins."}), agent="baker")
    fake.add(text("Rye starter, proofed overnight."), agent="baker")
    fake.add(text("Go to Elm Street at seven; the team prefers rye."), entry_agent=True)
    drop(home, "When does the bakery open? Ask the team about sourdough.", "m1")
    run_once(home, env)
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: START)
    try:
        (conversation,) = store.recent_conversations()
        store.set_title(conversation.id, "Bakery hours")
        store.set_summary(conversation.id, "Asked about a croissant shop", state=TitleState.DONE)
        search = Search(store)
        by_role = {
            role: {
                h.who
                for h in search.search(
                    "bakery OR sourdough OR rye OR croissant", filters=Filters(role=role)
                )
            }
            for role in ("human", "agent", "tool", "team")
        }
        assert by_role == {
            "human": {"person"},
            "agent": {"agent"},
            "tool": {"tool"},  # read_file's result (and the team's tool results)
            "team": {"task", "baker"},
        }
        assert found(store, "Elm", role="tool") == [
            ("tool", "1: The bakery on Elm Street opens at seven.")
        ]
        assert {who for who, _ in found(store, "bakery")} >= {"title", "person", "tool"}
        assert found(store, "croissant") == [("summary", "Asked about a croissant shop")]
        assert found(store, "pantry") == [("tool", "1: The spelt flour is in the pantry.")]
        assert found(store, "overnight") == [("baker", "Rye starter, proofed overnight.")]
        hit = search.search("sourdough", filters=Filters(role="team"))[0]
        assert (hit.conversation_id, hit.title, hit.channel) == (
            conversation.id,
            "Bakery hours",
            "default",
        )
    finally:
        store.close()
    assert index_problems(home / ".smarthole" / "smarthole.db") == []


def test_text_inside_content_blocks_is_indexed_but_tool_inputs_and_images_are_not(store):
    conversation = say(store, "default", "start")
    use = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "zebra"}}
    store.append_message(conversation.id, 1, "assistant", [block("Looking it up"), use])
    image = {"type": "image", "source": {"type": "base64", "data": "giraffe"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [block("okapi"), image]}
    store.append_message(conversation.id, 1, "tool_result", [result], tool_use_id="t1")
    assert found(store, "looking") == [("agent", "Looking it up")]
    assert found(store, "okapi") == [("tool", "okapi")]
    assert found(store, "zebra") == found(store, "giraffe") == []
    store.delete_conversation(conversation.id)  # each row's text is worked out again, alike
    assert found(store, "looking OR okapi OR start") == []
    assert index_problems(store.path) == []


def test_what_is_deleted_or_replaced_is_no_longer_found(store, tmp_path):
    kept = say(store, "default", "apples for the pie")
    gone = say(store, "default", "apples for the cake")
    store.set_title(gone.id, "Cake")
    Tasks(store).create(
        conversation_id=gone.id,
        turn=1,
        message_id="x",
        started_by="s",
        task="apple cake",
        agents=["a"],
        max_turns=1,
    )
    store.set_title(kept.id, "Pie plans")
    store.set_title(kept.id, "Tart plans")
    store.delete_conversation(gone.id)
    assert found(store, "apples OR apple OR cake") == [("person", "apples for the pie")]
    assert found(store, "pie") == [("person", "apples for the pie")]
    assert found(store, "tart") == [("title", "Tart plans")]
    assert index_problems(tmp_path / "smarthole.db") == []


def test_a_message_changed_in_place_is_indexed_again(store, tmp_path):
    say(store, "default", "the first draft")
    store.write("UPDATE message_rows SET text = 'the final version'")
    assert found(store, "draft") == []
    assert found(store, "final") == [("person", "the final version")]
    assert index_problems(tmp_path / "smarthole.db") == []


def test_a_rolled_back_store_leaves_nothing_in_the_index(store, tmp_path):
    conversation = say(store, "default", "kept words")
    with pytest.raises(RuntimeError), store.transaction() as db:
        store.append_message(conversation.id, 1, "assistant", [block("vanished words")], db=db)
        store.set_title(conversation.id, "Vanished title")
        assert found(store, "vanished")  # inside the transaction, it is there
        raise RuntimeError("the turn failed")
    assert found(store, "vanished") == []
    assert found(store, "words") == [("person", "kept words")]
    assert index_problems(tmp_path / "smarthole.db") == []


def test_the_consistency_check_can_fail(store, tmp_path):
    say(store, "default", "left behind")
    store.write("DROP TRIGGER search_message_deleted")
    store.write("DELETE FROM message_rows")
    assert index_problems(tmp_path / "smarthole.db")


# -- ranking, snippets, filters ---------------------------------------------------------------


def test_best_match_first_then_newest_on_ties(store):
    say(store, "default", "one mention of otters here among many other words in the text")
    first = say(store, "default", "otters otters otters")
    say(store, "default", "the same words twice")
    newer = say(store, "default", "the same words twice")
    assert Search(store).search("otters")[0].conversation_id == first.id
    hits = Search(store).search("same words")
    assert hits[0].conversation_id == newer.id
    assert hits[0].at > hits[1].at


def test_a_snippet_marks_each_match_and_cuts_long_text(store):
    filler = " ".join(f"word{i}" for i in range(200))
    say(store, "default", f"{filler} the treasure is under the oak {filler}")
    (hit,) = Search(store).search("treasure oak")
    assert [t for t, matched in hit.parts if matched] == ["treasure", "oak"]
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet) < 200
    assert hit.marked() == hit.marked("**", "**")
    assert "**treasure** is under the **oak**" in hit.marked()


def test_filters_narrow_the_hits(store):
    home = say(store, "home", "water the plants", "plants need light")
    work = say(store, "work", "plants for the office")
    store.append_message(work.id, 1, "assistant", [block("I ordered plants")])
    assert len(found(store, "plants")) == 4
    assert len(found(store, "plants", conversation_id=home.id)) == 2
    assert found(store, "plants", channel="work", role="human") == [
        ("person", "plants for the office")
    ]
    assert found(store, "plants", role="agent") == [("agent", "I ordered plants")]
    assert found(store, "plants", exclude=home.id, role="human") == [
        ("person", "plants for the office")
    ]
    latest = Search(store).search("plants")[0].at
    assert len(found(store, "plants", since=latest)) == 1
    assert len(Search(store).search("plants", limit=2)) == 2
    assert len(Search(store).search("plants", limit=10**9)) == 4


def test_an_unknown_role_is_refused(store):
    with pytest.raises(UsageError, match="role must be one of"):
        Search(store).search("x", filters=Filters(role="robot"))


# -- queries ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"red fox"', {"the red fox jumps"}),
        ("red fox", {"the red fox jumps", "a fox that is red"}),
        ("jump*", {"the red fox jumps"}),
        ("red OR blue", {"the red fox jumps", "a fox that is red", "blue sky"}),
        ("NEAR(fox red, 0)", {"the red fox jumps"}),
        ("fox NOT jumps", {"a fox that is red"}),
        ("e-mail", {"send the e-mail"}),  # not FTS5 syntax: searched as the phrase
        ("don't", {"I don't know"}),
    ],
)
def test_fts5_syntax_works_and_what_it_cannot_parse_is_a_phrase(store, query, expected):
    say(store, "c", "the red fox jumps", "a fox that is red", "blue sky", "send the e-mail")
    say(store, "c", "I don't know", "email me")
    assert {snippet for _, snippet in found(store, query)} == expected


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "*",
        "NEAR(",
        "NEAR(a b",
        "(",
        ")",
        "AND",
        "OR OR",
        "a:b",
        "^",
        "fox:",
        "fox\x00red",
        "\x1b[2J fox \x07",
        "fox\nred\ttab",
        "x" * MAX_QUERY_CHARS,
        "fox " * (MAX_QUERY_CHARS // 4),
        '"' * MAX_QUERY_CHARS,
        "🦊 fox",
    ],
    ids=lambda query: f"{query[:12]!r}x{len(query)}",
)
def test_odd_queries_give_hits_or_none_never_an_error(store, query):
    say(store, "c", "the red fox jumps")
    hits = Search(store).search(query)
    assert all(h.conversation_id for h in hits)


def test_an_empty_or_too_long_query_is_refused(store):
    for nothing in ("  \n", "\x00", "\x1b\x07"):
        with pytest.raises(UsageError, match="empty"):
            Search(store).search(nothing)
    with pytest.raises(UsageError, match="longer than"):
        Search(store).search("x" * (MAX_QUERY_CHARS + 1))


@pytest.fixture(scope="module")
def fox_store(tmp_path_factory):
    store = Store.open(tmp_path_factory.mktemp("fox") / "smarthole.db", clock=Clock())
    say(store, "c", "the red fox jumps over the lazy dog")
    yield store
    store.close()


@settings(max_examples=300, deadline=None)
@given(query=st.text(min_size=1, max_size=60))
def test_any_query_gives_a_list_or_the_documented_error(fox_store, query):
    try:
        hits = Search(fox_store).search(query)
    except UsageError as exc:
        assert "empty" in str(exc)
    else:
        assert isinstance(hits, list)


# -- an older store ----------------------------------------------------------------------------


def test_a_version_4_store_is_indexed_when_it_migrates(tmp_path):
    from tests.db.test_migration import old_database

    path = tmp_path / "old.db"
    old_database(path)
    store = Store.open(path, clock=lambda: START)
    try:
        assert found(store, "world") == [("person", 'Hello, "world"\n\tä 🙂 \\')]
        assert found(store, "summary") == [("summary", "A summary")]
        assert found(store, "hello", role=None)[0][0] in ("title", "person")
        assert found(store, "ok", role="tool") == [("tool", "ok")]
        assert found(store, "failed") == [("smarthole", "the API failed")]
    finally:
        store.close()
    assert index_problems(path) == []


def version_7_store(path, texts):
    """A store of today's rows as schema 7 left them: no search index at all."""
    store = Store.open(path, clock=Clock())
    conversation = say(store, "default", *texts)
    store.set_title(conversation.id, "Old title")
    Tasks(store).create(
        conversation_id=conversation.id,
        turn=1,
        message_id="x",
        started_by="s",
        task="an old task",
        agents=["a"],
        max_turns=1,
    )
    store.close()
    db = sqlite3.connect(path)
    for name, kind in db.execute(
        "SELECT name, type FROM sqlite_schema WHERE name LIKE 'search%' AND type IN "
        "('trigger', 'view', 'table') AND name NOT LIKE 'search_index_%'"
    ).fetchall():
        db.execute(f"DROP {kind.upper()} IF EXISTS {name}")
    db.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    db.commit()
    db.close()


def test_a_version_7_store_gets_its_index_with_progress(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(searchindex, "BATCH", 7)
    monkeypatch.setattr(searchindex, "LOUD_FROM", 10)
    path = tmp_path / "old.db"
    version_7_store(path, [f"message number {i} about kites" for i in range(30)])
    with caplog.at_level(logging.INFO, logger="smarthole.db.searchindex"):
        store = Store.open(path, clock=Clock())
    try:
        (version,) = store.query_one("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version == str(SCHEMA_VERSION)
        assert len(Search(store).search("kites", limit=100)) == 30
        assert found(store, "old title") == [("title", "Old title")]
        assert found(store, "task") == [("task", "an old task")]
        say(store, "default", "a new kite")  # the triggers index what comes next
        assert len(Search(store).search("kite*", limit=100)) == 31
    finally:
        store.close()
    progress = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert progress[0] == "building the search index of 30 messages (once, for this upgrade)"
    assert "search index: 14 of 30 messages" in progress
    assert progress[-1] == "search index built"
    assert index_problems(path) == []


def test_a_version_4_database_file_without_rows_migrates(tmp_path):
    version_4_database(tmp_path / "empty.db").close()
    store = Store.open(tmp_path / "empty.db", clock=lambda: START)
    try:
        assert Search(store).search("anything") == []
    finally:
        store.close()
