"""A reload applies ``[mcp]``: added servers start, removed ones stop, changed ones restart."""

from __future__ import annotations

from tests.helpers import smarthole, write_config


def listed(home, env) -> str:
    result = smarthole("mcp", "list", "--home", str(home), env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_reload_starts_stops_and_restarts_mcp_servers(home, env, daemons, stdio):
    daemon = daemons(home, env)
    assert "files" not in listed(home, env)
    write_config(home, mcp={"servers": {"files": stdio("good")}})
    assert smarthole("reload", "--home", str(home), env=env).returncode == 0
    assert "MCP server files started (ready)" in daemon.output()
    assert "  tool files__read_note" in listed(home, env)
    write_config(home, mcp={"servers": {"files": stdio("good", tools=["read_note"])}})
    assert smarthole("reload", "--home", str(home), env=env).returncode == 0
    assert "MCP server files restarted (ready)" in daemon.output()
    now = listed(home, env)
    assert "  tool files__read_note" in now and "files__lookup" not in now
    write_config(home)
    assert smarthole("reload", "--home", str(home), env=env).returncode == 0
    assert "MCP server files stopped (removed from config.toml)" in daemon.output()
    assert "files__read_note" not in listed(home, env)
    assert daemon.terminate() == 0
