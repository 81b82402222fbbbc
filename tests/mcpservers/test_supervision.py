"""Supervising servers: tool lists that change, restarts with backoff, shutting down."""

from __future__ import annotations

import logging

from smarthole.tools import SchemaTool, ToolRegistry, ToolResult
from tests.helpers import wait_for


def test_a_changed_tool_list_is_picked_up(start, stdio):
    _, registry = start(grows=stdio("changing"))
    assert [t.name for t in registry] == ["grows__grow"]
    result = registry.get("grows__grow").call({"name": "fresh"}, None)
    assert result.text == "added fresh"
    wait_for(lambda: registry.get("grows__fresh"), 10, "the new tool")
    assert registry.get("grows__fresh").call({}, None).text == "I am fresh"


def test_a_server_that_exits_is_logged_once_and_started_again(start, stdio, caplog):
    with caplog.at_level(logging.INFO, logger="smarthole.mcpservers"):
        manager, registry = start(crashy=stdio("crash"))
        (view,) = manager.views()
        assert registry.get("crashy__crash").call({}, None).is_error
        # Failed, for the 1 s before the first retry: stderr and the next try are shown.
        wait_for(
            lambda: (
                view.state == "failed"
                and view.stderr == ["crash: something went badly wrong"]
                and view.retry_at
            ),
            10,
            "the failure to be seen",
        )
        # A slow machine may need more than one try to start it again; each is quiet.
        wait_for(lambda: view.state == "ready" and registry.get("crashy__crash"), 60, "restart")
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if "crashy exited" in m]) == 1
    assert "MCP server crashy is ready again" in said


def test_calls_to_a_stopped_server_are_error_results(start, stdio):
    manager, registry = start(files=stdio("good"))
    tool = registry.get("files__lookup")
    assert tool.idempotent and not registry.get("files__append_note").idempotent
    manager.stop()
    assert [t.name for t in registry] == []
    result = tool.call({"tag": "x"}, None)
    assert result.is_error and result.text.startswith("Error: server files is not running")
    assert [v.state for v in manager.views()] == ["stopped"]


def test_a_tool_whose_name_is_taken_is_refused(start, stdio, caplog):
    registry = ToolRegistry()
    registry.replace_group("mine", [SchemaTool(
        name="files__lookup",
        description="Someone else's lookup.",
        plugin="mine",
        schema={"type": "object"},
        handler=lambda arguments: ToolResult("mine"),
    )])  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="smarthole.mcpservers"):
        manager, _ = start(registry, files=stdio("good", tools=["lookup", "read_note"]))
    assert registry.get("files__lookup").plugin == "mine"
    assert registry.get("files__read_note").plugin == "mcp:files"
    (view,) = manager.views()
    assert view.refused == ["lookup (its name files__lookup is taken)"]
    assert [t["name"] for t in view.tools] == ["files__read_note"]
    assert "MCP server files: tools refused: lookup" in caplog.text
