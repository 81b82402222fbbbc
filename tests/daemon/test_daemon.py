"""The daemon end to end: inbox file in, agent turn against the fake API, outbox file out."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smarthole import hookimpl
from smarthole.cli import main
from smarthole.config.loading import example_config_text
from smarthole.testing import error, server_error, text, tool_use, tool_uses
from tests.helpers import (
    TEST_PLUGINS,
    db,
    drop,
    finals,
    read_outbox,
    run_once,
    smarthole,
    wait_for,
    write_config,
)

OUTBOX_KEYS = {
    "id",
    "in_reply_to",
    "conversation",
    "channel",
    "turn",
    "kind",
    "waiting_for_reply",
    "created_at",
}


def pending_states(home: Path) -> dict[str, dict]:
    rows = db(home).execute("SELECT key, value FROM plugin_data WHERE plugin = 'smarthole'")
    return {row["key"]: json.loads(row["value"]) for row in rows}


def with_test_tools(home: Path, **sections) -> None:
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]}, **sections)


# -- one message ------------------------------------------------------------------------------


def test_a_message_gets_one_response_file(home, fake, env):
    fake.add(text("Hello! How can I help?"))
    drop(home, "hi there", "m1", channel="phone")
    run_once(home, env)
    (reply,) = read_outbox(home)
    assert set(reply.fields) == OUTBOX_KEYS
    assert reply["kind"] == "response" and reply["in_reply_to"] == "m1"
    assert (reply["channel"], reply["turn"], reply["waiting_for_reply"]) == ("phone", 1, False)
    assert reply.text == "Hello! How can I help?"
    assert reply.path.name.endswith(f"-{reply['id']}.md")
    assert not list((home / "inbox").iterdir())
    assert not list((home / ".smarthole" / "claimed").iterdir())
    request = fake.requests[0]
    assert request.last_user_text == "hi there"
    assert request.model == "claude-haiku-4-5"
    assert "You are smarthole" in request.system_text


def test_the_users_message_is_stored_before_the_model_is_called(home, fake, env):
    fake.add(error(400, "invalid_request_error", "nope"))
    drop(home, "remember me", "m1")
    run_once(home, env)
    rows = db(home).execute("SELECT kind, content FROM messages ORDER BY id").fetchall()
    assert rows[0]["kind"] == "user" and "remember me" in rows[0]["content"]


def test_a_second_message_continues_the_conversation(home, fake, env):
    fake.add(text("Noted: milk."))
    drop(home, "add milk", "m1")
    run_once(home, env)
    fake.add(text("You have milk."))
    drop(home, "what do I have?", "m2")
    run_once(home, env)
    first, second = finals(home)
    assert first["conversation"] == second["conversation"]
    assert (first["turn"], second["turn"]) == (1, 2)
    history = fake.requests[-1].messages
    assert [m["role"] for m in history] == ["user", "assistant", "user"]


def test_new_conversation_starts_turn_one_again(home, fake, env):
    fake.default = text("ok")
    drop(home, "one", "m1")
    run_once(home, env)
    drop(home, "two", "m2", new_conversation=True)
    run_once(home, env)
    first, second = finals(home)
    assert first["conversation"] != second["conversation"] and second["turn"] == 1


def test_idle_timeout_is_checked_before_the_context_is_built(home, fake, env):
    write_config(home, conversation={"idle_timeout_minutes": 30})
    fake.default = text("ok")
    drop(home, "one", "m1")
    run_once(home, env)
    later = datetime.now(UTC) + timedelta(minutes=31)
    drop(home, "two", "m2")
    run_once(home, env, clock=lambda: later)
    first, second = finals(home)
    assert first["conversation"] != second["conversation"]
    assert [m["role"] for m in fake.requests[-1].messages] == ["user"]


def test_explicit_conversation_targets_it_by_prefix(home, fake, env):
    fake.default = text("ok")
    drop(home, "one", "m1", channel="a")
    run_once(home, env)
    conversation = finals(home)[0]["conversation"]
    drop(home, "two", "m2", channel="b", new_conversation=True)
    drop(home, "back to one", "m3", conversation=conversation[:6])
    run_once(home, env)
    replies = {f["in_reply_to"]: f for f in finals(home)}
    assert replies["m3"]["conversation"] == conversation and replies["m3"]["turn"] == 2
    assert replies["m3"]["channel"] == "a"


def test_unknown_conversation_goes_to_failed(home, fake, env):
    drop(home, "hello?", "m1", conversation="doesnotexist")
    run_once(home, env)
    assert not fake.requests and not read_outbox(home)
    (reason,) = (home / "failed").glob("*.error.txt")
    assert "no conversation matches 'doesnotexist'" in reason.read_text()


# -- tools ------------------------------------------------------------------------------------


def test_plugin_tools_run_and_their_results_go_back_to_the_model(home, fake, env):
    with_test_tools(home)
    fake.add(
        tool_uses(
            [
                ("record", {"value": "a"}),
                ("explode", {"reason": "no disk"}),
                ("crash", {"reason": "bug"}),
                ("nosuchtool", {}),
            ]
        )
    )
    fake.add(text("done"))
    drop(home, "go", "m1")
    run_once(home, env)
    results = fake.requests[1].tool_results
    assert [r["is_error"] for r in results] == [False, True, True, True]
    assert results[0]["content"] == "recorded a"
    assert results[1]["content"] == "Error: no disk"
    assert "RuntimeError: bug" in results[2]["content"]
    assert "unknown tool 'nosuchtool'" in results[3]["content"]
    assert (home / "tool-runs.log").read_text() == "record a\n"
    tools = {t for t in fake.requests[0].tools}
    assert {"record", "send_message", "end_conversation", "get_conversation", "read_file"} <= tools


def test_invalid_tool_arguments_become_an_error_result(home, fake, env):
    with_test_tools(home)
    fake.add(tool_use("record", {"value": 3, "extra": True}))
    fake.add(text("done"))
    drop(home, "go", "m1")
    run_once(home, env)
    (result,) = fake.requests[1].tool_results
    assert result["is_error"] and "invalid arguments for record" in result["content"]


def test_the_tool_loop_stops_at_max_tool_iterations(home, fake, env):
    with_test_tools(home, conversation={"max_tool_iterations": 3})
    fake.default = tool_use("record", {"value": "again"})
    drop(home, "loop forever", "m1")
    run_once(home, env)
    assert len(fake.requests) == 3
    (reply,) = finals(home)
    assert reply["kind"] == "response" and "stopped after 3 rounds" in reply.text
    notes = db(home).execute("SELECT content FROM messages WHERE kind = 'note'").fetchall()
    assert "max_tool_iterations" in notes[0]["content"]


def test_send_message_writes_a_file_before_the_final_reply(home, fake, env):
    fake.add(tool_use("send_message", {"message": "Working on it..."}))
    fake.add(text("All done."))
    drop(home, "do the thing", "m1")
    run_once(home, env)
    note, final = read_outbox(home)
    assert (note["kind"], note.text, note["waiting_for_reply"]) == (
        "message",
        "Working on it...",
        False,
    )
    assert final["kind"] == "response" and final["in_reply_to"] == note["in_reply_to"] == "m1"
    transcript = db(home).execute("SELECT kind FROM messages ORDER BY id").fetchall()
    assert "agent_message" in [row["kind"] for row in transcript]


def test_end_conversation_keeps_this_turn_and_starts_fresh_next_time(home, fake, env):
    fake.add(tool_use("end_conversation", {"reason": "done"}))
    fake.add(text("Bye!"))
    drop(home, "thanks, bye", "m1")
    run_once(home, env)
    fake.add(text("Hello again"))
    drop(home, "hi", "m2")
    run_once(home, env)
    first, second = finals(home)
    assert first["turn"] == 1 and second["turn"] == 1
    assert first["conversation"] != second["conversation"]


# -- the pending question ---------------------------------------------------------------------


def ask(fake, question="Which list: groceries or party?"):
    fake.add(tool_use("send_message", {"message": question, "is_question": True}))
    fake.add(text("I asked which list you mean."))


def test_a_question_is_remembered_and_restored_as_pending_context(home, fake, env):
    ask(fake)
    drop(home, "add milk to my list", "m1")
    run_once(home, env)
    question, final = read_outbox(home)
    assert (question["kind"], question["waiting_for_reply"]) == ("question", True)
    assert final["kind"] == "response" and final["waiting_for_reply"] is True
    state = pending_states(home)[final["conversation"]]
    assert state["question"] == "Which list: groceries or party?"
    assert (
        state["original_message_id"] == "m1" and state["conversation_id"] == final["conversation"]
    )
    assert state["tool_calls_completed"] == 1 and "created_at" in state

    fake.add(text("Added milk to groceries."))
    drop(home, "groceries", "m2")
    run_once(home, env)
    system = fake.requests[-1].system_text
    assert "## Pending Context" in system
    assert '"Which list: groceries or party?"' in system
    assert pending_states(home) == {}
    reply = finals(home)[-1]
    assert reply["conversation"] == final["conversation"] and reply["turn"] == 2
    assert reply["waiting_for_reply"] is False


def test_a_failed_attempt_keeps_the_pending_question(home, fake, env):
    write_config(home, retry={"base_delay_seconds": 0.0})
    ask(fake)
    drop(home, "add milk", "m1")
    run_once(home, env)
    conversation = finals(home)[0]["conversation"]
    fake.add(server_error(), times=2)
    fake.add(text("Added."))
    drop(home, "groceries", "m2")
    run_once(home, env)
    assert finals(home)[-1].text == "Added."
    answer_requests = fake.requests[-3:]
    assert all("Which list" in r.system_text for r in answer_requests)
    assert conversation not in pending_states(home)


def test_several_conversations_hold_their_own_questions(home, fake, env):
    ask(fake, "Question A?")
    drop(home, "a", "m1", channel="a")
    run_once(home, env)
    ask(fake, "Question B?")
    drop(home, "b", "m2", channel="b")
    run_once(home, env)
    questions = {s["question"] for s in pending_states(home).values()}
    assert questions == {"Question A?", "Question B?"}


@pytest.mark.parametrize(("minutes", "kept"), [(59, True), (61, False)])
def test_pending_questions_expire_at_start(home, fake, env, minutes, kept):
    ask(fake)
    drop(home, "add milk", "m1")
    run_once(home, env)
    later = datetime.now(UTC) + timedelta(minutes=minutes)
    run_once(home, env, clock=lambda: later)
    assert bool(pending_states(home)) is kept


# -- bad input --------------------------------------------------------------------------------


BAD_FILES = {
    "latin1.txt": b"caf\xe9 au lait",
    "broken.md": b"+++\nid = \n+++\nhello",
    "broken.json": b'{"text": "hi",',
    "empty.md": b"+++\nid = 'e'\n+++\n   \n",
    "huge.txt": b"x" * 300_000,
}


def test_each_kind_of_bad_input_is_set_aside_with_its_reason(home, fake, env):
    fake.default = text("fine")
    for name, data in BAD_FILES.items():
        (home / "inbox" / name).write_bytes(data)
    os.mkfifo(home / "inbox" / "pipe.txt")
    (home / "inbox" / "folder").mkdir()  # a folder message with nothing in it (issue 36)
    (home / "inbox" / ".hidden.md").write_text("ignored")
    (home / "inbox" / "partial.md.part").write_text("ignored")
    (home / "inbox" / "draft.tmp").write_text("ignored")
    drop(home, "a good message", "good")
    run_once(home, env)
    failed = home / "failed"
    reasons = {
        p.name.removesuffix(".error.txt"): p.read_text().strip() for p in failed.glob("*.error.txt")
    }
    assert set(reasons) == {*BAD_FILES, "pipe.txt", "folder"}
    assert reasons["folder"] == "the folder is empty"
    assert "not valid UTF-8" in reasons["latin1.txt"]
    assert "invalid TOML front matter" in reasons["broken.md"]
    assert "invalid JSON" in reasons["broken.json"]
    assert "empty" in reasons["empty.md"]
    assert "larger than max_message_bytes" in reasons["huge.txt"]
    assert "not a regular file" in reasons["pipe.txt"]
    for name in BAD_FILES:
        assert (failed / name).exists()
    assert all(len(r.splitlines()) == 1 for r in reasons.values())
    assert sorted(p.name for p in (home / "inbox").iterdir()) == [
        ".hidden.md",
        "draft.tmp",
        "partial.md.part",
    ]
    assert [f["in_reply_to"] for f in finals(home)] == ["good"]


def test_messages_of_a_channel_run_in_timestamp_order(home, fake, env):
    fake.default = text("ok")
    for name, stamp in (("late", "2026-01-03"), ("early", "2026-01-01"), ("mid", "2026-01-02")):
        (home / "inbox" / f"{name}.md").write_text(
            f"+++\nid = '{name}'\ntimestamp = {stamp}T00:00:00Z\n+++\n{name}"
        )
    run_once(home, env)
    assert [r.last_user_text.split("\n")[-1] for r in fake.requests] == ["early", "mid", "late"]


def test_channels_take_turns_for_a_worker(home, fake, env, statements):
    """A worker queues its channel's next message itself, behind the other channels' heads:
    one worker alternates between two channels with a backlog each, and finds each next
    message with one look at its channel's own head."""
    write_config(home, daemon={"workers": 1})
    fake.default = text("ok")
    for n in range(3):
        for channel in ("a", "b"):
            name = f"{channel}{n}"
            (home / "inbox" / f"{name}.md").write_text(
                f"+++\nid = '{name}'\nchannel = '{channel}'\n"
                f"timestamp = 2026-01-0{n + 1}T00:00:00Z\n+++\n{name}"
            )
    run_once(home, env)
    assert [r.last_user_text.split("\n")[-1] for r in fake.requests] == [
        "a0", "b0", "a1", "b1", "a2", "b2"
    ]  # fmt: skip
    assert sum("FROM inbox WHERE channel = " in s for s in statements) == 6


def sleeps(thread: threading.Thread) -> int:
    """How often ``thread`` has gone to sleep (its voluntary context switches, from /proc)."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    return int(status.split("voluntary_ctxt_switches:")[1].split()[0])


def test_a_channel_alone_stays_with_its_worker_and_wakes_no_other(home, fake, env):
    """With no other channel waiting, a worker goes straight on with its channel's next
    message: it does not queue it and wake an idle worker, which would find nothing to take."""
    seen = []  # per message: the worker, and how often the other workers have slept

    class Recorder:
        @hookimpl
        def message_stored(self, conversation, message):
            if message.kind == "user":
                me = threading.current_thread()
                others = [
                    t
                    for t in threading.enumerate()
                    if t.name.startswith("smarthole-worker-") and t is not me
                ]
                seen.append((me.name, sum(sleeps(t) for t in others)))

    write_config(home, daemon={"workers": 4})
    fake.default = text("ok")
    for n in range(8):
        (home / "inbox" / f"a{n}.md").write_text(
            f"+++\nid = 'a{n}'\nchannel = 'a'\ntimestamp = 2026-01-0{n + 1}T00:00:00Z\n+++\na{n}"
        )
    run_once(home, env, extra_plugins=[("recorder", Recorder())])
    assert len(seen) == 8 and len({worker for worker, _ in seen}) == 1, seen
    assert seen[-1][1] - seen[0][1] <= 2, seen  # a wake-up for nothing is a sleep more


# -- the CLI ----------------------------------------------------------------------------------


def test_run_without_an_api_key_exits_2_with_one_line(home, environ, monkeypatch, capsys):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert main(["run", "--home", str(home), "--once"]) == 2
    stderr = capsys.readouterr().err
    assert stderr.strip().splitlines() == [stderr.strip()] and "ANTHROPIC_API_KEY" in stderr


def test_run_once_in_a_subprocess_answers_the_inbox(home, fake, env):
    """End to end: ``smarthole run --once`` as its own process (the others run in this one)."""
    fake.add(text("Hi from the subprocess"))
    drop(home, "hello", "m1")
    result = smarthole("run", "--home", str(home), "--once", env=env)
    assert result.returncode == 0, result.stderr
    assert finals(home)[0].text == "Hi from the subprocess"


def test_send_wait_prints_the_reply_from_a_live_daemon(home, fake, env, threads, capsys):
    fake.add(text("The answer is 42."))
    threads(home, env)
    code = main(
        ["send", "--home", str(home), "--wait", "--timeout", "20", "what", "is", "the", "answer?"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip() == "The answer is 42."
    assert fake.requests[0].last_user_text == "what is the answer?"


def test_send_without_wait_prints_the_id_and_writes_an_inbox_file(home, capsys):
    assert main(["send", "--home", str(home), "--channel", "phone", "hello"]) == 0
    message_id = capsys.readouterr().out.strip()
    (path,) = (home / "inbox").glob("*.md")
    assert message_id in path.name and 'channel = "phone"' in path.read_text()


def test_send_wait_exits_1_on_timeout_and_on_an_error_reply(home, fake, env, threads, capsys):
    assert main(["send", "--home", str(home), "--wait", "--timeout", "0.3", "hi"]) == 1
    assert "no reply" in capsys.readouterr().err
    for unanswered in (home / "inbox").iterdir():
        unanswered.unlink()
    write_config(home, retry={"max_attempts": 1})
    fake.add(error(401, "authentication_error", "bad key"))
    threads(home, env)
    assert main(["send", "--home", str(home), "--wait", "--timeout", "20", "hi"]) == 1
    assert "API key" in capsys.readouterr().out


def test_the_live_daemon_picks_up_files_as_they_arrive(home, fake, env, live_daemon):
    fake.default = text("ok")
    for n in range(3):
        drop(home, f"message {n}", f"m{n}")
        wait_for(lambda n=n: len(finals(home)) == n + 1, 10, f"reply {n}")
    assert [f["turn"] for f in finals(home)] == [1, 2, 3]


def test_model_name_max_tokens_and_prompt_come_from_config(home, fake, env):
    write_config(
        home,
        model={"name": "claude-test-model", "max_tokens": 321},
        agent={"persona": "You are Jeeves.", "instructions": "- Be formal."},
    )
    fake.add(text("Very good."))
    drop(home, "hello", "m1")
    run_once(home, env)
    request = fake.requests[0]
    assert request.model == "claude-test-model" and request.body["max_tokens"] == 321
    assert request.system_text.startswith("You are Jeeves.\n\n## Guidelines\n- Be formal.")


def test_get_conversation_reads_an_earlier_conversation(home, fake, env):
    fake.add(text("Milk noted."))
    drop(home, "remember milk", "m1")
    run_once(home, env)
    earlier = finals(home)[0]["conversation"]
    fake.add(tool_use("get_conversation", {"conversation_id": earlier[:6]}))
    fake.add(text("You asked about milk."))
    drop(home, "what did I say before?", "m2", new_conversation=True)
    run_once(home, env)
    (result,) = fake.requests[-1].tool_results
    assert not result["is_error"]
    data = json.loads(result["content"])
    assert data["id"] == earlier and "User: remember milk" in data["transcript"]
    fake.add(tool_use("get_conversation", {}))
    fake.add(text("ok"))
    drop(home, "list them", "m3")
    run_once(home, env)
    listed = json.loads(fake.requests[-1].tool_results[0]["content"])["conversations"]
    assert [c["id"] for c in listed] == [earlier]


def test_demo_shows_the_whole_exchange_without_a_key(tmp_path):
    """End to end: ``smarthole demo`` as its own process, with no key in its environment."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    result = smarthole("demo", env=environment, timeout=60)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert 'kind = "question"' in out and "Which list should I add milk to" in out
    assert "waiting_for_reply = true" in out
    assert "Done: milk is on your groceries list" in out
    assert "workspace/Lists/Groceries.md now says:\n- milk" in out


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process without ANTHROPIC_*, as a newcomer's shell is."""
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)


def test_demo_keeps_its_home_in_a_new_folder_to_look_around(tmp_path, no_key, capsys):
    kept = tmp_path / "demo-home"
    code = main(["demo", "--home", str(kept)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"The demo's home is kept: smarthole conversations --home {kept}" in out
    assert f"a home, kept, in {kept}" in out and "throwaway" not in out
    assert main(["conversations", "--home", str(kept), "--json"]) == 0
    [conversation] = json.loads(capsys.readouterr().out)
    assert conversation["turns"] == 2
    assert (kept / "workspace" / "Lists" / "Groceries.md").read_text() == "- milk\n"
    assert (kept / "config.toml").read_text() == example_config_text(["plugins"])  # as init's
    assert (kept / "plugins").is_dir()


def test_the_tour_walks_every_feature_printing_each_step(tmp_path, no_key, capsys):
    """``demo --tour``: a tool, a team task with the web view's link, an approval answered
    from the command line, an attachment, a schedule firing and a search, each a step."""
    kept = tmp_path / "tour-home"
    started = time.monotonic()
    code = main(["demo", "--tour", "--home", str(kept)])
    took = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 0, out + err
    steps = re.findall(r"^\[(\d)/6 · [\d.]+ s\] (.+)$", out, re.M)
    assert [int(n) for n, _ in steps] == [1, 2, 3, 4, 5, 6]
    assert "Done: read_file said 1: # Lisbon" in out
    assert "The team finished. completed after 2 of 2 turns" in out
    assert "$ smarthole approve " in out and "workspace/notes/packing.md now says" in out
    assert "I see 1 image." in out and "Time to stretch." in out
    assert "$ smarthole search Lisbon" in out and "**Lisbon**" in out
    assert re.search(r"open http://127\.0\.0\.1:\d+/\?token=\S+ \(once\)", out)
    print(f"the tour took {took:.1f} s")  # the goal (< 20 s) is a figure, not a test


@pytest.mark.parametrize("what", ["a home", "a file"])
def test_demo_will_not_run_in_a_folder_that_is_not_empty(tmp_path, what, no_key, capsys):
    target = tmp_path / "taken"
    if what == "a home":
        target.mkdir()
        (target / "config.toml").write_text("# a real home\n")
    else:
        target.write_text("notes")
    assert main(["demo", "--home", str(target)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"smarthole: {target} is not an empty folder; the demo needs a new one to keep"
    )
    assert not (tmp_path / "taken" / "inbox").exists()
