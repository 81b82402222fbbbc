"""[mcp] and [mcp.servers.<name>] in config.toml: checked at start, secrets read late."""

from __future__ import annotations

from pathlib import Path

import pytest

from smarthole.config import parse_config
from smarthole.errors import ConfigError


def servers(**tables: dict) -> dict:
    return {"mcp": {"servers": tables}}


def test_a_stdio_and_an_http_server():
    config = parse_config(
        {
            "mcp": {
                "timeout_seconds": 30,
                "servers": {
                    "files": {"command": "npx", "args": ["-y", "x"], "tools": ["read"]},
                    "tracker": {
                        "url": "http://127.0.0.1:1/mcp",
                        "timeout_seconds": 5,
                        "start_timeout_seconds": 2,
                    },
                },
            }
        }
    )
    files, tracker = config.mcp.servers["files"], config.mcp.servers["tracker"]
    assert (files.transport, files.describe(), files.tools) == ("stdio", "npx -y x", ["read"])
    assert (tracker.transport, config.mcp.call_timeout(tracker)) == ("http", 5.0)
    assert config.mcp.call_timeout(files) == 30.0
    assert config.mcp.start_timeout_seconds == 20.0
    assert (config.mcp.start_timeout(files), config.mcp.start_timeout(tracker)) == (20.0, 2.0)
    assert files.allows("read") and not files.allows("write")


def test_no_mcp_table_means_no_servers():
    assert parse_config({}).mcp.servers == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            servers(a={"command": "x", "url": "http://h/"}),
            "[mcp.servers.a] has both command and url",
        ),
        (servers(a={}), "[mcp.servers.a] has neither command nor url"),
        (servers(Files={"command": "x"}), "[mcp.servers.Files] bad server name 'Files'"),
        (servers(**{"a" * 33: {"command": "x"}}), "bad server name"),
        (
            servers(a={"command": "x", "comand": "y"}),
            "[mcp.servers.a] unknown key 'comand' (did you mean 'command'?)",
        ),
        (servers(a={"command": "x", "args": "y"}), "[mcp.servers.a] args must be a list"),
        (servers(a={"command": "x", "env": {"A": 1}}), "[mcp.servers.a] env must be a table"),
        (servers(a={"command": "x", "headers": {}}), "[mcp.servers.a] headers does not apply"),
        (servers(a={"url": "http://h/", "cwd": "w"}), "[mcp.servers.a] cwd does not apply"),
        (servers(a={"command": "x", "timeout_seconds": 0}), "timeout_seconds must be a number"),
        (
            servers(a={"command": "x", "start_timeout_seconds": "1"}),
            "[mcp.servers.a] start_timeout_seconds must be a number above 0",
        ),
        (servers(a={"command": "x", "enabled": "yes"}), "enabled must be true or false"),
        (servers(a={"command": "x", "env": {"A": "${1X}"}}), "env: ${1X} is not a variable"),
        ({"mcp": {"timeout": 3}}, "[mcp] unknown key 'timeout'"),
        (
            {"mcp": {"timout_seconds": 3}},
            "[mcp] unknown key 'timout_seconds' (did you mean 'timeout_seconds'?)",
        ),
        ({"mcp": {"start_timeout_seconds": -1}}, "[mcp] start_timeout_seconds must be"),
        ({"mcp": {"servers": 3}}, "[mcp] servers must be a table"),
    ],
)
def test_bad_tables_are_config_errors_naming_the_key(data, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert message in str(caught.value)


def test_variables_are_read_from_the_environment_at_start(tmp_path):
    config = parse_config(
        servers(
            files={"command": "srv", "args": ["--key=${KEY}"], "env": {"T": "${KEY}"}, "cwd": "ws"},
            tracker={"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        )
    )
    environ = {"KEY": "k1", "TOKEN": "s3cret", "PATH": "/bin", "ANTHROPIC_API_KEY": "no"}
    files = config.mcp.servers["files"].resolve(tmp_path, environ)
    assert files.args == ["--key=k1"]
    assert files.env == {"PATH": "/bin", "T": "k1"}, "only a minimal environment, plus its own"
    assert files.cwd == tmp_path / "ws"
    tracker = config.mcp.servers["tracker"].resolve(tmp_path, environ)
    assert tracker.headers == {"Authorization": "Bearer s3cret"}
    assert tracker.redact("401 for Bearer s3cret") == "401 for Bearer ***"
    assert config.mcp.servers["tracker"].describe() == "http://h/mcp"
    assert files.cwd != Path("ws")


def test_an_unset_variable_names_the_key(tmp_path):
    config = parse_config(servers(tracker={"url": "http://h/", "headers": {"A": "${NOPE}"}}))
    with pytest.raises(
        ConfigError, match=r"\[mcp.servers.tracker\] headers.A: \$\{NOPE\} is not set"
    ):
        config.mcp.servers["tracker"].resolve(Path("/"), {})
