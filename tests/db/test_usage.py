"""Usage: one row per model response, with its turn, stored as the API counted it."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from smarthole.agent.prompts import SUMMARY_SYSTEM, TITLE_SYSTEM
from smarthole.cli import main
from smarthole.config import ModelSettings
from smarthole.db.schema import MIGRATIONS, SCHEMA_VERSION
from smarthole.db.store import Store
from smarthole.db.usage import COUNTS, UsageLog, UsageTotals
from smarthole.testing import text, tool_use
from smarthole.testing.cache import PromptCache
from tests.db.oldschema import version_4_database
from tests.helpers import db, drop, finals, run_once, write_config

MODEL = ModelSettings().name


def counts(input: int, output: int, write: int = 0, read: int = 0) -> dict[str, int]:
    return dict(zip(COUNTS, (input, output, write, read), strict=True))


def rows(home: Any) -> list[sqlite3.Row]:
    return db(home).execute("SELECT * FROM usage ORDER BY id").fetchall()


def figures(row: sqlite3.Row) -> dict[str, int]:
    return {count: row[count] for count in COUNTS}


def test_each_response_of_a_tool_loop_is_one_row_of_its_turn(home, fake, env):
    fake.add(replace(tool_use("list_files", {}), usage=counts(100, 20, 50, 0)))
    fake.add(replace(tool_use("list_files", {}), usage=counts(30, 10, 0, 150)))
    fake.add(text("Two looks, nothing there.", usage=counts(40, 8, 0, 180)))
    drop(home, "look twice", "m1")
    run_once(home, env)

    stored = rows(home)
    assert [figures(r) for r in stored] == [
        counts(100, 20, 50, 0),
        counts(30, 10, 0, 150),
        counts(40, 8, 0, 180),
    ]
    conversation = finals(home)[0]["conversation"]
    for row in stored:
        assert (row["conversation_id"], row["turn"], row["purpose"]) == (conversation, 1, "turn")
        assert (row["task_id"], row["agent"], row["model"]) == (None, None, MODEL)
    assert datetime.fromisoformat(stored[0]["at"]).date() == datetime.now(UTC).date()


def test_rows_carry_the_human_turn_number(home, fake, env):
    fake.default = text("ok", usage=counts(10, 2))
    drop(home, "one", "m1")
    run_once(home, env)
    drop(home, "two", "m2")
    run_once(home, env)
    assert [r["turn"] for r in rows(home)] == [1, 2]
    assert len({r["conversation_id"] for r in rows(home)}) == 1


def test_stored_usage_is_what_the_fake_reported(home, fake, env):
    """With the fake's simulated cache: every row is what the API said for its request, and
    the second turn reads what the first wrote if the requests carry a breakpoint."""
    fake.default = text("ok")
    for number in (1, 2):
        drop(home, f"message {number}", f"m{number}")
        run_once(home, env)
    cache = PromptCache()  # replaying the requests gives the same counts the fake sent
    replayed = [cache.usage(r.body, []) for r in fake.requests]
    stored = rows(home)
    prompt = [c for c in COUNTS if c != "output_tokens"]
    assert [{c: r[c] for c in prompt} for r in stored] == [
        {c: u[c] for c in prompt} for u in replayed
    ]
    assert all(r["output_tokens"] > 0 for r in stored)
    if any("cache_control" in str(r.body) for r in fake.requests):
        assert stored[0]["cache_creation_input_tokens"] > 0
        assert stored[1]["cache_read_input_tokens"] > 0


TEAM = {
    "researcher": {"description": "Finds facts in the notes", "instructions": "Research well."},
    "critic": {"description": "Checks the facts", "instructions": "Be critical."},
}


def test_a_team_agent_turn_records_its_task_and_agent(home, fake, env):
    write_config(home, agents=TEAM)
    start = tool_use("start_task", {"task": "Check", "agents": ["researcher", "critic"]})
    fake.add(replace(start, usage=counts(1, 1)), entry_agent=True)
    fake.add(text("found", usage=counts(2, 2)), agent="researcher")
    finish = tool_use("finish_task", {"result": "Checked."})
    fake.add(replace(finish, usage=counts(3, 3)), agent="critic")
    fake.add(text("noted", usage=counts(4, 4)), agent="critic")
    fake.add(text("The team checked it.", usage=counts(5, 5)), entry_agent=True)
    drop(home, "check it with the team", "m1")
    run_once(home, env)

    (task_id,) = db(home).execute("SELECT id FROM tasks").fetchone()
    seen = [(r["purpose"], r["agent"], r["task_id"], r["input_tokens"]) for r in rows(home)]
    assert seen == [
        ("turn", None, None, 1),
        ("agent_turn", "researcher", task_id, 2),
        ("agent_turn", "critic", task_id, 3),
        ("agent_turn", "critic", task_id, 4),
        ("turn", None, None, 5),
    ]
    assert {r["turn"] for r in rows(home)} == {1}


def test_titles_and_summaries_record_their_own_usage(home, fake, env):
    write_config(home, titles={"enabled": True})
    fake.default = lambda request: (
        text("A title", usage=counts(7, 3))
        if request.system_text == TITLE_SYSTEM
        else text("A summary.", usage=counts(9, 4))
        if request.system_text == SUMMARY_SYSTEM
        else text("ok", usage=counts(1, 1))
    )
    drop(home, "hello", "m1")
    run_once(home, env)
    drop(home, "again", "m2", new_conversation=True)  # ends the first: its summary is due
    run_once(home, env)
    by_purpose = {(r["purpose"], r["turn"]): r["input_tokens"] for r in rows(home)}
    assert by_purpose[("title", 1)] == 7
    assert by_purpose[("summary", 1)] == 9


def test_a_reply_and_its_usage_commit_together(home, fake, env, monkeypatch):
    """A failure after the reply row is written, before the commit, rolls back both; after
    ``retry``, every stored reply has exactly one usage row."""
    record = UsageLog.record
    failures = []

    def fail_once(self: UsageLog, *args: Any, **kwargs: Any) -> None:
        record(self, *args, **kwargs)
        if not failures:
            failures.append(1)
            raise RuntimeError("injected failure before the commit")

    monkeypatch.setattr(UsageLog, "record", fail_once)
    fake.default = text("ok", usage=counts(10, 2))
    drop(home, "hello", "m1")
    run_once(home, env)  # the first attempt fails: an internal error, set aside at once
    assert failures and [f["kind"] for f in finals(home)] == ["error"]
    replies = db(home).execute("SELECT COUNT(*) FROM messages WHERE kind = 'assistant'")
    assert replies.fetchone()[0] == len(rows(home)) == 0
    assert main(["retry", "--home", str(home), "--all"]) == 0
    run_once(home, env)
    assert len(fake.requests) == 2 and finals(home)[-1]["kind"] == "response"
    replies = db(home).execute("SELECT COUNT(*) FROM messages WHERE kind = 'assistant'")
    assert replies.fetchone()[0] == len(rows(home)) == 1


# -- the table ------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path):
    opened = Store.open(tmp_path / "s.db", clock=lambda: datetime.now(UTC))
    yield opened
    opened.close()


def test_a_missing_or_empty_count_is_zero(store):
    usage = UsageLog(store)
    usage.record(
        {"input_tokens": 5, "cache_read_input_tokens": None, "server_tool_use": {"x": 1}},
        purpose="title",
        model="m",
        conversation_id="c",
        turn=1,
    )
    assert usage.since(datetime.now(UTC) - timedelta(minutes=1)) == UsageTotals(1, 5, 0, 0, 0)


def test_an_unknown_purpose_is_refused(store):
    with pytest.raises(ValueError, match="unknown usage purpose"):
        UsageLog(store).record({}, purpose="guess", model="m", conversation_id="c", turn=1)


def test_totals_since_a_moment_and_the_cache_hit_rate(store):
    usage = UsageLog(store)
    for purpose, figures_ in (("turn", counts(100, 10, 300, 0)), ("turn", counts(100, 10, 0, 600))):
        usage.record(figures_, purpose=purpose, model="m", conversation_id="c", turn=1)
    totals = usage.since(datetime.now(UTC) - timedelta(minutes=1))
    assert totals == UsageTotals(2, 200, 20, 300, 600)
    assert totals.cache_hit_rate == pytest.approx(600 / 1100)
    assert usage.since(datetime.now(UTC) + timedelta(minutes=1)) == UsageTotals()
    assert UsageTotals().cache_hit_rate is None
    assert UsageTotals().as_dict()["cache_hit_rate"] is None


def test_per_conversation_groups_turns_then_titles_and_summaries(store):
    usage = UsageLog(store)
    for purpose, turn in (
        ("summary", 2),
        ("turn", 2),
        ("agent_turn", 1),
        ("turn", 1),
        ("title", 1),
    ):
        usage.record(counts(1, 1), purpose=purpose, model="m", conversation_id="c", turn=turn)
    usage.record(counts(1, 1), purpose="turn", model="m", conversation_id="other", turn=1)
    groups = usage.for_conversation("c")
    assert [(g.what, g.turn, g.totals.requests) for g in groups] == [
        ("turn", 1, 2),
        ("turn", 2, 1),
        ("summary", None, 1),
        ("title", None, 1),
    ]


def test_a_version_3_database_gains_the_usage_table(tmp_path):
    path = tmp_path / "old.db"
    old = version_4_database(path)
    old.execute("DROP TABLE usage")
    old.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    old.commit()
    old.close()
    store = Store.open(path, clock=lambda: datetime.now(UTC))
    try:
        (version,) = store.query_one("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version == str(SCHEMA_VERSION) == "13"
        indexes = {r["name"] for r in store.query("PRAGMA index_list(usage)")}
        assert {"usage_by_time", "usage_by_conversation"} <= indexes
        UsageLog(store).record(counts(1, 1), purpose="turn", model="m", conversation_id="c", turn=1)
    finally:
        store.close()


def test_the_version_4_migration_creates_the_table_and_its_indexes():
    bare = sqlite3.connect(":memory:")
    for statement in MIGRATIONS[4]:
        bare.execute(statement)
    names = {row[0] for row in bare.execute("SELECT name FROM sqlite_master")}
    assert {"usage", "usage_by_time", "usage_by_conversation"} <= names
