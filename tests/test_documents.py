"""Documents from outside: two hostile inputs against every parser of JSON or TOML.

Python's parsers refuse a number of over 4,300 digits with a ValueError and run out of stack
on deep nesting with a RecursionError. Wherever a file, a frame or an argument from outside
is parsed, either is the documented error with one line, never a traceback.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from smarthole.builtins.desktop.protocol import BadFrame, parse_frame
from smarthole.cli import main
from smarthole.errors import ConfigError, MessageError
from smarthole.formats import loads_toml
from smarthole.pipeline.message import parse_message

DEEP_JSON = "[" * 100_000 + "]" * 100_000
LONG_NUMBER = "9" * 5_000
DEEP_TOML = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"
LONG_TOML = f"x = {LONG_NUMBER}\n"


@pytest.mark.parametrize("value", [DEEP_JSON, LONG_NUMBER], ids=["deep", "long-number"])
def test_an_inbox_json_file_is_set_aside_with_a_reason(value):
    data = f'{{"text": "hi", "metadata": {{"x": {value}}}}}'.encode()
    with pytest.raises(MessageError):
        parse_message("m.json", data, modified=datetime.now(UTC))


@pytest.mark.parametrize("header", [DEEP_TOML, LONG_TOML], ids=["deep", "long-number"])
def test_inbox_front_matter_is_set_aside_with_a_reason(header):
    data = f"+++\n[metadata]\n{header}+++\nhi\n".encode()
    with pytest.raises(MessageError):
        parse_message("m.md", data, modified=datetime.now(UTC))


@pytest.mark.parametrize("value", [DEEP_JSON, LONG_NUMBER], ids=["deep", "long-number"])
def test_a_desktop_frame_is_a_bad_frame(value):
    with pytest.raises(BadFrame):
        parse_frame(f'{{"type": "message", "payload": {{"id": "a", "x": {value}}}}}')


@pytest.mark.parametrize("text", [DEEP_TOML, LONG_TOML], ids=["deep", "long-number"])
def test_toml_is_a_config_error(text):
    with pytest.raises(ConfigError, match=r"config\.toml: invalid TOML"):
        loads_toml(text, source="config.toml")


@pytest.mark.parametrize("text", [DEEP_TOML, LONG_TOML], ids=["deep", "long-number"])
def test_a_config_with_mcp_servers_stops_commands_with_one_line(home, capsys, text):
    (home / "config.toml").write_text(
        f'[mcp.servers.files]\ncommand = "true"\n[mcp.servers.files.env]\n{text}'
    )
    assert main(["mcp", "list", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("smarthole: ") and "invalid TOML" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value", [DEEP_JSON, LONG_NUMBER], ids=["deep", "long-number"])
def test_mcp_call_args_is_a_usage_error(home, capsys, value):
    (home / "config.toml").write_text('[mcp.servers.files]\ncommand = "true"\n')
    assert (
        main(["mcp", "call", "files", "read", "--args", f'{{"x": {value}}}', "--home", str(home)])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("smarthole: --args ") and len(err.strip().splitlines()) == 1
