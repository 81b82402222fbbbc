"""Team agents may be given MCP tools: one by its exposed name, or a whole server's."""

from __future__ import annotations

import pytest

from smarthole.cli import main
from smarthole.testing import text, tool_use
from tests.helpers import drop, finals, run_once, write_config


@pytest.mark.parametrize(
    ("allowed", "offered"),
    [
        (["files__read_note"], ["files__read_note", "finish_task"]),
        (["files__*"], None),  # every tool of server files
    ],
)
def test_a_team_agent_gets_the_mcp_tools_it_is_allowed(home, fake, env, stdio, allowed, offered):
    write_config(
        home,
        mcp={"servers": {"files": stdio("good")}},
        agents={"reader": {"description": "Reads notes", "tools": allowed}},
    )
    fake.add(
        tool_use("start_task", {"task": "read groceries", "agents": ["reader"], "max_turns": 1}),
        entry_agent=True,
    )
    fake.add(tool_use("files__read_note", {"name": "groceries"}), agent="reader")
    fake.add(text("It says buy milk."), agent="reader")
    fake.add(text("Buy milk."), entry_agent=True)
    drop(home, "What is on my groceries note?", "m1")
    run_once(home, env)
    reader = [r for r in fake.requests if r.agent == "reader"]
    tools = sorted(reader[0].tools)
    if offered is not None:
        assert tools == offered
    else:
        assert "files__append_note" in tools and "read_file" not in tools
        assert all(t.startswith("files__") or t == "finish_task" for t in tools)
    assert reader[1].tool_results[0]["content"] == "The note groceries says: buy milk."
    assert [f.text for f in finals(home)] == ["Buy milk."]


def test_an_mcp_tool_of_no_configured_server_is_a_config_error(home, env, monkeypatch, capsys):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    write_config(home, agents={"reader": {"description": "d", "tools": ["files__*"]}})
    assert main(["run", "--home", str(home), "--once"]) == 2
    err = capsys.readouterr().err
    assert "[agents.reader] tools: no plugin registers a tool named 'files__*'" in err
    assert "and there is no MCP server 'files'" in err
