"""The Messages API's rules for conversation history, as the fake enforces them."""

from __future__ import annotations

from typing import Any

from .replies import blocks_of_type


def invalid_history(messages: Any) -> str | None:
    """Why ``messages`` breaks the Messages API's rules (the API's 400 message), or None."""
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    seen: set[str] = set()
    expected: list[str] = []  # tool_use ids the next message must answer
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            return f'{where}: role must be "user" or "assistant", not {role!r}'
        if index == 0 and role != "user":
            return 'messages: the first message must use the "user" role'
        if index and messages[index - 1]["role"] == role:
            return f'{where}: roles must alternate between "user" and "assistant", two "{role}"'
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            return f"{where}.content: must be a string or a list of content blocks"
        if not blocks and not (role == "assistant" and index == len(messages) - 1):
            return (
                f"{where}: all messages must have non-empty content"
                " except for the optional final assistant message"
            )
        for number, block in enumerate(blocks):
            if block.get("type") == "text" and not str(block.get("text", "")).strip():
                return f"{where}.content.{number}: text content blocks must be non-empty"
            if block.get("type") in ("image", "document"):
                wrong = _invalid_source(block, role)
                if wrong:
                    return f"{where}.content.{number}: {wrong}"
        results = [str(b.get("tool_use_id")) for b in blocks_of_type(blocks, "tool_result")]
        if role == "user":
            missing = [tool_id for tool_id in expected if tool_id not in results]
            if missing:
                return _unanswered(index - 1, missing)
            unexpected = [tool_id for tool_id in results if tool_id not in expected]
            if unexpected:
                return (
                    f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{', '.join(unexpected)}. Each `tool_result` block must have a"
                    " corresponding `tool_use` block in the previous message."
                )
            kinds = [block.get("type") for block in blocks]
            if "text" in kinds and "tool_result" in kinds[kinds.index("text") :]:
                return f"{where}: `tool_result` blocks must come before any text in the message"
        expected = [str(b.get("id")) for b in blocks_of_type(blocks, "tool_use")]
        for tool_id in expected:
            if tool_id in seen:
                return f"{where}: `tool_use` ids must be unique; {tool_id} is used twice"
            seen.add(tool_id)
    if expected:
        return _unanswered(len(messages) - 1, expected)
    return None


# Anthropic-defined tools that the API offers only behind a beta header, and that header.
BETA_TOOLS = {"memory_20250818": "context-management-2025-06-27"}


def invalid_tools(tools: Any, headers: dict[str, str]) -> str | None:
    """Why ``tools`` is not a tool list the API takes with these (lower-case) headers."""
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        return "tools: must be a list of tool definitions"
    betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
    for number, tool in enumerate(tools):
        kind = tool.get("type")
        if kind in BETA_TOOLS and BETA_TOOLS[kind] not in betas:
            beta = BETA_TOOLS[kind]
            return f"tools.{number}: {kind} needs the beta header anthropic-beta: {beta}"
        if kind is None and not isinstance(tool.get("input_schema"), dict):
            return f"tools.{number}.input_schema: Field required"
    return None


IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _invalid_source(block: dict[str, Any], role: str) -> str | None:
    """Why an image or document block is not one the API takes, or None."""
    kind = block["type"]
    if role != "user":
        return f"{kind} blocks are only allowed in user messages"
    source = block.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("data"), str):
        return f"{kind}.source: a source with data is required"
    if not source["data"]:
        return f"{kind}.source.data: must be non-empty"
    if kind == "image" and (source.get("type"), source.get("media_type")) not in [
        ("base64", t) for t in IMAGE_TYPES
    ]:
        return f"image.source: base64 of one of {', '.join(IMAGE_TYPES)} is required"
    if kind == "document" and (source.get("type"), source.get("media_type")) not in (
        ("base64", "application/pdf"),
        ("text", "text/plain"),
    ):
        return "document.source: base64 application/pdf or text text/plain is required"
    return None


def _unanswered(index: int, tool_ids: list[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately"
        f" after: {', '.join(tool_ids)}. Each `tool_use` block must have a corresponding"
        " `tool_result` block in the next message."
    )
