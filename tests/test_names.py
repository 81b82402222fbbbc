"""Names are validated whole: a trailing newline (or anything else) after a valid name fails.

``re.match(r"^name$")`` accepts ``"name\\n"``, because ``$`` also matches before a final
newline. Every validation pattern is used with ``fullmatch``, and a scan of the package keeps
``$``-anchored patterns from coming back.
"""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from smarthole.config import parse_config
from smarthole.errors import ConfigError, MessageError, PluginError
from smarthole.pipeline.message import parse_message
from smarthole.tools import build_tool

PACKAGE = Path(__file__).resolve().parent.parent / "smarthole"
RE_FUNCTIONS = {"compile", "match", "fullmatch", "search"}


@pytest.mark.parametrize(
    "data",
    [
        {"agents": {"critic\n": {"description": "reviews"}}},
        {"agent": {"name": "assistant\n"}},
        {"mcp": {"servers": {"evil\n": {"command": "true"}}}},
        {"mcp": {"servers": {"files": {"command": "true", "env": {"X": "${HOME\n}"}}}}},
        {"desktop": {"name": "smarthole\n"}},
        {"desktop": {"url": "ws://127.0.0.1:1\n"}},
        {"desktop": {"channel": "desktop\n"}},
    ],
    ids=["agent", "entry-agent", "mcp-server", "mcp-variable", "desktop-name", "url", "channel"],
)
def test_a_trailing_newline_fails_config_validation(data):
    with pytest.raises(ConfigError):
        parse_config(data)


def test_a_channel_with_a_trailing_newline_is_refused():
    with pytest.raises(MessageError, match="channel"):
        parse_message(
            "m.json", b'{"text": "hi", "channel": "phone\\n"}', modified=datetime.now(UTC)
        )


def test_a_tool_name_with_a_trailing_newline_is_refused():
    def tool() -> str:
        """Say hi."""
        return "hi"

    with pytest.raises(PluginError, match="tool name"):
        build_tool(tool, name="hi\n", plugin="p")


def anchored_patterns(root: Path = PACKAGE) -> list[str]:
    """``file:line: pattern`` for each regex literal ending in an unescaped ``$``: with
    ``match`` or ``search`` it also accepts a trailing newline."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in RE_FUNCTIONS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                continue
            if any("MULTILINE" in ast.unparse(arg) for arg in node.args[1:]):
                continue  # a parser of lines, where $ means the end of each line
            pattern = node.args[0].value
            if re.search(r"(?<!\\)\$\Z", pattern):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {pattern}")
    return found


def test_no_validation_pattern_is_anchored_with_a_dollar():
    found = anchored_patterns()
    assert not found, "use fullmatch (or \\Z), not $:\n" + "\n".join(found)


def test_the_scan_finds_a_dollar_anchored_pattern(tmp_path):
    (tmp_path / "bad.py").write_text('import re\nNAME = re.compile(r"^[a-z]+$")\n')
    (tmp_path / "good.py").write_text('import re\nPRICE = re.compile(r"[0-9]+\\$")\n')
    assert anchored_patterns(tmp_path) == ["bad.py:2: ^[a-z]+$"]
