"""Stored messages into valid Messages API history.

The store keeps what happened, including turns that failed half-way. The API accepts only
alternating roles starting with ``user``, non-empty text blocks, and every ``tool_use``
answered by a ``tool_result`` in the next message. This module bridges the two, so a failed
or abandoned turn never poisons the conversation that follows it.
"""

from __future__ import annotations

from typing import Any

from ..db.records import StoredMessage

NOT_RUN = "Error: this tool call was never run; the turn ended before it could run."


def to_api_messages(stored: list[StoredMessage]) -> list[dict[str, Any]]:
    """Build alternating-role API messages from stored user/assistant/tool_result rows."""
    messages: list[dict[str, Any]] = []
    for row in stored:
        if row.kind not in ("user", "assistant", "tool_result"):
            continue
        blocks = [b for b in row.content if not _empty_text(b)]
        if not blocks:
            continue
        role = "assistant" if row.kind == "assistant" else "user"
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})
    while messages and messages[0]["role"] != "user":
        messages.pop(0)
    return _answer_every_tool_use(messages)


def _empty_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _answer_every_tool_use(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each tool_use its tool_result right after it; drop results that answer nothing."""
    repaired: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message["role"] == "user":
            previous = repaired[-1] if repaired else None
            expected = _tool_use_ids(previous) if previous else []
            results = {
                b["tool_use_id"]: b for b in message["content"] if b.get("type") == "tool_result"
            }
            others = [b for b in message["content"] if b.get("type") != "tool_result"]
            ordered = [results.get(i) or _not_run(i) for i in expected]
            if ordered or others:
                repaired.append({"role": "user", "content": ordered + others})
            continue
        repaired.append(message)
        following = messages[index + 1] if index + 1 < len(messages) else None
        if _tool_use_ids(message) and following is None:
            # The turn ended on a tool call with no results at all (a stop before any ran).
            repaired.append(
                {"role": "user", "content": [_not_run(i) for i in _tool_use_ids(message)]}
            )
    return repaired


def _tool_use_ids(message: dict[str, Any] | None) -> list[str]:
    if message is None or message["role"] != "assistant":
        return []
    return [b["id"] for b in message["content"] if b.get("type") == "tool_use"]


def _not_run(tool_use_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": NOT_RUN, "is_error": True}
