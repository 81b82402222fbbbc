"""A streamed Messages API reply, assembled from its events' plain JSON.

The SDK's message stream would turn each event into a pydantic model and re-parse a tool
call's partial input on every delta; :class:`StreamedReply` reads the JSON as it comes, gives
the same blocks (``tests/agent/test_reply_assembly.py`` holds it to the SDK's own assembly),
and says whether the reply is complete.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import ModelError


class StreamedReply:
    """A reply assembled from its stream's events (plain JSON), as the SDK's message stream
    assembles it, and whether it is complete."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None  # from message_start
        self.blocks: dict[int, dict[str, Any]] = {}  # by index
        self.open: set[int] = set()  # started and not stopped
        # An open block's streamed text, input JSON or thinking, as its parts: joined when it
        # stops (adding to a string in a dict copies it whole, for every delta).
        self.parts: dict[tuple[int, str], list[str]] = {}
        self.unreadable: set[int] = set()  # closed tool calls whose input is not JSON

    @classmethod
    def read(cls, stream: Any, stop: Callable[[], object] | None = None) -> StreamedReply:
        """Read ``stream`` to its end (closing it); a broken stream raises as the SDK does.
        ``stop()``, asked before each event, ends the reading early when true."""
        reply = cls()
        with stream:
            for event in stream:
                if stop is not None and stop():
                    break
                try:
                    reply.add(event)
                except (KeyError, TypeError, AttributeError) as exc:  # a malformed event
                    raise ValueError(f"unexpected event {str(event)[:200]}") from exc
        return reply

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if self.message is None:
            if kind == "message_start":
                self.message = dict(event["message"])
                self.message["usage"] = dict(self.message.get("usage") or {})
            return  # the SDK skips events before message_start too
        if kind == "content_block_start":
            index = event["index"]
            self.blocks[index] = dict(event["content_block"])
            self.open.add(index)
        elif kind == "content_block_delta":
            self._delta(self.blocks[event["index"]], event["index"], event["delta"])
        elif kind == "content_block_stop":
            index = event["index"]
            self.open.discard(index)
            self._close(index)
        elif kind == "message_delta":
            self._message_delta(event)

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> None:
        kind, block_type = delta.get("type"), block.get("type")
        if kind == "text_delta" and block_type == "text":
            self._part(index, "text", block).append(delta["text"])
        elif kind == "input_json_delta" and "input" in block:
            self.parts.setdefault((index, "input"), []).append(delta["partial_json"])
        elif kind == "citations_delta" and block_type == "text":
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]
        elif kind == "thinking_delta" and block_type == "thinking":
            self._part(index, "thinking", block).append(delta["thinking"])
        elif kind == "signature_delta" and block_type == "thinking":
            block["signature"] = delta["signature"]

    def _part(self, index: int, key: str, block: dict[str, Any]) -> list[str]:
        """The parts of a block's streamed ``key``, starting with what it opened with."""
        parts = self.parts.get((index, key))
        if parts is None:
            parts = self.parts[index, key] = [block.get(key) or ""]
        return parts

    def _close(self, index: int) -> None:
        """Join a stopped block's streamed parts; its input JSON is parsed once, here."""
        block = self.blocks[index]
        for key in ("text", "thinking"):
            if (index, key) in self.parts:
                block[key] = "".join(self.parts.pop((index, key)))
        text = "".join(self.parts.pop((index, "input"), []))
        if not text:
            return  # no input delta: the input the block started with
        try:
            block["input"] = json.loads(text)
        except ValueError:
            self.unreadable.add(index)

    def _message_delta(self, event: dict[str, Any]) -> None:
        assert self.message is not None
        delta = event.get("delta") or {}
        for key in ("stop_reason", "stop_sequence", "stop_details"):
            self.message[key] = delta.get(key)
        if delta.get("container") is not None:
            self.message["container"] = delta["container"]
        # Counts on a message_delta are cumulative: they replace; one left out keeps its value.
        usage = self.message["usage"]
        for key, value in (event.get("usage") or {}).items():
            if value is not None or key == "output_tokens":
                usage[key] = value

    @property
    def stop_reason(self) -> str | None:
        return self.message.get("stop_reason") if self.message else None

    @property
    def model(self) -> str:
        return str(self.message.get("model") or "") if self.message else ""

    @property
    def usage(self) -> dict[str, Any]:
        usage = self.message["usage"] if self.message else {}
        return {key: value for key, value in usage.items() if value is not None}

    def content(self) -> list[dict[str, Any]]:
        """The reply's blocks in order, without null fields (as ``exclude_none`` dumps them:
        a tool call's input is the model's own data, and keeps its nulls)."""
        return [
            {
                key: value if key == "input" else _without_none(value)
                for key, value in self.blocks[index].items()
                if value is not None
            }
            for index in sorted(self.blocks)
        ]

    @property
    def finished(self) -> bool:
        """Whether the stream said the reply ended: a stop reason, and no block left open."""
        return self.stop_reason is not None and not self.open

    def check_complete(self, max_tokens: int) -> None:
        """Refuse a reply that is incomplete, above all a tool call whose input was cut off.

        A tool call cut off by the end of the stream or by ``max_tokens`` may look whole (the
        SDK's message stream repairs partial input JSON); running it would act on arguments
        the model never finished. Such a reply is a retryable ``ModelError`` (the attempt is
        retried later with backoff, like a 5xx): the tool is not run, and nothing of the reply
        is stored.
        """
        cut = next((self.blocks[i] for i in sorted(self.open) if "input" in self.blocks[i]), None)
        if cut is not None:
            raise ModelError(
                f"the model's reply stream ended inside a call of tool {cut.get('name')}, so "
                "its input is incomplete; the tool was not run",
                retryable=True,
                kind="stream",
            )
        if not self.finished:
            raise ModelError(
                "the model's reply stream ended before it was complete",
                retryable=True,
                kind="stream",
            )
        last = self.blocks[max(self.blocks)] if self.blocks else None
        if self.stop_reason == "max_tokens" and last is not None and "input" in last:
            raise ModelError(
                f"the model reached max_tokens ({max_tokens}) inside a call of tool "
                f"{last.get('name')}, so its input is incomplete; the tool was not run (raise "
                "[model] max_tokens if this repeats)",
                retryable=True,
                kind="max_tokens",
            )
        if self.unreadable:
            block = self.blocks[min(self.unreadable)]
            raise ModelError(
                f"the model's reply stream was not valid JSON: the input of tool call "
                f"{block.get('name')} does not parse",
                retryable=True,
                kind="server",
            )


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value
