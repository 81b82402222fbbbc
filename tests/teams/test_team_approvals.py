"""A team agent's call that needs approval pauses its task at that agent turn; the answer
resumes the task at the same turn, with the same agent, and the call runs once."""

from __future__ import annotations

import json

import pytest

from smarthole.testing import text, tool_use
from tests.helpers import (
    TEST_PLUGINS,
    db,
    drop,
    finals,
    read_outbox,
    tool_runs,
    wait_for,
    write_config,
)
from tests.teams.test_tasks import start_task


@pytest.fixture
def clerk_home(home):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        agents={
            "clerk": {"description": "Records things", "tools": ["record"], "approve": ["rec*"]},
            "critic": {"description": "Checks things"},
        },
    )
    return home


def test_a_team_agents_call_waits_and_resumes_at_the_same_turn_with_the_same_agent(
    clerk_home, fake, env, live_daemon
):
    home = clerk_home
    fake.add(start_task(task="record x", agents=["clerk", "critic"], max_turns=2), entry_agent=True)
    fake.add(tool_use("record", {"value": "x"}), agent="clerk")
    drop(home, "have the clerk record x", "m1")
    (item,) = wait_for(lambda: [f for f in read_outbox(home) if f["kind"] == "approval"], 15)
    assert "team agent clerk" in item.text and item["tool"] == "record"
    # The item is written just before the commit that pauses the task.
    task = wait_for(
        lambda: db(home).execute("SELECT id FROM tasks WHERE status = 'interrupted'").fetchone(),
        10,
        "the task to pause",
    )
    assert tool_runs(home) == []
    (asked,) = db(home).execute("SELECT data FROM events WHERE type = 'approval_requested'")
    assert json.loads(asked["data"])["agent"] == "clerk"
    assert json.loads(asked["data"])["task"] == task["id"]
    fake.add(text("Recorded x."), agent="clerk")
    fake.add(text("Looks right."), agent="critic")
    fake.add(text("The clerk recorded x."), entry_agent=True)
    drop(home, "", "a1", approve=item["approval"])
    wait_for(lambda: finals(home), 15, "the final reply")
    assert tool_runs(home) == ["record x"]
    turns = db(home).execute("SELECT idx, agent, text FROM task_turns ORDER BY idx").fetchall()
    assert [(t["idx"], t["agent"], t["text"]) for t in turns] == [
        (0, "clerk", "Recorded x."),
        (1, "critic", "Looks right."),
    ]
    clerk = [r for r in fake.requests if r.agent == "clerk"]
    assert clerk[-1].tool_results[0]["content"] == "recorded x"
    (done,) = db(home).execute("SELECT status FROM tasks")
    assert done["status"] == "completed"
