"""Commands inside messages: answered without a model call, once, as ``command`` items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smarthole.testing import error, text
from tests.helpers import db, drop, read_outbox, run_once


def commands(home: Path) -> list:
    return [f for f in read_outbox(home) if f["kind"] == "command"]


def reply_to(home: Path, message_id: str):
    (found,) = [f for f in read_outbox(home) if f["in_reply_to"] == message_id]
    return found


def events_of(home: Path, type: str) -> list[dict]:
    rows = db(home).execute("SELECT data FROM events WHERE type = ? ORDER BY id", (type,))
    return [json.loads(row["data"]) for row in rows]


def test_help_is_answered_without_the_model(fake, home, env):
    drop(home, "/help", "h1")
    run_once(home, env)
    reply = reply_to(home, "h1")
    assert reply["kind"] == "command"
    assert reply["command"] == "help"
    assert reply["ok"] is True
    assert "/new [text]" in reply.text and "/stop" in reply.text
    assert fake.requests == []
    assert events_of(home, "command_run") == [{"command": "help", "ok": True}]
    status = db(home).execute("SELECT status FROM inbox WHERE message_id = 'h1'").fetchone()
    assert status["status"] == "done"


@pytest.mark.parametrize(
    "said, model_sees",
    [
        ("/etc/hosts is broken", "/etc/hosts is broken"),
        ("/frobnicate the widget", "/frobnicate the widget"),
        ("//help me", "/help me"),
        ("/helpme", "/helpme"),
    ],
)
def test_other_slashes_are_text_for_the_model(fake, home, env, said, model_sees):
    fake.add(text("ok"))
    drop(home, said, "t1")
    run_once(home, env)
    assert [r.last_user_text for r in fake.requests] == [model_sees]
    assert reply_to(home, "t1")["kind"] == "response"


def test_a_command_is_not_in_the_models_history(fake, home, env):
    fake.add(text("first answer"))
    drop(home, "hello", "m1")
    run_once(home, env)
    drop(home, "/status", "s1")
    run_once(home, env)
    fake.add(text("second answer"))
    drop(home, "and again", "m2")
    run_once(home, env)
    history = json.dumps(fake.requests[-1].messages)
    assert "/status" not in history and "smarthole is running" not in history
    assert "hello" in history


def test_new_with_text_starts_a_conversation_with_it(fake, home, env):
    fake.add(text("one"))
    drop(home, "first topic", "m1")
    run_once(home, env)
    fake.add(text("two"))
    drop(home, "/new second topic", "n1")
    run_once(home, env)
    assert reply_to(home, "n1")["command"] == "new"
    last = fake.requests[-1]
    assert last.last_user_text == "second topic"
    assert "first topic" not in json.dumps(last.messages)
    conversations = db(home).execute("SELECT id, ended_at FROM conversations ORDER BY key")
    rows = list(conversations)
    assert len(rows) == 2 and rows[0]["ended_at"] is not None


def test_list_and_resume_make_an_older_conversation_current(fake, home, env):
    fake.add(text("about cats"))
    drop(home, "cats", "m1")
    run_once(home, env)
    drop(home, "/new", "n1")
    fake.add(text("about dogs"))
    drop(home, "dogs", "m2")
    run_once(home, env)
    drop(home, "/list", "l1")
    run_once(home, env)
    listing = reply_to(home, "l1").text
    assert listing.startswith("1. ") and "\n2. " in listing
    drop(home, "/resume 2", "r1")
    run_once(home, env)
    resumed = reply_to(home, "r1")
    assert resumed["ok"] is True and "about cats" in resumed.text
    fake.add(text("more cats"))
    drop(home, "tell me more", "m3")
    run_once(home, env)
    assert "cats" in json.dumps(fake.requests[-1].messages)
    assert "dogs" not in json.dumps(fake.requests[-1].messages)


def test_title_status_and_usage(fake, home, env):
    fake.add(text("hi"))
    drop(home, "hello", "m1")
    run_once(home, env)
    drop(home, "/title Shopping", "t1")
    drop(home, "/status", "s1", timestamp="2030-01-01T00:00:01Z")
    drop(home, "/usage", "u1", timestamp="2030-01-01T00:00:02Z")
    run_once(home, env)
    assert "Shopping" in reply_to(home, "t1").text
    assert "busy policy queue" in reply_to(home, "s1").text
    usage = reply_to(home, "u1").text
    assert "This conversation: 1 request(s)" in usage and "Today (UTC)" in usage


def test_a_bad_argument_is_an_error_reply_that_changes_nothing(fake, home, env):
    drop(home, "/resume 7", "r1")
    run_once(home, env)
    reply = reply_to(home, "r1")
    assert reply["ok"] is False and "no conversation 7" in reply.text.lower()
    assert events_of(home, "command_run") == [{"command": "resume", "ok": False}]


def test_retry_queues_the_channels_dead_message_again(fake, home, env):
    fake.add(error(400, "invalid_request_error", "nope"))
    drop(home, "hello", "m1")
    run_once(home, env)
    assert list((home / "failed").iterdir())
    fake.add(text("hello to you"))
    drop(home, "/retry", "r1")
    run_once(home, env)
    retried = reply_to(home, "r1")
    assert (retried["ok"], retried["next"]) == (True, "m1")
    responses = [f for f in read_outbox(home) if f["kind"] == "response"]
    assert [f.text for f in responses] == ["hello to you"]
    assert list((home / "failed").iterdir()) == []


def test_retry_asks_an_answered_turn_again(fake, home, env):
    fake.add(text("first try"))
    drop(home, "pick a colour", "m1")
    run_once(home, env)
    fake.add(text("second try"))
    drop(home, "/retry", "r1")
    run_once(home, env)
    assert fake.requests[-1].last_user_text == "pick a colour"
    assert [f.text for f in read_outbox(home) if f["kind"] == "response"][-1] == "second try"


def test_usage_shows_dollars_where_the_price_is_known(fake, home, env):
    fake.add(text("hi", usage={"input_tokens": 1_000_000, "output_tokens": 0}))
    drop(home, "hello", "m1")
    run_once(home, env)
    drop(home, "/usage", "u1")
    run_once(home, env)
    usage = reply_to(home, "u1").text
    # the fake answers as the configured model, whose built-in price is $3 a million input
    # tokens (config/prices.py); cache reads and writes the fake adds cost what they cost
    assert "This conversation: 1 request(s)" in usage and "$" in usage
    assert "This month: 1 request(s)" in usage


def test_fork_makes_a_copy_of_turns_one_to_n_current(fake, home, env):
    fake.add(text("about cats"))
    drop(home, "cats", "m1")
    run_once(home, env)
    fake.add(text("about dogs"))
    drop(home, "dogs", "m2")
    run_once(home, env)
    drop(home, "/fork 1", "f1")
    run_once(home, env)
    reply = reply_to(home, "f1")
    assert reply["kind"] == "command" and reply["command"] == "fork" and reply["ok"] is True
    assert "is current now" in reply.text
    fake.add(text("more cats"))
    drop(home, "tell me more", "m3")
    run_once(home, env)
    sent = json.dumps(fake.requests[-1].messages)
    assert "cats" in sent and "dogs" not in sent  # the fork holds turn 1 only
    forks = db(home).execute("SELECT count(*) FROM conversations").fetchone()[0]
    assert forks == 2
    drop(home, "/fork 9", "f2")
    run_once(home, env)
    refused = reply_to(home, "f2")
    assert refused["ok"] is False and "there is no turn 9" in refused.text
