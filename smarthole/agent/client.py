"""The model client: Messages API calls, and what their failures mean.

This is the only module that imports ``anthropic`` (and its HTTP library), lazily, so the CLI
starts fast. Every failure becomes a ``ModelError`` that says whether a retry can help.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ModelError, TurnHalted
from .messages import History, Messages
from .replies import StreamedReply

if TYPE_CHECKING:
    import ssl

    import anthropic

    from ..config import ModelSettings
    from .cutting import StreamCut

logger = logging.getLogger(__name__)

BeforeSend = Callable[[str, int, int], None]
"""``(model, max_tokens, request_bytes)``, called after a request is encoded, before it is sent."""

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
KEPT_TOOL_LISTS = 16  # encoded tool lists a client keeps: the entry agent's and a team's
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


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The process's one TLS context: loading the system's CA certificates took about 70 ms
    for each client the SDK made (a reload and every command that calls the model make one);
    a context is safe to share between connections and threads."""
    import httpx2

    return httpx2.create_ssl_context()


class ModelClient:
    """A thin, typed wrapper over ``anthropic.Anthropic`` that raises only ``ModelError``."""

    def __init__(
        self, settings: ModelSettings, *, api_key: str, base_url: str | None = None
    ) -> None:
        import anthropic  # noqa: F401  (at start: the first message must not wait for it)

        self.settings = settings
        self._api_key, self._base_url = api_key, base_url or None
        self._made: anthropic.Anthropic | None = None
        self._making = threading.Lock()
        # The JSON text of the tool lists sent lately, by identity (each kept alive with its
        # text): a tool set's definitions are one list, built once and never changed, and
        # encoding them was the largest part of encoding a request after its history.
        self._encoded_tools: dict[int, tuple[list[dict[str, Any]], str]] = {}

    @property
    def _client(self) -> anthropic.Anthropic:
        """The SDK's client, made at the first call: its HTTP stack and TLS context (3 MiB)
        are not the idle daemon's to hold."""
        with self._making:
            if self._made is None:
                import anthropic

                self._made = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    max_retries=self.settings.sdk_max_retries,
                    timeout=self.settings.timeout_seconds,
                    http_client=anthropic.DefaultHttpxClient(verify=_ssl_context()),
                )
            return self._made

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
        before_send: BeforeSend | None = None,
        cut: StreamCut | None = None,
    ) -> ModelReply:
        """One streamed Messages API call; a stream cut short is an error, not a reply.

        ``before_send(model, max_tokens, request_bytes)`` runs once the request is encoded and
        before it is sent (the budget's reservation); what it raises passes through. ``cut``
        lets another thread hang the call up: it then raises ``TurnHalted``."""
        import anthropic
        import httpx2

        params: dict[str, Any] = {
            "model": model or self.settings.name,
            "max_tokens": max_tokens or self.settings.max_tokens,
            "system": system,
        }
        started = time.monotonic()
        try:
            reply = self._read(messages, params, tools or None, before_send, cut)
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

    def _read(
        self,
        messages: Messages,
        params: dict[str, Any],
        tools: list[dict[str, Any]] | None,
        before_send: BeforeSend | None,
        cut: StreamCut | None,
    ) -> StreamedReply:
        """The call's reply as it streams in; ``TurnHalted`` if ``cut`` hung it up first."""
        if cut is None:
            return StreamedReply.read(self._stream(messages, params, tools, before_send))
        if cut.reason is not None:  # cut before it was sent: not sent at all
            raise TurnHalted(cut.reason)
        stream = self._stream(messages, params, tools, before_send)
        try:
            with cut.watching(functools.partial(_hang_up, stream)):
                reply = StreamedReply.read(stream, stop=lambda: cut.reason)
        except Exception as exc:
            if cut.reason is not None:  # what hanging up broke (a read error, a short stream)
                raise TurnHalted(cut.reason, sent=True) from exc
            raise
        if cut.reason is not None and not reply.finished:  # cut short: nothing of it is kept
            raise TurnHalted(cut.reason, sent=True)
        return reply  # a reply that came whole is kept; the turn stops at its next safe point

    def _stream(
        self,
        messages: Messages,
        params: dict[str, Any],
        tools: list[dict[str, Any]] | None,
        before_send: BeforeSend | None = None,
    ) -> Any:
        """The raw event stream of ``messages.create(messages=messages, **params,
        tools=tools, stream=True)``, events as dicts.

        Two costs of the SDK's streaming helpers are skipped; it still sends the request,
        retries it, and raises its errors, an ``error`` event in the stream included:
        * ``messages.stream`` deep-copies every request body before encoding it, so a retry can
          send it again: a walk over every block of the conversation, the largest single cost
          of a call with a long history. The body here is plain JSON data already, so it is
          encoded once, with the SDK's encoder settings, and its retries resend those bytes.
          A :class:`~smarthole.agent.history.History` gives its earlier turns' text as it was
          first encoded, and a tool list its text from an earlier call (:meth:`_tools_json`).
        * Each event would become a pydantic model, and the message stream re-parses a tool
          call's partial input on every delta. :class:`StreamedReply` reads their plain JSON.
        """
        from anthropic import Stream

        from .blobdata import blob_data

        if isinstance(messages, History):
            history = messages.json(encode_json)
        else:
            history = encode_json(messages)
        rest = encode_json(params)[1:-1]  # "{...}" without its braces: after the messages
        if tools:
            rest += f',"tools":{self._tools_json(tools)}'
        body = blob_data().splice(f'{{"messages":{history},{rest},"stream":true}}'.encode())
        if before_send is not None:
            before_send(params["model"], params["max_tokens"], len(body))
        betas = sorted({BETA_TOOLS[t["type"]] for t in tools or () if t.get("type") in BETA_TOOLS})
        return self._client.post(
            "/v1/messages",
            content=body,
            cast_to=object,
            stream=True,
            stream_cls=Stream[object],
            options={"headers": {"anthropic-beta": ",".join(betas)}} if betas else {},
        )

    def _tools_json(self, tools: list[dict[str, Any]]) -> str:
        """``tools`` as JSON text, encoded once per list (see ``ToolSet.specs``)."""
        kept = self._encoded_tools.get(id(tools))
        if kept is not None and kept[0] is tools:
            return kept[1]
        if len(self._encoded_tools) >= KEPT_TOOL_LISTS:
            self._encoded_tools.clear()  # tool sets that changed, or agents of a team
        text = encode_json(tools)
        self._encoded_tools[id(tools)] = (tools, text)
        return text

    def close(self) -> None:
        with self._making:
            made, self._made = self._made, None
        if made is not None:
            made.close()


# Tool types the API offers only behind a beta header: the header a request offering one sends.
BETA_TOOLS = {"memory_20250818": "context-management-2025-06-27"}

encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""JSON text of request data as the SDK encodes a body: compact, UTF-8 as is, no NaN."""


def _hang_up(stream: Any) -> None:
    """End the connection ``stream`` reads from, from another thread: its blocked read returns.

    ``shutdown`` of a duplicate of the socket ends the connection itself (closing a socket
    another thread reads would not wake it), and leaves the reading thread's own objects
    (TLS included) to fail and be closed there. Without a socket to reach, the read stops at
    the stream's next event instead.
    """
    import socket

    network = getattr(stream, "response", None)
    network = None if network is None else network.extensions.get("network_stream")
    raw = None if network is None else network.get_extra_info("socket")
    if raw is None:
        return
    try:
        duplicate = socket.socket(fileno=os.dup(raw.fileno()))
    except OSError:  # already closed: nothing left to cut
        return
    with duplicate, contextlib.suppress(OSError):
        duplicate.shutdown(socket.SHUT_RDWR)


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
