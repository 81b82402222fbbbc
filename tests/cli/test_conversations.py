"""Conversations as first-class objects: events, titles, summaries, and the CLI around them."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smarthole.agent.prompts import SUMMARY_SYSTEM, TITLE_SYSTEM
from smarthole.cli import main
from smarthole.cli.render import relative_time
from smarthole.testing import error, hold, server_error, text, tool_use
from tests.helpers import db, drop, finals, in_process, run_once, wait_for, write_config

REQUIRED_EVENT_KEYS = {"type", "at", "conversation", "channel", "turn", "message_id"}


def is_title(request) -> bool:
    return request.system_text == TITLE_SYSTEM


def is_summary(request) -> bool:
    return request.system_text == SUMMARY_SYSTEM


@pytest.fixture
def titled(home, fake):
    """Titles and summaries on, answered by the fake; agent turns answered "ok"."""
    write_config(home, titles={"enabled": True})
    fake.default = lambda request: (
        text("Shopping list for the weekend")
        if is_title(request)
        else text("The user planned a shopping list. Milk was added.")
        if is_summary(request)
        else text("ok")
    )
    return home


def cli(home: Path, *args: str) -> int:
    return main([args[0], "--home", str(home), *args[1:]])


# -- turns and events -------------------------------------------------------------------------


def test_every_event_carries_its_conversation_and_turn(home, fake, env, capsys):
    fake.add(tool_use("send_message", {"message": "Which one?", "is_question": True}))
    fake.add(text("Asked."))
    drop(home, "hello", "m1")
    run_once(home, env)
    assert cli(home, "events", "--json") == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    types = [e["type"] for e in events]
    for expected in (
        "conversation_started",
        "message_received",
        "turn_started",
        "message_stored",
        "tool_called",
        "tool_finished",
        "question_asked",
        "reply_written",
        "turn_completed",
    ):
        assert expected in types
    conversation = finals(home)[0]["conversation"]
    for event in events:
        assert set(event) >= REQUIRED_EVENT_KEYS
        assert event["conversation"] == conversation
        assert event["message_id"] == "m1"
        if event["type"] != "conversation_started":
            assert event["turn"] == 1
    stored = [e for e in events if e["type"] == "message_stored"]
    assert [e["kind"] for e in stored] == ["user", "assistant", "tool_result", "assistant"]


def turn_completed(home: Path, message_id: str) -> bool:
    query = "SELECT 1 FROM events WHERE type = 'turn_completed' AND message_id = ?"
    return db(home).execute(query, (message_id,)).fetchone() is not None


def test_events_can_be_followed_and_filtered(home, fake, env, live_daemon):
    fake.default = text("ok")
    drop(home, "first", "m1", channel="a")
    # Not just the outbox file: it is written before its turn's last events are committed.
    wait_for(lambda: turn_completed(home, "m1"), 10, "m1's turn to complete")
    command = [sys.executable, "-m", "smarthole", "events", "--home", str(home), "--follow"]
    follower = subprocess.Popen(
        [*command, "--limit", "1"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        first = follower.stdout.readline()  # the newest past event: the follower is ready
        assert "msg=m1" in first
        drop(home, "second", "m2", channel="b")
        line = follower.stdout.readline()
        while "turn_started" not in line:
            assert "msg=m1" not in line, "only new events follow"
            line = follower.stdout.readline()
        assert "turn=1" in line and "msg=m2" in line
    finally:
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=10) == 130
    conversation = finals(home)[0]["conversation"]
    assert main(["events", "--home", str(home), "--conversation", conversation[:5], "--json"]) == 0


def test_turn_failures_and_deferrals_are_events(home, fake, env, capsys):
    write_config(home, retry={"max_attempts": 2, "base_delay_seconds": 0.0})
    fake.add(server_error(), times=2)
    drop(home, "hello", "m1")
    run_once(home, env)
    assert cli(home, "events", "--json") == 0
    types = [json.loads(line)["type"] for line in capsys.readouterr().out.splitlines()]
    assert "turn_deferred" in types and "turn_failed" in types


# -- titles and summaries ---------------------------------------------------------------------


def test_a_title_is_written_after_the_first_turn(titled, fake, env):
    drop(titled, "add milk", "m1")
    run_once(titled, env)
    title_requests = [r for r in fake.requests if is_title(r)]
    assert len(title_requests) == 1 and not title_requests[0].tools
    assert "add milk" in title_requests[0].last_user_text
    (row,) = db(titled).execute("SELECT title FROM conversations")
    assert row["title"] == "Shopping list for the weekend"
    drop(titled, "and eggs", "m2")
    run_once(titled, env)
    assert len([r for r in fake.requests if is_title(r)]) == 1


def test_a_failed_title_call_falls_back(home, fake, env):
    write_config(home, titles={"enabled": True})
    refused = error(400, "invalid_request_error", "no")  # a transient failure is retried
    fake.default = lambda request: refused if is_title(request) else text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    (row,) = db(home).execute("SELECT title FROM conversations")
    assert row["title"] == "Untitled conversation"


def test_the_summary_of_an_ended_conversation_reaches_the_next_prompt(titled, fake, env):
    drop(titled, "add milk", "m1")
    run_once(titled, env)
    drop(titled, "something new", "m2", new_conversation=True)
    run_once(titled, env)
    summary_requests = [r for r in fake.requests if is_summary(r)]
    assert len(summary_requests) == 1 and not summary_requests[0].tools
    agent_request = [r for r in fake.requests if r.tools][-1]
    assert "## Recent conversations" in agent_request.system_text
    assert "Shopping list for the weekend" in agent_request.system_text
    assert "Milk was added." in agent_request.system_text


def test_a_renamed_title_is_pinned(titled, fake, env, capsys):
    drop(titled, "add milk", "m1")
    run_once(titled, env)
    conversation = finals(titled)[0]["conversation"]
    assert cli(titled, "rename", conversation[:6], "My", "groceries") == 0
    with db(titled) as connection:
        connection.execute("UPDATE conversations SET title_state = 'pending'")
    drop(titled, "more", "m2")
    run_once(titled, env)
    (row,) = db(titled).execute("SELECT title, title_pinned FROM conversations")
    assert (row["title"], row["title_pinned"]) == ("My groceries", 1)


# -- listing and showing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ago", "words"),
    [
        (timedelta(seconds=5), "just now"),
        (timedelta(minutes=5), "5 minutes ago"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(hours=2), "2 hours ago"),
        (timedelta(days=3), "3 days ago"),
    ],
)
def test_relative_times_read_naturally(ago, words):
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert relative_time(now - ago, now) == words


def test_yesterday():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC).astimezone()
    assert relative_time(now - timedelta(hours=30), now) == "yesterday"


def test_ls_lists_conversations_most_recent_first(titled, fake, env, capsys):
    drop(titled, "first", "m1", channel="phone")
    run_once(titled, env)
    fake.add(tool_use("send_message", {"message": "Which?", "is_question": True}))
    fake.add(text("Asked."))
    drop(titled, "second", "m2", channel="desk")
    run_once(titled, env)
    capsys.readouterr()
    assert cli(titled, "ls") == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("1. [desk] Shopping list for the weekend (just now)")
    assert "waiting for your reply" in first and "1 turn" in first
    assert second.startswith("2. [phone] ")
    assert cli(titled, "conversations", "--json", "--channel", "phone") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert {
        "id",
        "title",
        "channel",
        "status",
        "turns",
        "created_at",
        "updated_at",
        "waiting_for_reply",
    } <= set(listed)
    assert (listed["channel"], listed["turns"], listed["status"]) == ("phone", 1, "active")


def test_old_ended_conversations_are_hidden_unless_all(home, fake, env, capsys):
    fake.default = text("ok")
    drop(home, "old", "m1")
    run_once(home, env)
    long_ago = (datetime.now(UTC) - timedelta(days=40)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with db(home) as connection:
        connection.execute(
            "UPDATE conversations SET ended_at = ?, updated_at = ?", (long_ago, long_ago)
        )
    assert cli(home, "ls", "--json") == 0
    assert json.loads(capsys.readouterr().out) == []
    assert cli(home, "ls", "--all", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["status"] == "ended"


def test_show_prints_the_transcript(home, fake, env, capsys):
    write_config(home, retry={"max_attempts": 1})
    fake.add(tool_use("send_message", {"message": "Which list?", "is_question": True}))
    fake.add(text("I asked."))
    drop(home, "add milk", "m1")
    run_once(home, env)
    fake.add(server_error())
    drop(home, "groceries", "m2")
    run_once(home, env)
    conversation = finals(home)[0]["conversation"]
    capsys.readouterr()
    assert cli(home, "show", conversation[:4]) == 0
    out = capsys.readouterr().out
    for expected in (
        "turn 1",
        "turn 2",
        "you: add milk",
        "agent asked: Which list?",
        "tools: send_message",
        "agent: I asked.",
        "error: HTTP 500",
        "you: groceries",
    ):
        assert expected in out


@pytest.mark.parametrize("command", ["show", "export", "rename"])
def test_unknown_and_ambiguous_ids_are_one_line_errors(home, fake, env, capsys, command):
    fake.default = text("ok")
    drop(home, "one", "m1", channel="a")
    drop(home, "two", "m2", channel="b")
    run_once(home, env)
    extra = ["title"] if command == "rename" else []
    capsys.readouterr()
    assert cli(home, command, "zzzz", *extra) == 1
    err = capsys.readouterr().err
    assert "no conversation matches 'zzzz'" in err and len(err.strip().splitlines()) == 1
    with db(home) as connection:
        connection.execute("UPDATE conversations SET id = 'ab' || id")
    assert cli(home, command, "ab", *extra) == 1
    assert "ambiguous" in capsys.readouterr().err


# -- export, new, prune -----------------------------------------------------------------------


def test_export_has_only_what_the_person_and_the_agent_said(home, fake, env, capsys):
    fake.add(tool_use("read_file", {"path": "notes.md"}))
    fake.add(tool_use("send_message", {"message": "Which list?", "is_question": True}))
    fake.add(text("I asked which list."))
    drop(home, "add milk", "m1")
    run_once(home, env)
    fake.add(text("Added to groceries."))
    drop(home, "groceries", "m2")
    run_once(home, env)
    conversation = finals(home)[0]["conversation"]
    capsys.readouterr()
    assert cli(home, "export", conversation, "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"conversation_id", "channel", "title", "summary", "entry_agent", "turns"}
    assert data["turns"] == [
        {"turn": 1, "role": "human", "content": "add milk"},
        {"turn": 1, "role": "entry_agent", "content": "Which list?"},
        {"turn": 1, "role": "entry_agent", "content": "I asked which list."},
        {"turn": 2, "role": "human", "content": "groceries"},
        {"turn": 2, "role": "entry_agent", "content": "Added to groceries."},
    ]
    raw = json.dumps(data)
    assert "tool_use" not in raw and "read_file" not in raw and "notes.md" not in raw
    assert cli(home, "export", conversation, "--format", "markdown") == 0
    markdown = capsys.readouterr().out
    assert "## Turn 2" in markdown and "**You**: groceries" in markdown


def test_new_ends_the_channel_conversation_with_a_summary(titled, fake, env, capsys, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    drop(titled, "add milk", "m1", channel="phone")
    run_once(titled, env)
    assert cli(titled, "new", "--channel", "phone") == 0
    assert 'Ended "Shopping list for the weekend"' in capsys.readouterr().out
    (row,) = db(titled).execute("SELECT ended_at, end_reason, summary FROM conversations")
    assert row["ended_at"] and row["end_reason"] == "new"
    assert row["summary"] == "The user planned a shopping list. Milk was added."
    drop(titled, "hello again", "m2", channel="phone")
    run_once(titled, env)
    assert finals(titled)[-1]["turn"] == 1
    assert cli(titled, "new", "--channel", "nothing-here") == 0
    assert "No active conversation" in capsys.readouterr().out


def test_prune_removes_the_oldest_ended_conversations(home, fake, env, capsys):
    write_config(home, conversation={"max_retained": 1})
    fake.default = text("ok")
    for n in range(3):
        drop(home, f"conversation {n}", f"m{n}", new_conversation=True)
        run_once(home, env)
    cli(home, "new")
    capsys.readouterr()
    assert cli(home, "prune", "--dry-run") == 0
    assert "Would remove 2" in capsys.readouterr().out
    assert db(home).execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 3
    assert cli(home, "prune") == 0
    assert "Removed 2" in capsys.readouterr().out
    (kept,) = db(home).execute("SELECT id FROM conversations")
    assert kept["id"] == finals(home)[-1]["conversation"]


# -- resume and chat --------------------------------------------------------------------------


def test_resume_with_no_conversations(home, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert cli(home, "resume") == 0
    assert capsys.readouterr().out.strip() == "No previous conversations found."


@pytest.mark.parametrize("answer", ["q\n", ""])
def test_resume_picker_can_be_cancelled(home, fake, env, capsys, monkeypatch, answer):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    assert cli(home, "resume") == 0
    out = capsys.readouterr().out
    assert out.startswith("Recent conversations:")
    assert "1. [default] " in out and "Enter number to resume, or 'q' to cancel:" in out


def test_resume_picks_a_conversation_and_chats_in_it(home, fake, env, capsys, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    fake.default = text("ok")
    drop(home, "add milk", "m1", new_conversation=True)
    run_once(home, env)
    conversation = finals(home)[0]["conversation"]
    cli(home, "new")
    fake.default = text("Welcome back.")
    monkeypatch.setattr("sys.stdin", io.StringIO("1\nwhat was I doing?\n"))
    assert cli(home, "resume") == 0
    assert "smarthole: Welcome back." in capsys.readouterr().out
    (row,) = db(home).execute(
        "SELECT turns, ended_at FROM conversations WHERE id = ?", (conversation,)
    )
    assert row["turns"] == 2 and row["ended_at"] is None


def test_chat_with_piped_input(home, fake, environ, capsys):
    fake.add(text("Hi! What shall we do?"))
    fake.add(text("Milk added."))
    result = in_process(capsys, "chat", "--home", str(home), input="hello\n\nadd milk\n")
    assert result.returncode == 0, result.stderr
    assert "smarthole: Hi! What shall we do?" in result.stdout
    assert "smarthole: Milk added." in result.stdout
    (row,) = db(home).execute("SELECT channel, turns FROM conversations")
    assert (row["channel"], row["turns"]) == ("chat", 2)


def test_chat_continue_and_conversation_flags(home, fake, environ, capsys):
    fake.default = text("ok")
    assert in_process(capsys, "chat", "--home", str(home), input="one\n").returncode == 0
    result = in_process(capsys, "chat", "--home", str(home), "--continue", input="two\n")
    assert result.returncode == 0
    (row,) = db(home).execute("SELECT id, turns FROM conversations")
    assert row["turns"] == 2
    result = in_process(
        capsys, "chat", "--home", str(home), "--conversation", row["id"][:5], input="three\n"
    )
    assert result.returncode == 0
    assert db(home).execute("SELECT turns FROM conversations").fetchone()[0] == 3


def test_ctrl_c_ends_a_chat_cleanly(home, fake, env):
    release = threading.Event()
    fake.add(hold(release, text("too late")))
    chat = subprocess.Popen(
        [sys.executable, "-m", "smarthole", "chat", "--home", str(home)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        chat.stdin.write("hello\n")
        chat.stdin.flush()
        fake.wait_for_requests(1, timeout=15)
        chat.send_signal(signal.SIGINT)
        release.set()
        _out, err = chat.communicate(timeout=30)
    finally:
        if chat.poll() is None:
            chat.kill()
    assert chat.returncode == 130
    assert "Traceback" not in err
    (row,) = db(home).execute("SELECT title FROM conversations")
    assert row["title"] == "Untitled (interrupted)"
    user = db(home).execute("SELECT content FROM messages WHERE kind = 'user'").fetchone()
    assert "hello" in user["content"]
    status = db(home).execute("SELECT status FROM turns").fetchone()["status"]
    assert status in ("interrupted", "completed")


def test_the_operations_commands_through_main(home, fake, env, capsys, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert cli(home, "send", "--channel", "ops", "hello") == 0
    message_id = capsys.readouterr().out.strip()
    assert cli(home, "status", "--json") == 3
    status = json.loads(capsys.readouterr().out)
    assert status["running"] is False and status["queued"] == []
    write_config(home, retry={"max_attempts": 1})
    fake.add(server_error())
    run_once(home, env)
    assert cli(home, "status") == 3
    out = capsys.readouterr().out
    assert "daemon: not running" in out and "failed: 1" in out and message_id in out
    assert cli(home, "retry", message_id[:8]) == 0
    assert "moved back" in capsys.readouterr().out
    assert cli(home, "retry") == 2
    fake.add(text("Second time lucky."), when=lambda r: r.last_user_text == "hello")
    fake.add(text("Chat works."))
    monkeypatch.setattr("sys.stdin", io.StringIO("and again\n"))
    assert cli(home, "chat", "--channel", "ops", "--continue") == 0
    assert "smarthole: Chat works." in capsys.readouterr().out
    replies = {f["in_reply_to"]: f.text for f in finals(home) if f["kind"] == "response"}
    assert replies[message_id] == "Second time lucky."
