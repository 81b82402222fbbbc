"""Tool names as the model sees them, allow-list patterns, and MCP results as tool results."""

from __future__ import annotations

import re

import pytest

from smarthole.mcpservers import exposed_name, tool_matches
from smarthole.mcpservers.results import MAX_TEXT, to_tool_result
from smarthole.tools import TOOL_NAME


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("files", "read_text_file", "files__read_text_file"),
        ("files", "read.text file/2", "files__read_text_file_2"),
        ("my-srv", "naïve", "my-srv__na_ve"),
    ],
)
def test_exposed_names_follow_the_api_rules(server, tool, expected):
    assert exposed_name(server, tool) == expected


def test_long_names_are_cut_to_64_and_stay_apart():
    first, second = exposed_name("files", "x" * 80 + "a"), exposed_name("files", "x" * 80 + "b")
    assert len(first) == len(second) == 64
    assert first != second
    assert all(TOOL_NAME.match(n) for n in (first, second))


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("files__read_text_file", "files__read_text_file", True),
        ("files__read_text_file", "files__write_file", False),
        ("files__*", "files__read_text_file", True),
        ("files__*", "files__", False),
        ("files__*", "tracker__search", False),
        ("files__*", "filesystem__read", False),
        ("files*", "files__read", False),
        ("*", "files__read", False),
        ("fi*__*", "files__read", False),
        ("read_file", "read_file", True),
    ],
)
def test_tool_matches(pattern, name, matches):
    assert tool_matches(pattern, name) is matches


def text(value: str) -> dict:
    return {"type": "text", "text": value}


@pytest.mark.parametrize(
    ("result", "expected_text", "is_error"),
    [
        ({"content": [text("hello")]}, "hello", False),
        ({"content": [text("a"), text("b")]}, "a\nb", False),
        ({"content": [text("no such file")], "isError": True}, "Error: no such file", True),
        ({"content": [], "isError": True}, "Error: the tool failed and said nothing", True),
        ({"content": []}, "Done.", False),
        ({"content": [], "structuredContent": {"n": 1}}, '{\n  "n": 1\n}', False),
        (
            {"content": [{"type": "resource", "resource": {"uri": "file:///a.md", "text": "x"}}]},
            "[resource file:///a.md (unknown type, 1 characters)]",
            False,
        ),
        (
            {"content": [{"type": "resource_link", "uri": "file:///b.md", "name": "b.md"}]},
            "[resource link b.md <file:///b.md>]",
            False,
        ),
        (
            {"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]},
            "[audio (audio/wav), not played]",
            False,
        ),
        (
            {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/bmp"}]},
            "[an image of type image/bmp, not shown]",
            False,
        ),
    ],
)
def test_results_map_to_tool_results(result, expected_text, is_error):
    mapped = to_tool_result(result)
    assert (mapped.text, mapped.is_error, mapped.blocks) == (expected_text, is_error, ())
    assert mapped.content() == expected_text


def test_an_image_becomes_an_image_block():
    image = {"type": "image", "data": "iVBOR", "mimeType": "image/png"}
    mapped = to_tool_result({"content": [text("look:"), image]})
    assert mapped.content() == [
        text("look:"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
    ]
    assert mapped.text == "look:\n[image]"


def test_long_text_is_cut_and_says_so():
    mapped = to_tool_result({"content": [text("x" * (MAX_TEXT + 5))]})
    assert re.search(r"\[\.\.\. 5 more characters cut\]$", mapped.text)
