"""Ids that come from the model are unique only within their conversation (or task).

A restarted scripted model, or a model that simply repeats itself, may use a tool-use id that
another conversation already stored. That must never break the store: each conversation runs
its tool, keeps its own intent row and result, and starts its own team task.
"""

from __future__ import annotations

from smarthole.testing import text, tool_use
from tests.helpers import TEST_PLUGINS, db, drop, finals, run_once, write_config


def test_a_tool_use_id_reused_in_another_conversation_is_its_own_call(home, fake, env):
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]})
    for channel in ("phone", "desk"):
        fake.add(tool_use("record", {"value": channel}, id="toolu_same"))
        fake.add(text(f"Recorded on {channel}."))
        drop(home, f"record {channel}", f"m-{channel}", channel=channel)
        run_once(home, env)
    assert sorted(f.text for f in finals(home)) == ["Recorded on desk.", "Recorded on phone."]
    runs = (home / "tool-runs.log").read_text().splitlines()
    assert sorted(runs) == ["record desk", "record phone"]
    calls = db(home).execute("SELECT conversation_id, runs FROM tool_calls").fetchall()
    assert len({row["conversation_id"] for row in calls}) == 2
    assert all(row["runs"] == 1 for row in calls)


def test_a_start_task_id_reused_in_another_conversation_starts_its_own_task(home, fake, env):
    write_config(home, agents={"critic": {"description": "Checks"}})
    for channel in ("phone", "desk"):
        start = {"task": f"check {channel}", "agents": ["critic"], "max_turns": 1}
        fake.add(tool_use("start_task", start, id="toolu_task"), entry_agent=True)
        fake.add(text(f"{channel} checked"), agent="critic")
        fake.add(text(f"Done on {channel}."), entry_agent=True)
        drop(home, f"check {channel}", f"m-{channel}", channel=channel)
        run_once(home, env)
    tasks = db(home).execute("SELECT task, status FROM tasks ORDER BY created_at").fetchall()
    assert [(t["task"], t["status"]) for t in tasks] == [
        ("check phone", "completed"),
        ("check desk", "completed"),
    ]
    assert sorted(f.text for f in finals(home)) == ["Done on desk.", "Done on phone."]
