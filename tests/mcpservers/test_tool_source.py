"""MCP servers' tools in a turn: real servers (stdio and HTTP), the real daemon, a fake model."""

from __future__ import annotations

import json
import logging

import pytest

from smarthole.errors import ConfigError
from smarthole.testing import text, tool_use
from tests.helpers import db, drop, finals, run_once, write_config


def recorded(home) -> list[dict]:
    row = (
        db(home)
        .execute("SELECT value FROM plugin_data WHERE plugin = 'mcp' AND key = 'servers'")
        .fetchone()
    )
    return json.loads(row["value"])


def runs(home) -> list[str]:
    log = home / "mcp-runs.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_turn_uses_an_mcp_tool(home, fake, env, stdio, http_server, transport):
    server = stdio("good") if transport == "stdio" else {"url": http_server("good", home)}
    write_config(home, mcp={"servers": {"files": server}})
    fake.add(tool_use("files__read_note", {"name": "groceries"}))
    fake.add(text("Your groceries note says to buy milk."))
    drop(home, "What does my groceries note say?", "m1")
    run_once(home, env)
    first, second = fake.requests
    offered = {t["name"]: t for t in first.body["tools"]}
    assert offered["files__read_note"]["description"] == "Read a note by name."
    assert offered["files__read_note"]["input_schema"]["required"] == ["name"]
    assert {"read_file", "files__append_note", "files__slow_write"} <= set(offered)
    (result,) = second.tool_results
    assert result["content"] == "The note groceries says: buy milk."
    assert not result["is_error"]
    assert runs(home) == ["read_note groceries"]
    assert [f.text for f in finals(home)] == ["Your groceries note says to buy milk."]
    called = db(home).execute("SELECT data FROM events WHERE type = 'tool_called'").fetchall()
    assert [json.loads(r["data"])["tool"] for r in called] == ["files__read_note"]
    assert [v["state"] for v in recorded(home)] == ["stopped"]


def test_an_image_reaches_the_model_as_an_image_block(home, fake, env, stdio):
    write_config(home, mcp={"servers": {"files": stdio("good")}})
    fake.add(tool_use("files__picture", {}))
    fake.add(text("A single pixel."))
    drop(home, "Show me the picture", "m1")
    run_once(home, env)
    (result,) = fake.requests[1].tool_results
    kinds = [block["type"] for block in result["content"]]
    assert kinds == ["text", "image"]
    assert result["content"][1]["source"]["media_type"] == "image/png"


def test_a_server_that_crashes_mid_call_is_an_error_result(home, fake, env, stdio, caplog):
    write_config(home, mcp={"servers": {"crashy": stdio("crash"), "files": stdio("good")}})
    fake.add(tool_use("crashy__crash", {}))
    fake.add(tool_use("files__read_note", {"name": "a"}))
    fake.add(text("That server fell over, but the other one works."))
    drop(home, "Crash it", "m1")
    with caplog.at_level(logging.WARNING, logger="smarthole.mcpservers"):
        run_once(home, env)
    (crashed,) = fake.requests[1].tool_results
    assert (crashed["content"], crashed["is_error"]) == (
        "Error: server crashy stopped during the call",
        True,
    )
    assert fake.requests[2].tool_results[0]["content"] == "The note a says: buy milk."
    assert finals(home)[0].text == "That server fell over, but the other one works."
    (warning,) = [r.getMessage() for r in caplog.records if "crashy exited" in r.getMessage()]
    assert "crash: something went badly wrong" in warning


def test_a_call_past_the_timeout_is_an_error_result(home, fake, env, stdio):
    write_config(home, mcp={"timeout_seconds": 1, "servers": {"slow": stdio("hang")}})
    fake.add(tool_use("slow__hang", {}))
    fake.add(text("It did not answer."))
    drop(home, "Wait for it", "m1")
    run_once(home, env)
    (result,) = fake.requests[1].tool_results
    assert result["is_error"]
    assert result["content"] == (
        "Error: server slow did not answer within 1 s (timeout_seconds); the call was cancelled"
    )
    assert finals(home)[0].text == "It did not answer."


def test_a_server_that_never_starts_leaves_the_others_working(home, fake, env, stdio, caplog):
    write_config(
        home,
        mcp={
            "servers": {"never": stdio("never", start_timeout_seconds=1), "files": stdio("good")},
        },
    )
    fake.add(text("Hello."))
    drop(home, "Hi", "m1")
    with caplog.at_level(logging.WARNING, logger="smarthole.mcpservers"):
        run_once(home, env)
    tools = fake.requests[0].tools
    assert "files__read_note" in tools
    assert not [t for t in tools if t.startswith("never__")]
    assert finals(home)[0].text == "Hello."
    (warning,) = [r.getMessage() for r in caplog.records if "MCP server never" in r.getMessage()]
    assert "did not start within 1 s (start timeout)" in warning
    assert "never: waiting for something that will not come" in warning


def test_allow_list_and_idempotent_override(home, fake, env, stdio):
    server = stdio("good", tools=["read_note", "append_note"], idempotent=["append_note"])
    write_config(home, mcp={"servers": {"files": server, "off": stdio("good", enabled=False)}})
    fake.add(text("Hello."))
    drop(home, "Hi", "m1")
    run_once(home, env)
    assert [t for t in fake.requests[0].tools if "__" in t] == [
        "files__read_note",
        "files__append_note",
    ]
    files, off = recorded(home)
    assert off["state"] == "disabled"
    assert files["state"] == "stopped"


def test_secrets_stay_out_of_logs_status_and_events(home, fake, env, http_server, caplog):
    url = http_server("good", home)
    write_config(
        home,
        mcp={"servers": {"tracker": {"url": url, "headers": {"Authorization": "Bearer ${TOKEN}"}}}},
    )
    fake.add(tool_use("tracker__read_note", {"name": "a"}))
    fake.add(text("Done."))
    drop(home, "Read it", "m1")
    with caplog.at_level(logging.DEBUG):
        run_once(home, {**env, "TOKEN": "s3cret-t0ken"})
    assert not fake.requests[1].tool_results[0]["is_error"]
    assert "s3cret-t0ken" not in caplog.text
    rows = db(home).execute("SELECT data FROM events UNION ALL SELECT value FROM plugin_data")
    assert not [r[0] for r in rows if "s3cret-t0ken" in r[0]]
    assert recorded(home)[0]["target"] == url


def test_an_unset_variable_stops_the_start(home, env, http_server):
    write_config(home, mcp={"servers": {"tracker": {"url": "http://127.0.0.1:1/${NOPE}"}}})
    with pytest.raises(ConfigError, match=r"\[mcp.servers.tracker\] url: \$\{NOPE\} is not set"):
        run_once(home, env)
