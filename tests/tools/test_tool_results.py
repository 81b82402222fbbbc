"""A tool's result reaches the model whole: blocks (an image) for the entry agent and for team
agents alike, stored as they are so a replay after a crash sends them again."""

from __future__ import annotations

import json

import pytest

from smarthole.testing import text, tool_use
from tests.helpers import TEST_PLUGINS, db, drop, run_once, write_config

PLUGINS = {"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]}


def image_blocks(result: dict) -> list[dict]:
    content = result["content"]
    assert isinstance(content, list), f"the result was flattened to text: {content!r}"
    return [b for b in content if b["type"] == "image"]


@pytest.fixture
def tool_home(home):
    write_config(
        home,
        plugins=PLUGINS,
        agents={"painter": {"description": "Paints", "tools": ["snapshot"]}},
    )
    return home


def test_an_entry_agent_tool_returning_blocks_sends_them_to_the_model(tool_home, fake, env):
    fake.add(tool_use("snapshot", {"label": "the cat"}))
    fake.add(text("A cat."))
    drop(tool_home, "Show me the cat", "m1")
    run_once(tool_home, env)

    (result,) = fake.requests[-1].tool_results
    (image,) = image_blocks(result)
    assert image["source"]["media_type"] == "image/png"
    assert {"type": "text", "text": "the cat"} in result["content"]
    stored = db(tool_home).execute("SELECT content FROM messages WHERE kind = 'tool_result'")
    (row,) = stored.fetchall()
    assert image_blocks(json.loads(row["content"])[0]), "the store lost the image"


def test_a_team_agent_tool_returning_an_image_keeps_it(tool_home, fake, env):
    fake.add(
        tool_use("start_task", {"task": "Paint", "agents": ["painter"], "max_turns": 1}),
        entry_agent=True,
    )
    fake.add(tool_use("snapshot", {"label": "a sunset"}), agent="painter")
    fake.add(text("Painted."), agent="painter")
    fake.add(text("The painter painted."), entry_agent=True)
    drop(tool_home, "Paint something", "m1")
    run_once(tool_home, env)

    painter = [r for r in fake.requests if r.agent == "painter"]
    (result,) = painter[-1].tool_results
    (image,) = image_blocks(result)
    assert image["source"]["data"]
    rows = db(tool_home).execute("SELECT content FROM task_messages WHERE kind = 'tool_result'")
    (row,) = rows.fetchall()
    assert image_blocks(json.loads(row["content"])[0]), "the task's store lost the image"
