"""The randomized crash torture: many SIGKILLs at random moments, nothing lost or doubled.

The fast version runs in the suite; `pytest -m slow` (or `python scripts/torture.py`) runs
the long one.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from smarthole.home import Home
from smarthole.testing import text
from tests.helpers import REPO, db, drop, run_once

if str(REPO / "scripts") not in sys.path:  # torture.py uses the bench's fake desktop
    sys.path.insert(0, str(REPO / "scripts"))
spec = importlib.util.spec_from_file_location("torture", REPO / "scripts" / "torture.py")
assert spec and spec.loader
torture = importlib.util.module_from_spec(spec)
sys.modules["torture"] = torture
spec.loader.exec_module(torture)


def check(result) -> None:
    assert result.lost == 0, result
    assert result.duplicates == 0, result
    assert result.tools_run_twice == 0, result
    assert result.left_claimed == 0, result
    assert result.invalid_histories == 0, result
    assert result.disagreements == 0, result  # ledger, turns and events agree after each kill
    assert result.desktop_rejected == 0, result
    assert result.notified_twice == 0, result  # a notification goes at most once
    assert result.unapproved_runs == 0, result  # no call that asked ran without a stored yes


def test_random_kills_lose_and_double_nothing(tmp_path):
    check(
        torture.torture(
            messages=16, channels=3, kills=6, seed=7, root=tmp_path, max_gap=0.5, quiet=True
        )
    )


def test_random_kills_during_team_tasks_repeat_and_skip_no_agent_turn(tmp_path):
    result = torture.torture(
        messages=8,
        channels=2,
        kills=5,
        seed=5,
        root=tmp_path,
        max_gap=0.5,
        quiet=True,
        team_every=2,
    )
    check(result)
    assert result.team_tasks == 4
    assert result.bad_team_tasks == 0, result  # turns 1..N, in order, each by the right agent


def test_random_kills_around_approvals_never_run_a_call_without_a_yes_nor_twice(tmp_path):
    result = torture.torture(
        messages=12,
        channels=2,
        kills=6,
        seed=3,
        root=tmp_path,
        max_gap=0.5,
        quiet=True,
        desktop_every=0,
        approve_every=3,
    )
    check(result)
    assert result.approvals == 4, result


def test_random_kills_across_approval_expiries_never_approve_late(tmp_path):
    result = torture.torture(
        messages=6,
        channels=2,
        kills=4,
        seed=11,
        root=tmp_path,
        max_gap=0.5,
        quiet=True,
        desktop_every=0,
        approve_every=2,
        approval_timeout=1,
    )
    check(result)
    assert result.approved_late == 0, result  # an answer after the expiry approves nothing
    assert result.expired >= 1, result  # some did expire: the case is exercised


def test_a_disagreement_between_ledger_turns_and_events_is_reported(home, fake, env):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    assert torture.disagreement(Home(home)) == []
    with db(home) as connection:
        connection.execute("UPDATE turn_rows SET status = 'running' WHERE message_id = 'm1'")
    (problem,) = torture.disagreement(Home(home))
    assert problem == "message m1: ledger done, turn running, 1 turn_completed event(s)"


def test_a_stored_reply_without_its_usage_row_is_reported(home, fake, env):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    assert torture.disagreement(Home(home)) == []
    with db(home) as connection:
        (conversation,) = connection.execute("SELECT conversation_id FROM usage").fetchone()
        connection.execute("DELETE FROM usage")
    (problem,) = torture.disagreement(Home(home))
    assert problem == f"{conversation} turn 1: 1 stored replies, 0 usage rows"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_random_kills_long_run(tmp_path):
    result = torture.torture(messages=200, channels=5, kills=40, seed=11, root=tmp_path, quiet=True)
    print(result)
    check(result)
