"""Housekeeping: once the daemon has been quiet, it lets go of what it keeps for busy times."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from smarthole.daemon.upkeep import Quiet, housekeeping
from smarthole.testing import text
from tests.helpers import db, drop, run_once, wait_for, write_config

MINUTE = timedelta(minutes=1)
LET_GO = "let go of the kept history of 1 conversation(s)"


def test_a_quiet_spell_is_due_once_it_has_lasted():
    start = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    quiet = Quiet()
    assert not quiet.due(busy=False, now=start, after=MINUTE)  # the spell begins
    assert not quiet.due(busy=False, now=start + MINUTE / 2, after=MINUTE)
    assert quiet.due(busy=False, now=start + MINUTE, after=MINUTE)
    assert not quiet.due(busy=False, now=start + 5 * MINUTE, after=MINUTE), "once a spell"
    assert not quiet.due(busy=True, now=start + 6 * MINUTE, after=MINUTE)  # work ends it
    assert not quiet.due(busy=False, now=start + 7 * MINUTE, after=MINUTE)  # a new one begins
    assert quiet.due(busy=False, now=start + 8 * MINUTE, after=MINUTE)


@pytest.fixture
def runtime(home, fake, env, runtimes):
    """A home with one answered message, and a runtime on it that keeps its history."""
    fake.add(text("Hello"))
    drop(home, "hi", "m1")
    run_once(home, env)
    runtime = runtimes(home)
    (conversation,) = db(home).execute("SELECT id FROM conversations")
    runtime.processor.history.window(conversation["id"], current_turn=2, budget_chars=10_000)
    return runtime


def clock_at(moments: list[datetime]):
    return lambda: moments[-1]


def test_the_history_goes_once_the_daemon_has_been_quiet_long_enough(runtime, caplog):
    moments = [datetime.now(UTC)]  # near now: no conversation is old enough to end
    clock, quiet = clock_at(moments), Quiet()
    caplog.set_level(logging.INFO, logger="smarthole.daemon.upkeep")
    housekeeping(runtime, clock, quiet)
    moments.append(moments[-1] + timedelta(seconds=59))
    housekeeping(runtime, clock, quiet)
    assert LET_GO not in caplog.text
    moments.append(moments[-1] + timedelta(seconds=1))
    housekeeping(runtime, clock, quiet)
    assert LET_GO in caplog.text
    assert runtime.processor.history.clear() == 0, "nothing was left to clear"


def test_nothing_goes_while_a_message_waits(runtime, home, caplog):
    drop(home, "are you there?", "m2")
    runtime.inbox.claim_batch()  # claimed: its channel has work until it is answered
    moments = [datetime.now(UTC)]
    clock, quiet = clock_at(moments), Quiet()
    caplog.set_level(logging.INFO, logger="smarthole.daemon.upkeep")
    for _ in range(3):
        housekeeping(runtime, clock, quiet)
        moments.append(moments[-1] + 2 * MINUTE)
    assert LET_GO not in caplog.text
    assert runtime.processor.history.clear() == 1, "the history was still kept"


def test_the_housekeeper_of_a_running_daemon_lets_go(home, fake, env, threads, caplog):
    caplog.set_level(logging.INFO)
    write_config(home, inbox={"rescan_seconds": 0.05}, daemon={"idle_release_seconds": 0})
    fake.add(text("Hello"))
    threads(home, env)
    drop(home, "hi", "m1")
    wait_for(lambda: LET_GO in caplog.text, 20, "the quiet daemon to let go")
    assert "Hello" in "".join(p.read_text() for p in (home / "outbox").iterdir())
