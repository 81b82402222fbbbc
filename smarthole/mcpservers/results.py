"""An MCP tool result, as the model reads it.

Text content becomes the tool_result's text; an image becomes an image block (when the
Messages API takes its type); an embedded or linked resource becomes a short text naming it;
``isError`` becomes ``is_error``. The input is the result as plain JSON (camelCase, as on the
wire), so this module needs no MCP library.
"""

from __future__ import annotations

import json
from typing import Any

from ..tools import ToolResult

MAX_TEXT = 100_000  # characters of text per result; the rest is cut, and the cut is said
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def to_tool_result(result: dict[str, Any]) -> ToolResult:
    """Map a ``CallToolResult`` (as JSON) to the tool result the model sees."""
    blocks: list[dict[str, Any]] = []
    for item in result.get("content") or []:
        block = _block(item)
        if block["type"] == "text" and blocks and blocks[-1]["type"] == "text":
            blocks[-1] = {"type": "text", "text": blocks[-1]["text"] + "\n" + block["text"]}
        else:
            blocks.append(block)
    if not blocks and result.get("structuredContent") is not None:
        text = json.dumps(result["structuredContent"], ensure_ascii=False, indent=2)
        blocks.append({"type": "text", "text": text})
    blocks = [_cut(b) for b in blocks]
    is_error = bool(result.get("isError"))
    texts = [b["text"] if b["type"] == "text" else "[image]" for b in blocks]
    summary = "\n".join(texts) or ("Error: the tool failed and said nothing" if is_error else "")
    if is_error and not summary.startswith("Error"):
        summary = f"Error: {summary}"
    if any(b["type"] == "image" for b in blocks):
        return ToolResult(summary, is_error, tuple(blocks))
    return ToolResult(summary or "Done.", is_error)


def _block(item: dict[str, Any]) -> dict[str, Any]:
    kind = item.get("type")
    if kind == "text":
        return {"type": "text", "text": str(item.get("text", ""))}
    if kind == "image":
        media = str(item.get("mimeType", ""))
        if media in IMAGE_TYPES:
            source = {"type": "base64", "media_type": media, "data": item.get("data", "")}
            return {"type": "image", "source": source}
        return {"type": "text", "text": f"[an image of type {media or 'unknown'}, not shown]"}
    if kind == "audio":
        return {"type": "text", "text": f"[audio ({item.get('mimeType', 'unknown')}), not played]"}
    if kind == "resource":
        resource = item.get("resource") or {}
        return {"type": "text", "text": f"[resource {_naming(resource)}]"}
    if kind == "resource_link":
        name = item.get("name") or item.get("title")
        label = f"{name} <{item.get('uri', '?')}>" if name else str(item.get("uri", "?"))
        return {"type": "text", "text": f"[resource link {label}]"}
    return {"type": "text", "text": f"[content of type {kind!r}, not shown]"}


def _naming(resource: dict[str, Any]) -> str:
    size = (
        f"{len(resource['text'])} characters" if isinstance(resource.get("text"), str) else "binary"
    )
    media = resource.get("mimeType") or "unknown type"
    return f"{resource.get('uri', '?')} ({media}, {size})"


def _cut(block: dict[str, Any]) -> dict[str, Any]:
    if block["type"] != "text" or len(block["text"]) <= MAX_TEXT:
        return block
    more = len(block["text"]) - MAX_TEXT
    return {
        "type": "text",
        "text": block["text"][:MAX_TEXT] + f"\n[... {more} more characters cut]",
    }
