"""A fake Anthropic Messages API on 127.0.0.1, for smarthole's tests and for plugin authors.

The real ``anthropic`` SDK talks to it over HTTP through ``base_url`` (or
``ANTHROPIC_BASE_URL``), so a test exercises the same code path as production, retries and
streaming included::

    from smarthole.testing import FakeMessagesAPI, text, tool_use, rate_limited

    with FakeMessagesAPI() as fake:
        fake.add(rate_limited(retry_after_ms=50))        # first call: 429
        fake.add(tool_use("read_file", {"path": "a.md"}))  # then a tool call
        fake.add(text("Done."))                          # then the final answer
        ...  # run the daemon with ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY=test
        assert fake.requests[-1].tool_results[0]["tool_use_id"]

Scripted replies are used first-in first-out (``when=`` makes one wait for a matching
request); ``fake.default`` answers everything else (a 500 "script exhausted" unless set).
A reply may also be a callable that receives the :class:`RecordedRequest`. Requests whose
history breaks the Messages API's rules get the API's 400, as the real service would.

Run ``python -m smarthole.testing [--port N]`` for an echo server to try the daemon by hand.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[["RecordedRequest"], "Reply"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a message, an error, or a fault."""

    status: int = 200
    content: tuple[dict[str, Any], ...] = ()
    stop_reason: str | None = "end_turn"
    body: dict[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    usage: dict[str, int] | None = None
    drop: bool = False
    hold: threading.Event | None = None
    delay: float = 0.0
    truncate: bool = False
    stream_error: str | None = None
    then: Reply | None = None


_ids = itertools.count(1)


def text(
    words: str, *, stop_reason: str = "end_turn", usage: dict[str, int] | None = None
) -> Reply:
    return Reply(content=({"type": "text", "text": words},), stop_reason=stop_reason, usage=usage)


def tool_use(
    name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None
) -> Reply:
    return tool_uses([(name, input)], text=text, ids=[id] if id else None)


def tool_uses(
    calls: list[tuple[str, dict[str, Any]]],
    *,
    text: str | None = None,
    ids: list[str] | None = None,
) -> Reply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for index, (name, arguments) in enumerate(calls):
        tool_id = ids[index] if ids else f"toolu_{next(_ids):06d}"
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": arguments})
    return Reply(content=tuple(blocks), stop_reason="tool_use")


def error(status: int, type: str, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    body = {
        "type": "error",
        "error": {"type": type, "message": message},
        "request_id": f"req_fake_{next(_ids):06d}",
    }
    return Reply(status=status, body=body, headers=tuple((headers or {}).items()))


def rate_limited(*, retry_after: float | None = None, retry_after_ms: float | None = None) -> Reply:
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    if retry_after_ms is not None:
        headers["retry-after-ms"] = f"{retry_after_ms:g}"
    return error(
        429, "rate_limit_error", "Number of requests has exceeded your rate limit", headers=headers
    )


def overloaded() -> Reply:
    return error(529, "overloaded_error", "Overloaded")


def server_error(status: int = 500) -> Reply:
    return error(status, "api_error", "Internal server error")


def prompt_too_long(tokens: int = 250_000, maximum: int = 200_000) -> Reply:
    return error(
        400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {maximum} maximum"
    )


def drop() -> Reply:
    """Close the connection without answering."""
    return Reply(drop=True)


def hold(event: threading.Event, then: Reply) -> Reply:
    """Answer ``then`` only once ``event`` is set (or the server stops)."""
    return replace(then, hold=event)


def delay(seconds: float, then: Reply) -> Reply:
    return replace(then, delay=seconds)


def truncated(then: Reply) -> Reply:
    """As a stream: end before ``message_delta``, so the reply is incomplete."""
    return replace(then, truncate=True)


def stream_error(type: str = "overloaded_error") -> Reply:
    """As a stream: an ``event: error`` after the message started."""
    return Reply(content=({"type": "text", "text": "partial"},), stream_error=type)


def echo(prefix: str = "echo: ") -> Responder:
    """Answer every request with its last user text."""
    return lambda request: text(prefix + request.last_user_text)


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    time: float
    invalid_reason: str | None = None

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def system_text(self) -> str:
        system = self.body.get("system", "")
        if isinstance(system, str):
            return system
        return "\n\n".join(b.get("text", "") for b in system)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tools(self) -> list[str]:
        return [t["name"] for t in self.body.get("tools", [])]

    def _last_user(self) -> Any:
        users = [m for m in self.messages if m.get("role") == "user"]
        return users[-1]["content"] if users else ""

    @property
    def last_user_text(self) -> str:
        content = self._last_user()
        if isinstance(content, str):
            return content
        return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        content = self._last_user()
        return (
            []
            if isinstance(content, str)
            else [b for b in content if b.get("type") == "tool_result"]
        )

    @property
    def retry_count(self) -> int:
        return int(self.headers.get("x-stainless-retry-count", 0))


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a daemon killed mid-call) is part of the tests, not an error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class _Scripted:
    reply: Reply | Responder
    when: Callable[[RecordedRequest], bool] | None
    times: int


@dataclass
class FakeMessagesAPI:
    """The fake server. Use as a context manager, or call :meth:`start` and :meth:`stop`."""

    host: str = "127.0.0.1"
    port: int = 0
    validate: bool = True
    default: Reply | Responder = field(
        default_factory=lambda: error(500, "api_error", "fake: script exhausted")
    )

    def __post_init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script: list[_Scripted] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server((self.host, self.port), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self.url = f"http://{self.host}:{self._server.server_address[1]}"

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> FakeMessagesAPI:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-messages-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- scripting ---------------------------------------------------------------------------

    def add(
        self,
        reply: Reply | Responder,
        *,
        when: Callable[[RecordedRequest], bool] | None = None,
        times: int = 1,
    ) -> None:
        with self._lock:
            self._script.append(_Scripted(reply, when, times))

    def pending(self) -> int:
        with self._lock:
            return sum(item.times for item in self._script)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.requests) >= count:
                    return list(self.requests)
            time.sleep(0.005)
        raise AssertionError(
            f"expected {count} request(s) within {timeout}s, got {len(self.requests)}"
        )

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if request.invalid_reason:
                return error(400, "invalid_request_error", request.invalid_reason)
            chosen: Reply | Responder = self.default
            for item in self._script:
                if item.when is None or item.when(request):
                    item.times -= 1
                    if item.times <= 0:
                        self._script.remove(item)
                    chosen = item.reply
                    break
        return chosen(request) if callable(chosen) else chosen

    # -- answering ---------------------------------------------------------------------------

    def _wait(self, reply: Reply) -> None:
        if reply.delay:
            self._stopping.wait(reply.delay)
        if reply.hold is not None:
            while not reply.hold.wait(0.05) and not self._stopping.is_set():
                pass


def _handler(fake: FakeMessagesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            headers = {k.lower(): v for k, v in self.headers.items()}
            path = self.path.split("?")[0]
            if not (headers.get("x-api-key") or headers.get("authorization")):
                return self._send(error(401, "authentication_error", "missing API key"))
            if path.endswith("/v1/messages/count_tokens"):
                return self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            if not path.endswith("/v1/messages"):
                return self._send(error(404, "not_found_error", f"no route {path}"))
            request = RecordedRequest(
                path,
                headers,
                body,
                time.monotonic(),
                invalid_history(body.get("messages")) if fake.validate else None,
            )
            reply = fake._next_reply(request)
            fake._wait(reply)
            self._send(reply, request)

        def _send(self, reply: Reply, request: RecordedRequest | None = None) -> None:
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if reply.status != 200 or reply.body is not None:
                return self._json(reply.status, reply.body or {}, dict(reply.headers))
            model = request.model if request else "claude-test"
            if request is not None and request.stream:
                return self._stream(reply, model)
            self._json(200, _message(reply, model))

        def _json(
            self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", "req_fake")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, reply: Reply, model: str) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            for event in _events(reply, model):
                data = json.dumps(event)
                self.wfile.write(f"event: {event['type']}\ndata: {data}\n\n".encode())
                self.wfile.flush()

    return Handler


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **(reply.usage or {}),
    }


def _message(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(reply.content),
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def _events(reply: Reply, model: str) -> list[dict[str, Any]]:
    message = _message(reply, model)
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**message["usage"], "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(reply.content):
        if block["type"] == "text":
            events += [
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": block["text"]},
                },
            ]
        else:
            events += [
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                },
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"]),
                    },
                },
            ]
        if reply.stream_error:
            return [
                *events,
                {
                    "type": "error",
                    "error": {"type": reply.stream_error, "message": "fake stream error"},
                },
            ]
        events.append({"type": "content_block_stop", "index": index})
    if reply.truncate:
        return events
    return [
        *events,
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
        {"type": "message_stop"},
    ]


def invalid_history(messages: Any) -> str | None:
    """Why ``messages`` breaks the Messages API's history rules, or None if it does not."""
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: the first message must use the user role"
    for index, (before, after) in enumerate(itertools.pairwise([None, *messages])):
        if before is not None and before.get("role") == after.get("role"):
            return f"messages.{index}: roles must alternate between user and assistant"
        content = after.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not blocks:
            return f"messages.{index}: content must not be empty"
        uses = [
            b["id"]
            for b in (before or {}).get("content", [])
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        results = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
        if after.get("role") == "user" and sorted(uses) != sorted(results):
            return (
                f"messages.{index}: tool_use ids {uses} need exactly matching tool_result "
                f"blocks (got {results})"
            )
        kinds = [b.get("type") for b in blocks]
        if "text" in kinds and "tool_result" in kinds[kinds.index("text") :]:
            return f"messages.{index}: tool_result blocks must come before text"
        for block in blocks:
            if block.get("type") == "text" and not str(block.get("text", "")).strip():
                return f"messages.{index}: text content blocks must be non-empty"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m smarthole.testing", description="A fake Messages API that echoes."
    )
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    fake = FakeMessagesAPI(port=args.port, default=echo()).start()
    print(fake.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
