"""Tools and hooks for the test suite, loaded as a folder plugin like any user's plugin.

Tool runs are appended to ``<home>/tool-runs.log`` so tests can count them across crashes.
``wait_for_go`` tools write ``<home>/started-<tag>`` and then wait for ``<home>/go-<tag>``,
which lets a test kill the daemon while a tool is running.
"""

from __future__ import annotations

import time

from smarthole import ToolResult, hookimpl
from smarthole.errors import ToolError
from smarthole.tools import ToolContext

# A 1x1 transparent PNG: what a tool that returns a picture returns.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAC"
    "hwGA60e6kgAAAABJRU5ErkJggg=="
)


def _log(context: ToolContext, line: str) -> None:
    with (context.app.home.root / "tool-runs.log").open("a") as log:
        log.write(line + "\n")


def _wait_for_go(context: ToolContext, tag: str) -> None:
    root = context.app.home.root
    (root / f"started-{tag}").write_text(context.tool_use_id)
    deadline = time.monotonic() + 60
    while not (root / f"go-{tag}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def record(value: str, *, context: ToolContext) -> str:
    """Record a value (not idempotent: every run is logged).

    :param value: What to record.
    """
    _log(context, f"record {value}")
    return f"recorded {value}"


def slow_record(tag: str, *, context: ToolContext) -> str:
    """Record a value slowly (not idempotent).

    :param tag: Names the marker files.
    """
    _wait_for_go(context, tag)
    _log(context, f"slow_record {tag}")
    return f"slowly recorded {tag}"


def slow_lookup(tag: str, *, context: ToolContext) -> str:
    """Look something up slowly (idempotent).

    :param tag: Names the marker files.
    """
    _log(context, f"slow_lookup-start {tag}")
    _wait_for_go(context, tag)
    _log(context, f"slow_lookup {tag}")
    return f"looked up {tag}"


def explode(reason: str) -> str:
    """Always fails.

    :param reason: The message of the failure.
    """
    raise ToolError(reason)


def crash(reason: str) -> str:
    """Raises an unexpected exception.

    :param reason: The message of the exception.
    """
    raise RuntimeError(reason)


def snapshot(label: str) -> ToolResult:
    """Take a picture (idempotent): an image block and a line of text.

    :param label: Said in the text beside the picture.
    """
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
    }
    return ToolResult(f"a picture of {label}", blocks=({"type": "text", "text": label}, image))


@hookimpl
def register_tools(register):
    register(record)
    register(slow_record)
    register(slow_lookup, idempotent=True)
    register(explode, idempotent=True)
    register(crash, idempotent=True)
    register(snapshot, idempotent=True)
