"""The files that go with a final reply: those the agent wrote or saved during its turn.

Read from the turn's stored tool calls (``write_file``'s path, ``save_attachment``'s target),
each found in the workspace again and checked there: a regular file inside the workspace,
of a kind and size the attachment limits take, the whole within their total. What cannot
go is left out (the reply's text still names it); nothing here raises.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...attachments import accept
from ...errors import MessageError

if TYPE_CHECKING:
    from ...config import AttachmentSettings
    from ...db.store import Store

logger = logging.getLogger(__name__)

WRITERS = ("write_file", "save_attachment")


def turn_files(
    store: Store, conversation: str, turn: int, workspace: Path, limits: AttachmentSettings
) -> list[tuple[str, bytes]]:
    """``(name, bytes)`` of each file the turn wrote, in the order it wrote them first."""
    paths: list[str] = []
    for message in store.messages(conversation, turn=turn):
        for block in message.content:
            path = _written(block)
            if path and path not in paths:
                paths.append(path)
    files: list[tuple[str, bytes]] = []
    total = 0
    root = workspace.resolve()
    for path in paths[: limits.max_count]:
        found = (root / path).resolve()
        if not found.is_relative_to(root) or not found.is_file():
            continue
        data = found.read_bytes()
        if total + len(data) > limits.max_message_bytes:
            break
        try:
            accept(found.name, data, limits)
        except MessageError as exc:
            logger.info("email: %s does not go with the reply: %s", path, exc)
            continue
        if found.name in {name for name, _ in files}:
            continue
        files.append((found.name, data))
        total += len(data)
    return files


def _written(block: Any) -> str | None:
    if not isinstance(block, dict) or block.get("type") != "tool_use":
        return None
    tool, given = block.get("name"), block.get("input")
    if tool not in WRITERS or not isinstance(given, dict):
        return None
    path = given.get("path")
    if not isinstance(path, str):
        return None
    if tool == "save_attachment":
        name = given.get("name")
        if not isinstance(name, str):
            return None
        if not path or path.endswith("/"):
            return path + name
    return path.lstrip("/") or None
