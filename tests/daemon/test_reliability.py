"""Crash-proof, rate-limit-proof processing: kill -9 and signals with real processes (the
restart after a kill runs in this process: recovery is the start-up's), the rest with the
daemon in this process (``run_once``, ``live_daemon``, ``threads``, ``main``)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from smarthole.agent.client import IN_DOUBT
from smarthole.cli import main
from smarthole.testing import (
    error,
    hold,
    prompt_too_long,
    rate_limited,
    server_error,
    text,
    tool_use,
)
from tests.helpers import (
    TEST_PLUGINS,
    db,
    drop,
    finals,
    read_outbox,
    run_once,
    tool_runs,
    wait_for,
    write_config,
)


def assert_valid_history(home: Path) -> None:
    """Every stored conversation is valid Messages API history, as stored (no repairs)."""
    rows = (
        db(home)
        .execute(
            "SELECT conversation_id, kind, content FROM messages WHERE kind IN "
            "('user', 'assistant', 'tool_result') ORDER BY conversation_id, turn, id"
        )
        .fetchall()
    )
    conversations: dict[str, list[dict]] = {}
    for row in rows:
        messages = conversations.setdefault(row["conversation_id"], [])
        role = "assistant" if row["kind"] == "assistant" else "user"
        content = json.loads(row["content"])
        if (
            messages
            and messages[-1]["role"] == role == "user"
            and content[0]["type"] == "tool_result"
        ):
            messages[-1]["content"].extend(content)
        else:
            messages.append({"role": role, "content": content})
    for messages in conversations.values():
        assert messages[0]["role"] == "user"
        for before, after in itertools.pairwise(messages):
            assert before["role"] != after["role"], (before, after)
            uses = [b["id"] for b in before["content"] if b["type"] == "tool_use"]
            if uses:
                results = [b["tool_use_id"] for b in after["content"] if b["type"] == "tool_result"]
                assert results == uses


def assert_one_final_each(home: Path, *message_ids: str) -> None:
    """Each message has exactly one final reply, its claim is released and it is done."""

    def statuses() -> dict[str, str]:
        rows = db(home).execute("SELECT message_id, status FROM inbox")
        return {row["message_id"]: row["status"] for row in rows}

    # The final file is written before the claim is released: wait for the release.
    wait_for(lambda: all(statuses().get(m) == "done" for m in message_ids), 10, statuses)
    wait_for(lambda: not list((home / ".smarthole" / "claimed").iterdir()), 10, "no claims")
    replies = [f["in_reply_to"] for f in finals(home)]
    assert sorted(replies) == sorted(message_ids), replies


@pytest.fixture
def tools_home(home):
    write_config(
        home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools", "blocking_delivery"]}
    )
    return home


# -- kill -9 at every step ------------------------------------------------------------------


def test_kill_during_a_model_call(tools_home, fake, env, daemons, threads):
    home, release = tools_home, threading.Event()
    fake.add(hold(release, text("too late")))
    first = daemons(home, env)
    drop(home, "hello", "m1")
    fake.wait_for_requests(1, timeout=10)
    first.kill()
    release.set()
    fake.add(text("Hello after the crash"))
    threads(home, env)
    wait_for(lambda: finals(home), 15, "the reply after restart")
    assert [f.text for f in finals(home)] == ["Hello after the crash"]
    assert fake.requests[-1].last_user_text == "hello"
    users = db(home).execute("SELECT COUNT(*) FROM messages WHERE kind = 'user'").fetchone()[0]
    assert users == 1
    assert_one_final_each(home, "m1")
    assert_valid_history(home)


def test_kill_after_a_tool_completed_before_the_next_model_call(
    tools_home, fake, env, daemons, threads
):
    home, release = tools_home, threading.Event()
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(hold(release, text("never seen")))
    first = daemons(home, env)
    drop(home, "record it", "m1")
    fake.wait_for_requests(2, timeout=10)
    first.kill()
    release.set()
    fake.add(text("Recorded."))
    threads(home, env)
    wait_for(lambda: finals(home), 15)
    assert tool_runs(home) == ["record once"]
    assert fake.requests[-1].tool_results[0]["content"] == "recorded once"
    assert_one_final_each(home, "m1")
    assert_valid_history(home)


def test_kill_during_a_non_idempotent_tool_reports_it_in_doubt(
    tools_home, fake, env, daemons, threads
):
    home = tools_home
    fake.add(tool_use("slow_record", {"tag": "x"}))
    first = daemons(home, env)
    drop(home, "record slowly", "m1")
    wait_for(lambda: (home / "started-x").exists(), 10, "the tool to start")
    first.kill()
    (home / "started-x").unlink()
    fake.add(text("I could not tell whether that worked."))
    threads(home, env)
    wait_for(lambda: finals(home), 15)
    (result,) = fake.requests[-1].tool_results
    assert result["is_error"] and result["content"] == IN_DOUBT
    assert not (home / "started-x").exists(), "the in-doubt tool was run again"
    assert tool_runs(home) == []
    assert_one_final_each(home, "m1")
    assert_valid_history(home)


def test_kill_during_an_idempotent_tool_runs_it_again(tools_home, fake, env, daemons, threads):
    home = tools_home
    fake.add(tool_use("slow_lookup", {"tag": "y"}))
    first = daemons(home, env)
    drop(home, "look it up", "m1")
    wait_for(lambda: (home / "started-y").exists(), 10, "the tool to start")
    first.kill()
    (home / "go-y").touch()
    fake.add(text("Found it."))
    threads(home, env)
    wait_for(lambda: finals(home), 15)
    (result,) = fake.requests[-1].tool_results
    assert not result["is_error"] and result["content"] == "looked up y"
    assert tool_runs(home) == ["slow_lookup-start y", "slow_lookup-start y", "slow_lookup y"]
    assert_one_final_each(home, "m1")
    assert_valid_history(home)


def test_kill_between_the_final_reply_and_releasing_the_claim(
    tools_home, fake, env, daemons, threads
):
    home = tools_home
    (home / "block-delivery").touch()
    fake.add(text("The one and only reply."))
    first = daemons(home, env)
    drop(home, "hi", "m1")
    wait_for(lambda: (home / "delivering-m1").exists(), 10, "the final reply")
    assert list((home / ".smarthole" / "claimed").iterdir())
    written = sorted(path.name for path in (home / "outbox").iterdir())
    first.kill()
    (home / "block-delivery").unlink()
    second = threads(home, env)
    wait_for(lambda: not list((home / ".smarthole" / "claimed").iterdir()), 15)
    second.stop()
    assert [f.text for f in read_outbox(home)] == ["The one and only reply."]
    assert sorted(path.name for path in (home / "outbox").iterdir()) == written
    assert len(fake.requests) == 1
    assert_one_final_each(home, "m1")
    recorded = db(home).execute("SELECT state FROM outbox").fetchall()
    assert [row["state"] for row in recorded] == ["delivered"]
    events = "SELECT COUNT(*) FROM events WHERE type = 'reply_written'"
    assert db(home).execute(events).fetchone()[0] == 1


# -- signals and the lock ---------------------------------------------------------------------


def test_sigterm_during_a_model_call_exits_0_and_the_turn_resumes(home, fake, env, daemons):
    release = threading.Event()
    fake.add(hold(release, text("Finished after all.")))
    daemon = daemons(home, env)
    drop(home, "hello", "m1")
    fake.wait_for_requests(1, timeout=10)
    daemon.process.send_signal(signal.SIGTERM)
    # The reply comes only once the daemon has taken the signal: a busy machine must not let
    # the turn finish before the stop is even seen (then there is nothing to resume).
    wait_for(lambda: "smarthole is stopping" in daemon.output(), 10, "the stop")
    release.set()
    assert daemon.process.wait(timeout=20) == 0
    turn = db(home).execute("SELECT status FROM turns").fetchone()
    assert turn["status"] == "interrupted"
    assert finals(home) == []
    run_once(home, env)
    assert [f.text for f in finals(home)] == ["Finished after all."]
    assert len(fake.requests) == 1, "the stored reply was used; no second model call"


def test_sigterm_abandons_a_stuck_call_after_the_grace_period(home, fake, env, daemons):
    write_config(home, daemon={"shutdown_grace_seconds": 0.5})
    release = threading.Event()
    fake.add(hold(release, text("never")))
    daemon = daemons(home, env)
    drop(home, "hello", "m1")
    fake.wait_for_requests(1, timeout=10)
    assert daemon.terminate(timeout=20) == 0
    assert "abandoning" in daemon.output()
    release.set()
    fake.add(text("Second try."))
    run_once(home, env)
    assert [f.text for f in finals(home)] == ["Second try."]


def test_a_second_daemon_on_the_same_home_is_refused(home, environ, threads, capsys):
    threads(home, environ)
    assert main(["run", "--home", str(home)]) == 2
    assert f"already running (pid {os.getpid()})" in capsys.readouterr().err


def test_a_corrupt_database_is_moved_aside(home, fake, environ, capsys):
    state = home / ".smarthole"
    (state / "smarthole.db").write_bytes(b"garbage" * 1000)
    fake.add(text("Fresh start."))
    drop(home, "hello", "m1")
    assert main(["run", "--home", str(home), "--once"]) == 0
    stderr = capsys.readouterr().err
    (aside,) = state.glob("smarthole.db.corrupt-*")
    assert str(state / "smarthole.db") in stderr and "CORRUPT" in stderr
    assert aside.read_bytes().startswith(b"garbage")
    assert finals(home)[0].text == "Fresh start."


# -- rate limits, outages, dead letters -------------------------------------------------------


def test_429_with_retry_after_then_success(home, fake, env, live_daemon):
    fake.add(rate_limited(retry_after=0.3))
    fake.add(text("Made it."))
    drop(home, "hello", "m1")
    wait_for(lambda: finals(home), 15)
    first, second = fake.requests
    assert second.time - first.time >= 0.25
    deferred = db(home).execute("SELECT data FROM events WHERE type = 'turn_deferred'").fetchone()
    assert json.loads(deferred["data"])["delay_seconds"] == pytest.approx(0.3)
    assert finals(home)[0].text == "Made it."


def test_an_hour_long_retry_after_does_not_block_other_channels(home, fake, env, threads, capsys):
    write_config(home, retry={"max_delay_seconds": 3600})
    fake.add(rate_limited(retry_after=3600), when=lambda r: "slow" in r.last_user_text)
    fake.default = text("Quick answer.")
    threads(home, env)
    drop(home, "slow one", "m1", channel="busy")
    wait_for(lambda: len(fake.requests) == 1, 10)
    drop(home, "fast one", "m2", channel="other")
    wait_for(lambda: finals(home), 10, "the other channel's reply")
    assert finals(home)[0]["in_reply_to"] == "m2"
    assert main(["status", "--home", str(home), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["running"] is True
    (deferred,) = status["deferred"]
    assert deferred["id"] == "m1" and deferred["attempts"] == 1
    assert deferred["channel"] == "busy" and "429" in deferred["last_error"]
    assert {"queued", "in_progress", "failed", "waiting"} <= set(status)


def test_the_deferral_schedule_survives_a_restart(home, fake, environ, capsys):
    env = environ
    write_config(home, retry={"max_delay_seconds": 3600})
    fake.add(rate_limited(retry_after=3600))
    drop(home, "hello", "m1")
    daemon = run_once(home, env)
    assert daemon.summary["deferred"] == 1
    daemon = run_once(home, env)
    assert len(fake.requests) == 1, "not due yet: no second attempt"
    assert main(["run", "--home", str(home), "--once"]) == 0
    assert "1 message(s) deferred" in capsys.readouterr().err
    assert len(fake.requests) == 1


def test_5xx_until_max_attempts_then_failed_and_retry_redrives(home, fake, env, capsys):
    write_config(home, retry={"max_attempts": 3, "base_delay_seconds": 0.0})
    fake.add(server_error(503), times=3)
    drop(home, "hello", "m1")
    run_once(home, env)
    (error_reply,) = finals(home)
    assert error_reply["kind"] == "error" and "smarthole retry m1" in error_reply.text
    assert len(error_reply.text.splitlines()) == 1 and "Traceback" not in error_reply.text
    (failed,) = [p for p in (home / "failed").iterdir() if not p.name.endswith(".error.txt")]
    reason = failed.with_name(failed.name + ".error.txt").read_text()
    assert "HTTP 503" in reason and "attempts: 3" in reason
    assert main(["retry", "--home", str(home), "m1"]) == 0
    assert "moved back" in capsys.readouterr().out
    assert not (home / "failed" / failed.name).exists()
    fake.add(text("Worked this time."))
    run_once(home, env)
    assert [f["kind"] for f in finals(home)] == ["error", "response"]
    assert finals(home)[-1].text == "Worked this time."
    assert finals(home)[-1]["turn"] == 1
    # The message has two final replies now; the second says which one it follows.
    first, second = finals(home)
    assert second["retry_of"] == first["id"] and "retry_of" not in first.fields
    stored = db(home).execute("SELECT id, retry_of FROM outbox ORDER BY created_at").fetchall()
    assert [tuple(row) for row in stored] == [(first["id"], None), (second["id"], first["id"])]


def test_non_retryable_errors_go_dead_at_once(home, fake, env):
    fake.add(error(401, "authentication_error", "invalid x-api-key"))
    drop(home, "hello", "m1")
    run_once(home, env)
    assert len(fake.requests) == 1
    (reply,) = finals(home)
    assert reply["kind"] == "error" and "API key" in reply.text


def test_prompt_too_long_trims_history_and_retries_once(home, fake, env):
    fake.default = text("ok")
    for n in range(3):
        drop(home, f"message {n} " + "x" * 200, f"m{n}")
        run_once(home, env)
    fake.add(prompt_too_long())
    fake.add(text("Trimmed and answered."))
    drop(home, "one more", "m9")
    run_once(home, env)
    long, short = fake.requests[-2:]
    assert len(short.messages) < len(long.messages)
    assert short.messages[-1] == long.messages[-1]
    assert finals(home)[-1].text == "Trimmed and answered."


def test_retry_makes_a_deferred_message_due_now(home, fake, env, live_daemon, capsys):
    write_config(home, retry={"max_delay_seconds": 3600})
    fake.add(rate_limited(retry_after=3600))
    fake.add(text("Retried."))
    drop(home, "hello", "m1")
    wait_for(lambda: len(fake.requests) == 1, 10)
    wait_for(
        lambda: db(home).execute("SELECT status FROM inbox").fetchone()["status"] == "deferred", 10
    )
    assert main(["retry", "--home", str(home), "--all"]) == 0
    assert "m1: due now" in capsys.readouterr().out
    wait_for(lambda: finals(home), 10)
    assert finals(home)[0].text == "Retried."


# -- exactly once -----------------------------------------------------------------------------


def test_a_duplicate_id_is_not_processed_again(home, fake, env):
    fake.add(text("First and only."))
    (home / "inbox" / "a.md").write_text("+++\nid = 'same'\n+++\nhello")
    run_once(home, env)
    (home / "inbox" / "again.md").write_text("+++\nid = 'same'\n+++\nhello")
    run_once(home, env)
    assert len(fake.requests) == 1 and len(finals(home)) == 1
    assert not list((home / "inbox").iterdir())
    duplicate = db(home).execute("SELECT * FROM events WHERE type = 'duplicate_skipped'")
    assert duplicate.fetchone() is not None


def test_an_id_reused_with_a_different_text_is_set_aside(home, fake, env):
    fake.add(text("First."))
    (home / "inbox" / "a.md").write_text("+++\nid = 'same'\n+++\nhello")
    run_once(home, env)
    (home / "inbox" / "b.md").write_text("+++\nid = 'same'\n+++\nsomething else")
    run_once(home, env)
    assert len(fake.requests) == 1
    assert (
        home / "failed" / "b.md.error.txt"
    ).read_text().strip() == "id already used for a different message"


def test_a_second_signal_forces_an_immediate_exit(home, fake, env, daemons):
    write_config(home, daemon={"shutdown_grace_seconds": 60})
    release = threading.Event()
    fake.add(hold(release, text("never")))
    daemon = daemons(home, env)
    drop(home, "hello", "m1")
    fake.wait_for_requests(1, timeout=10)
    daemon.process.send_signal(signal.SIGTERM)
    daemon.process.send_signal(signal.SIGINT)
    assert daemon.process.wait(timeout=10) == 130
    release.set()
    assert "forced exit" in daemon.output()


def test_a_claimed_file_without_a_ledger_row_is_recovered(home, fake, env):
    """A crash between moving a file out of the inbox and recording it loses nothing."""
    claimed = home / ".smarthole" / "claimed" / "18ea0000--note.md"
    claimed.write_text("+++\nid = 'orphan'\n+++\nDid you get this?")
    fake.add(text("Yes, I did."))
    run_once(home, env)
    assert [(f["in_reply_to"], f.text) for f in finals(home)] == [("orphan", "Yes, I did.")]
    assert not claimed.exists()


def test_a_claimed_file_a_power_cut_brings_back_is_skipped_as_a_duplicate(home, fake, env):
    """The claimed file's removal is not synced: a power cut may bring it back after its
    message was answered. The next start takes it as the duplicate it is: no second reply."""
    fake.add(text("The only answer."))
    dropped = drop(home, "hello", "m1")
    original = dropped.read_bytes()
    run_once(home, env)
    back = home / ".smarthole" / "claimed" / f"18ea0000--{dropped.name}"
    back.write_bytes(original)
    run_once(home, env)
    assert [f.text for f in finals(home)] == ["The only answer."]
    assert len(fake.requests) == 1
    assert not back.exists()
    skipped = "SELECT COUNT(*) FROM events WHERE type = 'duplicate_skipped'"
    assert db(home).execute(skipped).fetchone()[0] == 1


def test_channels_run_concurrently_and_in_order_within(home, fake, env, live_daemon):
    release = threading.Event()
    fake.add(hold(release, text("slow done")), when=lambda r: "slow" in r.last_user_text)
    fake.default = lambda request: text(f"re: {request.last_user_text}")
    drop(home, "slow one", "a1", channel="a")
    fake.wait_for_requests(1, timeout=10)
    drop(home, "after slow", "a2", channel="a")
    drop(home, "quick", "b1", channel="b")
    wait_for(
        lambda: [f["in_reply_to"] for f in finals(home)] == ["b1"],
        10,
        "channel b while channel a is busy",
    )
    assert all("after slow" not in r.last_user_text for r in fake.requests)
    release.set()
    wait_for(lambda: len(finals(home)) == 3, 10)
    assert [f["in_reply_to"] for f in finals(home)] == ["b1", "a1", "a2"]
