"""Tool names: an MCP server's tools as the model sees them, ``<server>__<tool>``.

The Messages API takes tool names of 1-64 characters from ``[a-zA-Z0-9_-]``; MCP allows more.
A name is made to fit here, and :func:`tool_matches` is how an allow-list names MCP tools.
"""

from __future__ import annotations

import hashlib
import re

SEPARATOR = "__"
MAX_NAME = 64
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")


def exposed_name(server: str, tool: str) -> str:
    """``<server>__<tool>`` with characters the API refuses replaced by ``_``, at most 64 long.

    A name that would be longer is cut, and ends in a short hash of the whole name so two long
    names that share a beginning stay apart.
    """
    name = f"{server}{SEPARATOR}{_NOT_ALLOWED.sub('_', tool) or '_'}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def tool_matches(pattern: str, tool_name: str) -> bool:
    """Whether an allow-list entry names this tool: its exact name, or ``<server>__*``.

    ``files__read_text_file`` matches only that tool; ``files__*`` matches every tool of
    server ``files``. Any other use of ``*`` matches nothing.
    """
    if pattern.endswith(SEPARATOR + "*"):
        prefix = pattern[:-1]
        return "*" not in prefix and len(tool_name) > len(prefix) and tool_name.startswith(prefix)
    return pattern == tool_name
