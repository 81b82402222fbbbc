"""Approvals survive kill -9: a call never runs without a stored yes, never twice.

Real daemon processes, killed with SIGKILL at each step of an approval's life; the test
plugin's tools log each real run to ``tool-runs.log``, which these tests count.
"""

from __future__ import annotations

import pytest

from smarthole.agent.client import IN_DOUBT
from smarthole.app import App
from smarthole.daemon.runtime import Runtime
from smarthole.db.states import ApprovalState
from smarthole.home import Home
from smarthole.testing import text, tool_use
from tests.daemon.test_reliability import assert_one_final_each, assert_valid_history
from tests.helpers import TEST_PLUGINS, db, drop, read_outbox, tool_runs, wait_for, write_config


def approval_items(home):
    return [f for f in read_outbox(home) if f["kind"] == "approval"]


def nth_approval(home, count=1):
    return wait_for(lambda: len(approval_items(home)) >= count and approval_items(home), 15)[
        count - 1
    ]


def configure(home, tool="record", plugins=("testtools",), **approvals):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": list(plugins)},
        approvals={"tools": [tool], **approvals},
    )


def a_call_waiting(home, fake, env, daemons):
    """A real daemon whose turn waits for approval of ``record once`` (message m1): the
    daemon, and the approval item it wrote."""
    fake.add(tool_use("record", {"value": "once"}))
    daemon = daemons(home, env)
    drop(home, "record once", "m1")
    return daemon, nth_approval(home)


def status_of(home, message_id):
    row = db(home).execute("SELECT status FROM inbox WHERE message_id = ?", (message_id,))
    found = row.fetchone()
    return found["status"] if found else None


def test_kill_while_waiting_then_an_answer_dropped_while_down_is_applied_at_start(
    home, fake, env, daemons, threads
):
    configure(home)
    first, item = a_call_waiting(home, fake, env, daemons)
    first.kill()
    assert tool_runs(home) == []
    drop(home, "", "a1", approve=item["approval"])  # while no daemon runs
    fake.add(text("Recorded."))
    threads(home, env)
    assert_one_final_each(home, "m1")
    assert tool_runs(home) == ["record once"]
    assert len(approval_items(home)) == 1  # not asked again
    assert len(fake.requests) == 2
    assert_valid_history(home)


def test_kill_while_waiting_then_the_restarted_daemon_still_waits(
    home, fake, env, daemons, threads
):
    configure(home)
    first, item = a_call_waiting(home, fake, env, daemons)
    first.kill()
    second = threads(home, env)
    wait_for(lambda: status_of(home, "m1") == "deferred", 15, "the message to wait again")
    assert tool_runs(home) == [] and len(approval_items(home)) == 1
    fake.add(text("Recorded."))
    drop(home, "", "a1", approve=item["approval"])
    assert_one_final_each(home, "m1")
    second.close()
    assert tool_runs(home) == ["record once"]


def test_kill_after_the_decision_is_stored_and_before_the_run_runs_it_once(
    home, fake, env, daemons, threads
):
    configure(home, plugins=["testtools", "blocking_resume"])
    first, item = a_call_waiting(home, fake, env, daemons)
    wait_for(lambda: status_of(home, "m1") == "deferred", 15, "the message to wait")
    (home / "block-resume").touch()  # the resumed turn stops before its tool loop
    drop(home, "", "a1", approve=item["approval"])
    wait_for(lambda: (home / "resuming-m1").exists(), 15, "the turn to resume")
    (decided,) = db(home).execute("SELECT status FROM approvals")
    assert decided["status"] == "approved" and tool_runs(home) == []
    first.kill()
    (home / "block-resume").unlink()
    fake.add(text("Recorded."))
    threads(home, env)
    assert_one_final_each(home, "m1")
    assert tool_runs(home) == ["record once"]
    assert_valid_history(home)


def test_a_decision_stored_while_no_daemon_runs_is_acted_on_at_start(
    home, fake, env, daemons, threads
):
    configure(home)
    first, item = a_call_waiting(home, fake, env, daemons)
    first.kill()
    # Another process decided meanwhile (the state a kill leaves right after the answer's
    # commit): the decision stored, the message due, no intent of the call yet.
    app = App.load(Home(home), env=env)
    try:
        decided = Runtime.of(app).answers.decide(
            item["approval"], ApprovalState.APPROVED, by="inbox"
        )
        assert decided.error is None
    finally:
        app.close()
    assert tool_runs(home) == []
    fake.add(text("Recorded."))
    threads(home, env)
    assert_one_final_each(home, "m1")
    assert tool_runs(home) == ["record once"]
    assert_valid_history(home)


@pytest.mark.parametrize("ask_on_unknown", [False, True])
def test_kill_during_an_approved_run_never_runs_it_twice(
    home, fake, env, daemons, threads, ask_on_unknown
):
    configure(home, tool="slow_record", ask_on_unknown=ask_on_unknown)
    fake.add(tool_use("slow_record", {"tag": "x"}))
    first = daemons(home, env)
    drop(home, "record x slowly", "m1")
    item = nth_approval(home)
    drop(home, "", "a1", approve=item["approval"])
    wait_for(lambda: (home / "started-x").exists(), 15, "the approved tool to start")
    first.kill()
    (home / "started-x").unlink()
    if not ask_on_unknown:
        fake.add(text("I could not tell whether that worked."))
        threads(home, env)
        assert_one_final_each(home, "m1")
        (result,) = fake.requests[-1].tool_results
        assert result["is_error"] and result["content"] == IN_DOUBT
        assert not (home / "started-x").exists(), "the in-doubt tool was run again"
        assert tool_runs(home) == []
        return
    threads(home, env)
    question = nth_approval(home, 2)
    assert question["question"] == "outcome_unknown" and question["tool"] == "slow_record"
    assert question["approval"] != item["approval"]
    assert not (home / "started-x").exists(), "run again before the person said so"
    (home / "go-x").touch()
    fake.add(text("Recorded it again, as you said."))
    drop(home, "", "a2", approve=question["approval"])
    assert_one_final_each(home, "m1")
    assert tool_runs(home) == ["slow_record x"]
    (result,) = fake.requests[-1].tool_results
    assert result["content"] == "slowly recorded x"
