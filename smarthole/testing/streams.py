"""What the fake answers a message request with: the whole Message JSON, or its stream of
server-sent events, cut short where a scripted fault says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .replies import RecordedRequest, Reply, fresh_id

_NO_CACHE = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def message(reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    """The full Message JSON for ``reply``, with fresh ids for tool calls that have none."""
    content = [
        {**b, "id": b.get("id") or fresh_id("toolu")} if b.get("type") == "tool_use" else b
        for b in reply.content
    ]
    usage = {"input_tokens": 10, "output_tokens": 5, **_NO_CACHE, **(reply.usage or {})}
    return {"id": fresh_id("msg"), "type": "message", "role": "assistant"} | {
        "model": request.model, "content": content, "usage": usage,
        "stop_reason": None if reply.truncate else reply.stop_reason, "stop_sequence": None,
    }  # fmt: skip


def _deltas(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """How a content block opens in a stream, and its deltas (two, to be joined)."""
    if block.get("type") == "text":
        kind, key, value, opened = "text_delta", "text", block["text"], {**block, "text": ""}
    elif block.get("type") == "tool_use":
        kind, key, value = "input_json_delta", "partial_json", json.dumps(block["input"])
        opened = {**block, "input": {}}
    else:
        return block, []
    middle = len(value) // 2
    parts = [value[:middle], value[middle:]] if middle else [value]
    return opened, [{"type": kind, key: part} for part in parts]


def sse(event: dict[str, Any] | tuple[str, str]) -> bytes:
    """One server-sent event: a dict as JSON, a ``(name, data)`` pair as it is."""
    name, data = event if isinstance(event, tuple) else (event["type"], json.dumps(event))
    return f"event: {name}\ndata: {data}\n\n".encode()


_GARBLED = ("content_block_delta", '{"type": "content_block_delta", "index": 0, "delta": {')
"""An event whose data is not JSON (cut off mid-object)."""


def events(reply: Reply, request: RecordedRequest) -> Iterator[dict[str, Any] | tuple[str, str]]:
    """The SSE events of ``reply``, cut short where a fault says so; raw ones as (name, data)."""
    whole = message(reply, request)
    usage = whole["usage"]
    start = {**whole, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield {"type": "message_start", "message": start}
    yield {"type": "ping"}
    blocks = whole["content"]
    for index, block in enumerate(blocks):
        opened, deltas = _deltas(block)
        cut = reply.cut if index == len(blocks) - 1 else None
        yield {"type": "content_block_start", "index": index, "content_block": opened}
        for delta in deltas[:1] if cut else deltas:
            yield {"type": "content_block_delta", "index": index, "delta": delta}
            if reply.garble:
                yield _GARBLED
                return
            if reply.drop:
                return
            if reply.stream_error:
                failure = {"type": reply.stream_error, "message": "fake stream error"}
                yield {"type": "error", "error": failure}
                return
        if cut == "unclosed":
            break
        yield {"type": "content_block_stop", "index": index}
    if reply.truncate:
        return
    delta = {"stop_reason": reply.stop_reason, "stop_sequence": None}
    yield {
        "type": "message_delta",
        "delta": delta,
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    yield {"type": "message_stop"}
