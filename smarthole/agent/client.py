"""The model client: Messages API calls, and what their failures mean.

This is the only module that imports ``anthropic`` (and its HTTP library), lazily, so the CLI
starts fast. Every failure becomes a ``ModelError`` that says whether a retry can help.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ModelError
from .messages import History, Messages

if TYPE_CHECKING:
    from ..config import ModelSettings

logger = logging.getLogger(__name__)

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
IN_DOUBT = (
    "Error: the daemon stopped while this tool was running, so its outcome is unknown. It was "
    "not run again because it is not idempotent. Check its effect before trying again."
)


@dataclass(frozen=True)
class ModelReply:
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: dict[str, Any]
    model: str = ""  # the model that answered, as the API names it

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text").strip()


class ModelClient:
    """A thin, typed wrapper over ``anthropic.Anthropic`` that raises only ``ModelError``."""

    def __init__(
        self, settings: ModelSettings, *, api_key: str, base_url: str | None = None
    ) -> None:
        import anthropic

        self.settings = settings
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url or None,
            max_retries=settings.sdk_max_retries,
            timeout=settings.timeout_seconds,
        )

    @classmethod
    def from_environment(
        cls, settings: ModelSettings, env: Mapping[str, str] | None = None
    ) -> ModelClient:
        """Key from ``ANTHROPIC_API_KEY``; base URL from config, else ``ANTHROPIC_BASE_URL``."""
        env = os.environ if env is None else env
        api_key = env.get(API_KEY_ENV, "").strip()
        if not api_key:
            raise ConfigError(
                f"{API_KEY_ENV} is not set: set it to your Anthropic API key "
                "(or try `smarthole demo`, which needs none)"
            )
        return cls(
            settings, api_key=api_key, base_url=settings.base_url or env.get(BASE_URL_ENV) or None
        )

    def complete(
        self,
        *,
        system: list[dict[str, Any]] | str,
        messages: Messages,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """One streamed Messages API call; a stream cut short is an error, not a reply."""
        import anthropic
        import httpx2

        params: dict[str, Any] = {
            "model": model or self.settings.name,
            "max_tokens": max_tokens or self.settings.max_tokens,
            "system": system,
        }
        if tools:
            params["tools"] = tools
        started = time.monotonic()
        try:
            reply = _Reply.read(self._stream(messages, params))
        except anthropic.APIError as exc:
            raise _model_error(exc) from exc
        except (httpx2.HTTPError, AssertionError) as exc:  # a stream cut off mid-way
            raise ModelError(
                f"the model's reply stream broke off: {describe(exc)}",
                retryable=True,
                kind="stream",
            ) from exc
        except ValueError as exc:  # data that is not JSON, or not a valid event: like a 5xx
            raise ModelError(
                f"the model's reply stream was not valid JSON: {describe(exc)}",
                retryable=True,
                kind="server",
            ) from exc
        reply.check_complete(params["max_tokens"])
        logger.debug(
            "model %s answered in %.2fs (%s, %s)",
            params["model"],
            time.monotonic() - started,
            reply.stop_reason,
            reply.usage,
        )
        return ModelReply(
            content=reply.content(),
            stop_reason=reply.stop_reason,
            usage=reply.usage,
            model=reply.model or params["model"],
        )

    def _stream(self, messages: Messages, params: dict[str, Any]) -> Any:
        """The raw event stream of ``messages.create(messages=messages, **params,
        stream=True)``, events as dicts.

        Two costs of the SDK's streaming helpers are skipped; it still sends the request,
        retries it, and raises its errors, an ``error`` event in the stream included:
        * ``messages.stream`` deep-copies every request body before encoding it, so a retry can
          send it again: a walk over every block of the conversation, the largest single cost
          of a call with a long history. The body here is plain JSON data already, so it is
          encoded once, with the SDK's encoder settings, and its retries resend those bytes.
          A :class:`~smarthole.agent.history.History` gives its earlier turns' text as it was
          first encoded.
        * Each event would become a pydantic model, and the message stream re-parses a tool
          call's partial input on every delta. :class:`_Reply` reads the events' plain JSON.
        """
        from anthropic import Stream

        if isinstance(messages, History):
            history = messages.json(encode_json)
        else:
            history = encode_json(messages)
        rest = encode_json({**params, "stream": True})  # "{...}": spliced after the messages
        body = f'{{"messages":{history},{rest[1:]}'.encode()
        return self._client.post(
            "/v1/messages", content=body, cast_to=object, stream=True, stream_cls=Stream[object]
        )

    def close(self) -> None:
        self._client.close()


encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""JSON text of request data as the SDK encodes a body: compact, UTF-8 as is, no NaN."""


class _Reply:
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
    def read(cls, stream: Any) -> _Reply:
        """Read ``stream`` to its end (closing it); a broken stream raises as the SDK does."""
        reply = cls()
        with stream:
            for event in stream:
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
        if self.stop_reason is None or self.open:
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


def describe(exc: BaseException) -> str:
    """An exception's message, or its type's name when the message is empty."""
    return str(exc).strip() or type(exc).__name__


def _model_error(exc: Exception) -> ModelError:
    """Classify an SDK exception: can a later attempt succeed, and when?"""
    import anthropic

    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return ModelError(
            f"could not reach the model: {describe(exc)}", retryable=True, kind="connection"
        )
    if not isinstance(exc, anthropic.APIStatusError):
        return ModelError(f"model call failed: {describe(exc)}", retryable=False)
    status = exc.status_code
    message = (exc.api_message or "").strip() or describe(exc)
    retry_after = _retry_after(exc.response.headers)
    code = exc.error_code or ""
    if status == 200:  # an error event inside the stream, e.g. overloaded_error
        return ModelError(
            f"the model stream reported {exc.type}: {message}",
            retryable=True,
            kind=str(exc.type or "stream"),
        )
    if status == 400 and message.lower().startswith("prompt is too long"):
        return ModelError(message, retryable=False, status=status, kind="prompt_too_long")
    if "spend_limit" in code or status == 402:
        return ModelError(
            f"spend limit reached: {message}", retryable=False, status=status, kind="spend_limit"
        )
    if status in (408, 409, 429) or status >= 500:
        kind = "rate_limit" if status == 429 else "overloaded" if status == 529 else "server"
        return ModelError(
            f"HTTP {status}: {message}",
            retryable=True,
            retry_after=retry_after,
            status=status,
            kind=kind,
        )
    kind = {401: "auth", 403: "auth"}.get(status, "invalid_request")
    return ModelError(f"HTTP {status}: {message}", retryable=False, status=status, kind=kind)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())
