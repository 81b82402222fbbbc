"""A reload applies ``[mcp]``: added servers start, removed ones stop, changed ones restart."""

from __future__ import annotations

import logging

from smarthole.cli import main
from tests.helpers import write_config


def listed(home, capsys) -> str:
    code = main(["mcp", "list", "--home", str(home)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def reload(home) -> None:
    assert main(["reload", "--home", str(home)]) == 0


def test_a_reload_starts_stops_and_restarts_mcp_servers(home, env, threads, stdio, capsys, caplog):
    caplog.set_level(logging.INFO)
    daemon = threads(home, env)
    assert "files" not in listed(home, capsys)
    write_config(home, mcp={"servers": {"files": stdio("good")}})
    reload(home)
    assert "MCP server files started (ready)" in caplog.text
    assert "  tool files__read_note" in listed(home, capsys)
    write_config(home, mcp={"servers": {"files": stdio("good", tools=["read_note"])}})
    reload(home)
    assert "MCP server files restarted (ready)" in caplog.text
    now = listed(home, capsys)
    assert "  tool files__read_note" in now and "files__lookup" not in now
    write_config(home)
    reload(home)
    assert "MCP server files stopped (removed from config.toml)" in caplog.text
    assert "files__read_note" not in listed(home, capsys)
    assert daemon.stop() == 0
