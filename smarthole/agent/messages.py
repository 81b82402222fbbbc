"""Stored messages into valid Messages API messages, and a model call's messages as sent.

The store keeps what happened, including turns that failed half-way. The API accepts only
alternating roles starting with ``user``, non-empty text blocks, and every ``tool_use``
answered by a ``tool_result`` in the next message. This module bridges the two, so a failed
or abandoned turn never poisons the conversation that follows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .prompts import EPHEMERAL

NOT_RUN = "Error: this tool call was never run; the turn ended before it could run."


class Stored(Protocol):
    """A stored message as the history needs it (``StoredMessage`` is one)."""

    @property
    def kind(self) -> str: ...

    @property
    def content(self) -> list[dict[str, Any]]: ...


def to_api_messages(stored: Sequence[Stored]) -> list[dict[str, Any]]:
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


def with_breakpoint(messages: Messages) -> Messages:
    """``messages`` with a prompt cache breakpoint on the last block of the last message.

    The next call of a tool loop, and the next turn, send this request again plus what is
    new, so they read it from the cache. The marked message and block are copies: the ones
    given may be shared with later calls.
    """
    if isinstance(messages, History):
        if not messages.tail:  # not made by a window: the current turn is always in the tail
            return _marked(messages.messages())
        return History(messages.turns, _marked(messages.tail))
    return _marked(messages)


def _marked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not messages or not messages[-1]["content"]:
        return messages
    last = messages[-1]
    marked = {**last["content"][-1], "cache_control": EPHEMERAL}
    return [*messages[:-1], {**last, "content": [*last["content"][:-1], marked]}]


def _empty_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _answer_every_tool_use(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each tool_use its tool_result right after it; drop results that answer nothing."""
    repaired: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message["role"] == "user":
            previous = repaired[-1] if repaired else None
            expected = tool_use_ids(previous) if previous else []
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
        if tool_use_ids(message) and following is None:
            # The turn ended on a tool call with no results at all (a stop before any ran).
            repaired.append(
                {"role": "user", "content": [_not_run(i) for i in tool_use_ids(message)]}
            )
    return repaired


def tool_use_ids(message: dict[str, Any] | None) -> list[str]:
    if message is None or message["role"] != "assistant":
        return []
    return [b["id"] for b in message["content"] if b.get("type") == "tool_use"]


def _not_run(tool_use_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": NOT_RUN, "is_error": True}


class Turn(Protocol):
    """An earlier turn of a :class:`History` (the history cache's)."""

    @property
    def json(self) -> str | None:  # its text, once encoded
        ...

    def api(self) -> list[dict[str, Any]]: ...

    def encoded(self, encode: Encoder) -> str: ...


Encoder = Callable[[Any], str]
"""Compact JSON text of a value (``agent.client.encode_json``): a turn's is kept as made."""


class History:
    """A model call's messages: earlier whole turns, which keep the JSON text they were first
    sent as, then the rest (``tail``) as API messages.

    Turn after turn a request repeats the whole conversation so far; encoding it anew for
    every call made each call's cost grow with the conversation. Each earlier turn is encoded
    once, and its text reused; the history cache then keeps only that text of the turn.
    """

    __slots__ = ("tail", "turns")

    def __init__(self, turns: Sequence[Turn], tail: list[dict[str, Any]]) -> None:
        self.turns = turns  # closed turns: their messages come first, joined as they are
        self.tail = tail

    def json(self, encode: Encoder) -> str:
        """The messages as a JSON array, as ``encode`` would make it of ``messages()``."""
        parts = [turn.json or turn.encoded(encode) for turn in self.turns]
        parts += [encode(message) for message in self.tail]
        return f"[{','.join(part for part in parts if part)}]"

    def messages(self) -> list[dict[str, Any]]:
        """The messages as API message dicts (encoded turns are decoded: not for hot paths)."""
        return [message for turn in self.turns for message in turn.api()] + self.tail


Messages = list[dict[str, Any]] | History
"""What a model call's ``messages`` may be given as."""
