"""What a test scripts and what it sees: replies for the fake to send, and recorded requests."""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from time import monotonic
from typing import Any

from ..agent.prompts import CONTEXT_OPEN

# The line every team agent's system prompt carries (smarthole.teams.prompts.AGENT_LINE).
_AGENT_LINE = re.compile(r'You are the agent "([a-z][a-z0-9_-]{0,31})" in a team')

Responder = Callable[["RecordedRequest"], "Reply"]
"""Computes a reply from the request: ``fake.add(lambda req: text(req.model))``."""
_ids = itertools.count(1)  # ids are unique in the process, so two servers never share one


def fresh_id(prefix: str) -> str:
    """``prefix_0001``...: ids unique in the process, so two servers never share one."""
    return f"{prefix}_{next(_ids):04d}"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a message, an error (``body`` set), or a fault."""

    status: int = 200
    content: tuple[dict[str, Any], ...] = ()
    stop_reason: str | None = "end_turn"
    body: dict[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    usage: dict[str, int] | None = None
    drop: bool = False
    hold: threading.Event | None = None
    stall: threading.Event | None = None  # a stream waits after its first delta until set
    delay: float = 0.0
    truncate: bool = False
    stream_error: str | None = None
    cut: str | None = None  # "max_tokens" or "unclosed": the last content block stops half-way
    garble: bool = False


def text(
    words: str, *, stop_reason: str = "end_turn", usage: dict[str, int] | None = None
) -> Reply:
    """A text message; ``usage`` replaces the fake's simulated counts (see ``PromptCache``);
    counts it leaves out are 10 in, 5 out, no cache."""
    return Reply(content=({"type": "text", "text": words},), stop_reason=stop_reason, usage=usage)


def tool_use(
    name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None
) -> Reply:
    """A call of tool ``name``; without ``id`` the server gives it a fresh ``toolu_<n>``."""
    return tool_uses([(name, input)], text, ids=[id])


def memory_call(command: str, *, id: str | None = None, **arguments: Any) -> Reply:
    """A call of the memory tool (``memory_20250818``): ``memory_call("create",
    path="/memories/profile.md", file_text="...")``."""
    return tool_use("memory", {"command": command, **arguments}, id=id)


def tool_uses(
    calls: list[tuple[str, dict[str, Any]]],
    text: str | None = None,
    *,
    ids: list[str | None] | None = None,
) -> Reply:
    """Several tool calls in one message, after an optional ``text`` block."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for (name, arguments), tool_id in zip(calls, ids or [None] * len(calls), strict=True):
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": arguments})
    return Reply(content=tuple(blocks), stop_reason="tool_use")


def error(status: int, type: str, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    """An error with the real API's body; its ``request_id`` is filled in when sent."""
    body = {"type": "error", "error": {"type": type, "message": message}}
    return Reply(status=status, body=body, headers=tuple((headers or {}).items()))


def rate_limited(*, retry_after: float | None = None, retry_after_ms: float | None = None) -> Reply:
    """A 429 ``rate_limit_error``, with ``retry-after`` / ``retry-after-ms`` headers if given."""
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    if retry_after_ms is not None:
        headers["retry-after-ms"] = f"{retry_after_ms:g}"
    message = "Number of requests has exceeded your rate limit"
    return error(429, "rate_limit_error", message, headers=headers)


def overloaded() -> Reply:
    """A 529 ``overloaded_error`` (``anthropic.OverloadedError``)."""
    return error(529, "overloaded_error", "Overloaded")


def server_error(status: int = 500) -> Reply:
    """An ``api_error`` with a 5xx status (``anthropic.InternalServerError``)."""
    return error(status, "api_error", "Internal server error")


def prompt_too_long(tokens: int = 250_000, maximum: int = 200_000) -> Reply:
    """The API's 400 for a context that does not fit the model's window."""
    message = f"prompt is too long: {tokens} tokens > {maximum} maximum"
    return error(400, "invalid_request_error", message)


def drop(partial: Reply | None = None) -> Reply:
    """Close the connection without a reply.

    With ``partial`` and a streaming request, the stream starts, sends its first delta and
    then breaks off without the final chunk (the SDK raises ``httpx2.RemoteProtocolError``).
    """
    return replace(partial or Reply(), drop=True)


def hold(event: threading.Event, then: Reply) -> Reply:
    """Answer ``then`` only once ``event`` is set or the server stops."""
    return replace(then, hold=event)


def stalled(event: threading.Event, then: Reply) -> Reply:
    """Stream ``then``'s start and first delta, then wait until ``event`` is set, the server
    stops or the client hangs up: a long reply in flight, for a test that cuts it short
    (``fake.wait_for_stall()`` waits for the stall, ``fake.wait_for_hang_up()`` for the cut).
    Without streaming, as :func:`hold`."""
    return replace(then, stall=event)


def delay(seconds: float, then: Reply) -> Reply:
    """Answer ``then`` after ``seconds`` (sooner if the server stops)."""
    return replace(then, delay=seconds)


def truncated(then: Reply) -> Reply:
    """An incomplete reply: a stream that ends cleanly before ``message_delta``.

    The SDK then reports ``stop_reason=None``; a non-streaming request gets the message with
    ``stop_reason: null`` for the same effect.
    """
    return replace(then, truncate=True)


def stream_error(type: str = "overloaded_error") -> Reply:
    """An ``event: error`` after the first delta of a stream (an HTTP error if not streaming)."""
    return Reply(content=({"type": "text", "text": "partial"},), stream_error=type)


def max_tokens(then: Reply) -> Reply:
    """The model runs out of ``max_tokens`` half-way through ``then``'s last content block.

    A stream sends the first half of that block (half a tool call's input JSON, which the SDK
    repairs into partial arguments), stops the block and the message with ``max_tokens``. A
    non-streaming request gets the whole message with ``stop_reason: "max_tokens"``.
    """
    return replace(then, cut="max_tokens", stop_reason="max_tokens")


def unclosed(then: Reply) -> Reply:
    """A stream that ends inside ``then``'s last content block, then stops the message.

    Half the block is sent and never stopped (no ``content_block_stop``); ``message_delta``
    and ``message_stop`` follow with ``then``'s stop reason, so the SDK hands back a complete
    looking message (a ``tool_use`` block with partial input). Non-streaming: ``then`` as is.
    """
    return replace(then, cut="unclosed")


def garbled(then: Reply) -> Reply:
    """After the first delta of a stream, an event whose data is not JSON.

    The SDK raises ``json.JSONDecodeError``. A non-streaming request gets a 200 whose body is
    not JSON.
    """
    return replace(then, garble=True)


def echo(prefix: str = "echo: ") -> Responder:
    """A responder that answers with ``prefix`` and the last user message's text."""
    return lambda request: text(prefix + request.last_user_text)


@dataclass(frozen=True)
class RecordedRequest:
    """One ``POST /v1/messages`` as the fake received it."""

    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]
    time: float = field(default_factory=monotonic)
    invalid_reason: str | None = None

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def system_text(self) -> str:
        """The system prompt as one string (text blocks joined by blank lines)."""
        system = self.body.get("system") or ""
        return system if isinstance(system, str) else "\n\n".join(_texts(system))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def agent(self) -> str | None:
        """The team agent this request is for, from its system prompt; None for the entry
        agent (and for title and summary requests)."""
        found = _AGENT_LINE.search(self.system_text)
        return found.group(1) if found else None

    @property
    def tools(self) -> list[str]:
        """The names of the offered tools."""
        return [str(tool.get("name")) for tool in self.body.get("tools") or []]

    @property
    def last_user_text(self) -> str:
        """The text blocks of the last user message, joined by newlines; the turn context a
        message starts with (``<context>Turn 2, sent …</context>``) is left out."""
        content = self._last_user_content()
        if isinstance(content, str):
            return content
        return "\n".join(t for t in _texts(content) if not t.startswith(CONTEXT_OPEN))

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The ``tool_result`` blocks of the last user message."""
        content = self._last_user_content()
        return [] if isinstance(content, str) else blocks_of_type(content, "tool_result")

    @property
    def retry_count(self) -> int:
        """The SDK's ``x-stainless-retry-count``: 0 for a first attempt."""
        return int(self.headers.get("x-stainless-retry-count") or 0)

    def _last_user_content(self) -> Any:
        users = [m for m in self.messages if isinstance(m, dict) and m.get("role") == "user"]
        return (users[-1].get("content") or "") if users else ""


def _texts(blocks: Any) -> list[str]:
    return [str(block.get("text", "")) for block in blocks_of_type(blocks, "text")]


def blocks_of_type(blocks: Any, kind: str) -> list[dict[str, Any]]:
    if not isinstance(blocks, list):
        return []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == kind]
