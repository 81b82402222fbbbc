"""`smarthole mcp list`, `smarthole mcp call` and the servers in `smarthole status`."""

from __future__ import annotations

import json

from tests.helpers import smarthole, wait_for, write_config


def test_mcp_list_starts_the_servers_without_a_daemon(home, env, stdio):
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
    done = smarthole("mcp", "list", "--home", str(home), env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "  state: ready" in lines
    assert (
        "  tool files__read_note [read-only, re-run after a crash]: Read a note by name." in lines
    )
    assert (
        "  tool files__append_note [not re-run after a crash]: Append a line to the notes." in lines
    )
    assert "  state: failed: did not start within 1 s (start timeout)" in done.stdout
    assert "  stderr: never: waiting for something that will not come" in lines
    assert "  state: disabled" in lines
    as_json = json.loads(smarthole("mcp", "list", "--json", "--home", str(home), env=env).stdout)
    files = next(s for s in as_json if s["name"] == "files")
    lookup = next(t for t in files["tools"] if t["server_tool"] == "lookup")
    assert lookup["annotations"] == {"readOnlyHint": False, "idempotentHint": True}
    assert lookup["idempotent"] is True


def test_mcp_list_without_servers(home, env):
    done = smarthole("mcp", "list", "--home", str(home), env=env)
    assert (done.returncode, done.stdout.strip()) == (
        0,
        "No MCP servers in config.toml (add a [mcp.servers.<name>] table).",
    )


def test_mcp_call_prints_the_result(home, env, stdio):
    write_config(home, mcp={"servers": {"files": stdio("good")}})
    args = ("--home", str(home))
    done = smarthole("mcp", "call", "files", "read_note", "--args", '{"name": "x"}', *args, env=env)
    assert (done.returncode, done.stdout) == (0, "The note x says: buy milk.\n")
    refused = smarthole("mcp", "call", "files", "refuse", *args, env=env)
    assert (refused.returncode, refused.stdout) == (1, "Error: not allowed\n")
    picture = smarthole("mcp", "call", "files", "picture", *args, env=env)
    assert picture.stdout.startswith("[image image/png, ")
    missing = smarthole("mcp", "call", "files", "nope", *args, env=env)
    assert missing.returncode == 1 and "server files has no tool 'nope'" in missing.stderr
    bad = smarthole("mcp", "call", "files", "lookup", "--args", "[1]", *args, env=env)
    assert bad.returncode == 2 and "--args must be a JSON object" in bad.stderr
    unknown = smarthole("mcp", "call", "nobody", "x", *args, env=env)
    assert unknown.returncode == 1 and "no MCP server named 'nobody'" in unknown.stderr


def test_status_shows_each_server(home, env, daemons, stdio):
    write_config(
        home,
        mcp={
            "servers": {"files": stdio("good"), "never": stdio("never", start_timeout_seconds=1)},
        },
    )
    daemon = daemons(home, env)
    # "never" fails, waits its backoff and starts again, for ever: wait until a look finds it
    # failed (each failure's wait is longer than the last), not for the first look to.
    failed = "    state: failed: did not start within 1 s (start timeout)"
    status = wait_for(
        lambda: (s := smarthole("status", "--home", str(home), env=env)).stdout.count(failed) and s,
        timeout=60,
    )
    assert "MCP servers: 2" in status.stdout
    assert "  files  stdio: " in status.stdout
    assert "    state: ready" in status.stdout

    def states() -> list[str]:
        report = json.loads(smarthole("status", "--json", "--home", str(home), env=env).stdout)
        return [s["state"] for s in report["mcp"]]

    wait_for(lambda: states() == ["ready", "failed"], timeout=60)
    listed = smarthole("mcp", "list", "--home", str(home), env=env)
    assert "  tool files__read_note" in listed.stdout, "a running daemon's own view"
    assert daemon.terminate() == 0
    stopped = smarthole("status", "--json", "--home", str(home), env=env)
    assert [s["state"] for s in json.loads(stopped.stdout)["mcp"]] == ["stopped", "stopped"]
