"""`smarthole mcp list`, `smarthole mcp call` and the servers in `smarthole status`."""

from __future__ import annotations

import json

import pytest

from smarthole.cli import main
from tests.helpers import wait_for, write_config


def smarthole(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``smarthole ARGS`` in this process: (exit status, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_mcp_list_starts_the_servers_without_a_daemon(home, stdio, capsys):
    write_config(
        home,
        mcp={
            "servers": {
                "files": stdio("good"),
                "never": stdio("never", start_timeout_seconds=1),
                "off": stdio("good", enabled=False),
            },
        },
    )
    code, out, err = smarthole(capsys, "mcp", "list", "--home", str(home))
    assert code == 0, err
    lines = out.splitlines()
    assert "  state: ready" in lines
    assert (
        "  tool files__read_note [read-only, re-run after a crash]: Read a note by name." in lines
    )
    assert (
        "  tool files__append_note [not re-run after a crash]: Append a line to the notes." in lines
    )
    assert "  state: failed: did not start within 1 s (start timeout)" in out
    assert "  stderr: never: waiting for something that will not come" in lines
    assert "  state: disabled" in lines
    as_json = json.loads(smarthole(capsys, "mcp", "list", "--json", "--home", str(home))[1])
    files = next(s for s in as_json if s["name"] == "files")
    lookup = next(t for t in files["tools"] if t["server_tool"] == "lookup")
    assert lookup["annotations"] == {"readOnlyHint": False, "idempotentHint": True}
    assert lookup["idempotent"] is True


def test_mcp_list_without_servers(home, capsys):
    code, out, _ = smarthole(capsys, "mcp", "list", "--home", str(home))
    assert (code, out.strip()) == (
        0,
        "No MCP servers in config.toml (add a [mcp.servers.<name>] table).",
    )


def test_mcp_call_prints_the_result(home, stdio, capsys):
    write_config(home, mcp={"servers": {"files": stdio("good")}})
    call = ("mcp", "call", "--home", str(home))
    done = smarthole(capsys, *call, "files", "read_note", "--args", '{"name": "x"}')
    assert done[:2] == (0, "The note x says: buy milk.\n")
    refused = smarthole(capsys, *call, "files", "refuse")
    assert refused[:2] == (1, "Error: not allowed\n")
    code, picture, _ = smarthole(capsys, *call, "files", "picture")
    assert code == 0 and picture.startswith("[image image/png, ")
    code, _, missing = smarthole(capsys, *call, "files", "nope")
    assert code == 1 and "server files has no tool 'nope'" in missing
    code, _, bad = smarthole(capsys, *call, "files", "lookup", "--args", "[1]")
    assert code == 2 and "--args must be a JSON object" in bad
    code, _, unknown = smarthole(capsys, *call, "nobody", "x")
    assert code == 1 and "no MCP server named 'nobody'" in unknown


def test_status_shows_each_server(home, env, threads, stdio, capsys):
    write_config(
        home,
        mcp={
            "servers": {"files": stdio("good"), "never": stdio("never", start_timeout_seconds=1)},
        },
    )
    daemon = threads(home, env)
    # "never" fails, waits its backoff and starts again, for ever: wait until a look finds it
    # failed (each failure's wait is longer than the last), not for the first look to.
    failed = "    state: failed: did not start within 1 s (start timeout)"
    status = wait_for(
        lambda: (s := smarthole(capsys, "status", "--home", str(home))[1]).count(failed) and s,
        timeout=60,
    )
    assert "MCP servers: 2" in status
    assert "  files  stdio: " in status
    assert "    state: ready" in status

    def states() -> list[str]:
        report = json.loads(smarthole(capsys, "status", "--json", "--home", str(home))[1])
        return [s["state"] for s in report["mcp"]]

    wait_for(lambda: states() == ["ready", "failed"], timeout=60)
    listed = smarthole(capsys, "mcp", "list", "--home", str(home))[1]
    assert "  tool files__read_note" in listed, "a running daemon's own view"
    assert daemon.stop() == 0
    stopped = smarthole(capsys, "status", "--json", "--home", str(home))[1]
    assert [s["state"] for s in json.loads(stopped)["mcp"]] == ["stopped", "stopped"]
