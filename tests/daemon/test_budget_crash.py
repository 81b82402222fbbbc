"""kill -9 during a model call near a cap: its reservation stays counted, so no overshoot.

The fake holds one response near the cap: the daemon, a real process, has sent that call and
reserved its bound when it is killed. The request may well have been billed, so after the
restart its reservation counts at its bound; the turn resumes, and the sum of what the fake
reported for every request it received still never passes the cap.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from smarthole.config.prices import micros
from smarthole.testing import RecordedRequest, Reply, tool_use
from tests.helpers import db, drop, wait_for
from tests.spending import CALL, USAGE, budget_items, spent, write_capped

CAP = 0.05
HELD_AT = 18  # the request the fake does not answer: about 75 % of the cap spent by then


def test_kill_during_a_call_near_the_cap_never_overshoots_after_the_restart(
    home, fake, env, daemons
):
    write_capped(home, budget={"per_conversation": CAP})
    answered = threading.Event()  # set at the end, so the fake can let its handler go
    count = 0

    def answer(request: RecordedRequest) -> Reply:
        nonlocal count
        count += 1
        reply = replace(tool_use("list_files", {}), usage=USAGE)
        return replace(reply, hold=answered) if count == HELD_AT else reply

    fake.add(answer, times=400)
    first = daemons(home, env)
    drop(home, "look around, forever", "m1")
    fake.wait_for_requests(HELD_AT, timeout=60)
    wait_for(lambda: _open(home), 10, "the held call's reservation")
    first.kill()
    assert micros(CAP) > HELD_AT * CALL
    daemons(home, env)
    try:
        (item,) = wait_for(lambda: budget_items(home), 60, "the budget question")
    finally:
        answered.set()
    assert item["cap"] == "per_conversation"
    assert spent(fake) <= micros(CAP)  # the held request counted as sent, and billed
    assert len(fake.requests) > HELD_AT  # the turn went on after the restart
    assert len(_open(home)) == 1  # the unanswered call still counts at its bound


def _open(home) -> list:
    with db(home) as connection:
        return connection.execute("SELECT bound FROM spend WHERE state = 'open'").fetchall()
