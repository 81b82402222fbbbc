"""A stdio server that prints more than JSON-RPC on its stdout: a few warnings, then a count."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import pytest

from smarthole.mcpservers.noise import StrayLines, shown, stray_line
from tests.mcpservers.servers import JUNK

JUNK_LINES = 3 * len(JUNK)  # as the chatty server starts, and in each of two calls


def test_a_chatty_server_keeps_working_and_is_logged_briefly(start, stdio, caplog):
    with caplog.at_level(logging.DEBUG):
        manager, registry = start(chatty=stdio("chatty"))
        tool = registry.get("chatty__chatter")
        assert tool.call({"word": "one"}, None).text == "said one"
        assert tool.call({"word": "two"}, None).text == "said two"
        manager.stop()
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    noise = [r for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert all(r.levelno == logging.WARNING and "chatty" in r.getMessage() for r in noise)
    said = [r.getMessage() for r in noise]
    assert len([m for m in said if "(ignored)" in m]) == 5
    (summary,) = [m for m in said if "were not logged" in m]
    assert re.fullmatch(
        f"MCP server chatty: {JUNK_LINES - 5} more lines on stdout that are not JSON-RPC "
        r"in the last \d+ s were not logged",
        summary,
    )
    assert "\x1b" not in caplog.text and "\x07" not in caplog.text
    assert "'\\x1b[31mred alert\\x1b[0m'" in caplog.text
    assert "x" * 200 not in caplog.text and "(500 characters)" in caplog.text


class FakeTimers:
    """A clock that moves only when told, and the callbacks scheduled on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> FakeTimers:
        self.pending.append((self.now + delay, callback))
        return self

    def cancel(self) -> None:
        self.pending.clear()

    def advance(self, seconds: float) -> None:
        self.now += seconds
        due = [c for at, c in self.pending if at <= self.now]
        self.pending = [(at, c) for at, c in self.pending if at > self.now]
        for callback in due:
            callback()


@pytest.fixture
def timers() -> FakeTimers:
    return FakeTimers()


@pytest.fixture
def stray(timers: FakeTimers) -> StrayLines:
    return StrayLines("files", limit=5, window=60, clock=timers.clock, schedule=timers.schedule)


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "smarthole.mcpservers.noise"]


def test_past_the_limit_lines_are_counted_until_the_window_ends(stray, timers, caplog):
    caplog.set_level(logging.WARNING)
    for n in range(42):
        stray.report(f"line {n}")
    said = messages(caplog)
    assert [m.rsplit(": ", 1)[-1] for m in said[:4]] == [f"'line {n}'" for n in range(4)]
    assert said[4].endswith("'line 4'; more in the next 60 s are counted, not logged")
    assert len(said) == 5
    timers.advance(59)
    assert len(messages(caplog)) == 5
    timers.advance(1)
    assert messages(caplog)[5:] == [
        "MCP server files: 37 more lines on stdout that are not JSON-RPC in the last 60 s "
        "were not logged"
    ]


def test_a_new_window_warns_again(stray, timers, caplog):
    caplog.set_level(logging.WARNING)
    for n in range(7):
        stray.report(f"early {n}")
    timers.now += 61  # the timer has not run yet: the next line sends the count first
    stray.report("late")
    said = messages(caplog)[5:]
    assert said[0].startswith("MCP server files: 2 more lines")
    assert said[1].endswith("'late'")
    stray.flush()
    assert len(messages(caplog)) == 7  # nothing left to count


def test_flush_tells_the_count_so_far(stray, timers, caplog):
    caplog.set_level(logging.WARNING)
    for n in range(8):
        stray.report(f"line {n}")
    timers.advance(12.5)
    stray.flush()
    assert messages(caplog)[5:] == [
        "MCP server files: 3 more lines on stdout that are not JSON-RPC in the last 13 s "
        "were not logged"
    ]
    assert timers.pending == []


def test_under_the_limit_nothing_is_counted(stray, timers, caplog):
    caplog.set_level(logging.WARNING)
    for n in range(5):
        stray.report(f"line {n}")
    timers.advance(120)
    stray.flush()
    assert len(messages(caplog)) == 5 and timers.pending == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("plain text", "'plain text'"),
        ("\x1b[31mred\x1b[0m", "'\\x1b[31mred\\x1b[0m'"),
        ("bell\x07 nul\x00 del\x7f", "'bell\\x07 nul\\x00 del\\x7f'"),
        ("right\u202eto left", "'right\\u202eto left'"),
        ("a\\x1b b", "'a\\\\x1b b'"),  # a printed backslash cannot pass for an escape
        ("", "''"),
        ("y" * 121, "'" + "y" * 120 + "'... (121 characters)"),
    ],
)
def test_a_line_is_shown_quoted_escaped_and_short(line, expected):
    assert shown(line) == expected


def test_the_line_behind_a_parse_error():
    from mcp.types import jsonrpc_message_adapter

    def error_for(line: str) -> Exception:
        with pytest.raises(ValueError) as caught:
            jsonrpc_message_adapter.validate_json(line)
        return caught.value

    assert stray_line(error_for("hello \x1b there")) == "hello \x1b there"
    assert stray_line(error_for('{"progress": 3}')) == '{"progress": 3}'
    assert stray_line(ValueError("something else")) == "ValueError: something else"


def test_only_our_servers_lose_the_sdk_traceback(caplog):
    import contextvars

    from smarthole.mcpservers.noise import SDK_STDIO_LOGGER, quiet_sdk_parse_errors, reading_stdio

    sdk = logging.getLogger(SDK_STDIO_LOGGER)
    quiet_sdk_parse_errors()
    attached = list(sdk.filters)
    quiet_sdk_parse_errors()  # at every connection: it attaches only once
    assert sdk.filters == attached

    def log_a_parse_error(ours: bool) -> None:
        reading_stdio.set(ours)
        try:
            raise ValueError("not JSON")
        except ValueError:
            sdk.exception("Failed to parse JSONRPC message from server")

    with caplog.at_level(logging.DEBUG, logger=SDK_STDIO_LOGGER):
        contextvars.copy_context().run(log_a_parse_error, True)
        assert caplog.records == []
        contextvars.copy_context().run(log_a_parse_error, False)  # someone else's client
        assert [r.exc_info is not None for r in caplog.records] == [True]
