"""The fake server: scripted replies over HTTP, as JSON or as a server-sent event stream."""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .cache import PromptCache
from .replies import RecordedRequest, Reply, Responder, error, fresh_id
from .streams import events, message, sse
from .validation import invalid_history, invalid_tools

logger = logging.getLogger(__name__)

_SSE_HEADERS = {
    "content-type": "text/event-stream", "cache-control": "no-cache", "transfer-encoding": "chunked"
}  # fmt: skip


@dataclass
class _Scripted:
    reply: Reply | Responder
    when: Callable[[RecordedRequest], bool] | None
    times: int


class FakeMessagesAPI:
    """The fake server: a context manager, or call :meth:`start` and :meth:`stop`.

    It binds its port at once, so :attr:`url` is known before :meth:`start`. ``validate``
    (also an attribute) refuses requests whose history breaks the API's rules, see
    :func:`invalid_history`; ``default`` answers when no scripted reply matches.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        validate: bool = True,
        default: Reply | Responder | None = None,
    ) -> None:
        self.validate = validate
        self.default: Reply | Responder = error(500, "api_error", "fake: script exhausted")
        if default is not None:
            self.default = default
        self.cache = PromptCache()  # realistic usage for replies that script none
        self._script: list[_Scripted] = []
        self._requests: list[RecordedRequest] = []
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self.stalls = 0  # streams that began to stall (``stalled``)
        self.hung_up = 0  # of those, the streams the client hung up on while they stalled
        self._server = _Server((host, port), _handler(self))
        self._thread: threading.Thread | None = None
        self.url = f"http://{host}:{self._server.server_address[1]}"

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> FakeMessagesAPI:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.01},
                name=f"fake-messages-api-{self._server.server_address[1]}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release held replies, hang up on clients and join every thread."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        for thread in self._server.hang_up():
            thread.join()
        self._server.server_close()

    def add(
        self,
        reply: Reply | Responder,
        *,
        when: Callable[[RecordedRequest], bool] | None = None,
        times: int = 1,
        agent: str | None = None,
        entry_agent: bool = False,
    ) -> None:
        """Script ``reply`` for the next ``times`` requests (that match ``when``, if given).

        With agent teams, ``agent="researcher"`` scripts a reply for that team agent's requests
        only (matched on its system prompt), and ``entry_agent=True`` one for the agent the
        person talks to; other requests pass such a reply by.
        """
        if times < 1:
            raise ValueError(f"times must be at least 1, not {times}")
        if agent is not None and entry_agent:
            raise ValueError("give agent= or entry_agent=True, not both")
        if agent is not None or entry_agent:
            when = _for_agent(agent, when)
        with self._changed:
            self._script.append(_Scripted(reply, when, times))

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every ``/v1/messages`` request so far, in arrival order (a copy)."""
        with self._changed:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Wait until ``count`` requests have arrived; AssertionError after ``timeout``."""
        with self._changed:
            if self._changed.wait_for(lambda: len(self._requests) >= count, timeout):
                return list(self._requests)
            arrived = len(self._requests)
        raise AssertionError(f"expected {count} request(s) within {timeout}s, {arrived} arrived")

    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._changed:
            return sum(item.times for item in self._script)

    def reset(self) -> None:
        """Forget the script and the recorded requests."""
        with self._changed:
            self._script.clear()
            self._requests.clear()

    def _answer(self, request: RecordedRequest) -> Reply:
        """Record ``request`` and choose its reply: the 400 if invalid, the script, the default."""
        try:
            with self._changed:
                self._requests.append(request)
                self._changed.notify_all()
                if request.invalid_reason:
                    return error(400, "invalid_request_error", request.invalid_reason)
                item = next((i for i in self._script if not i.when or i.when(request)), None)
                if item is not None:
                    item.times -= 1
                    if item.times == 0:
                        self._script.remove(item)
                chosen = item.reply if item is not None else self.default
            return chosen if isinstance(chosen, Reply) else chosen(request)
        except Exception as exc:
            logger.exception("fake Messages API: a when= predicate or a responder failed")
            return error(500, "api_error", f"fake: scripting failed: {exc!r}")

    def _wait(self, reply: Reply, *, streaming: bool = False) -> None:
        if reply.delay:
            self._stopping.wait(reply.delay)
        held = reply.hold if streaming or reply.stall is None else reply.stall
        while held is not None and not held.wait(0.02):
            if self._stopping.is_set():
                return

    def _stall(self, reply: Reply, connection: socket.socket) -> bool:
        """Wait while ``reply``'s stream stalls; False if the client hung up meanwhile."""
        assert reply.stall is not None
        with self._changed:
            self.stalls += 1
            self._changed.notify_all()
        while not reply.stall.wait(0.02) and not self._stopping.is_set():
            readable, _, _ = select.select([connection], [], [], 0)
            if readable and not connection.recv(1, socket.MSG_PEEK):  # the end of its data
                with self._changed:
                    self.hung_up += 1
                    self._changed.notify_all()
                return False
        return True

    def wait_for_stall(self, count: int = 1, timeout: float = 10.0) -> None:
        """Wait until ``count`` streams have begun to stall (their first delta sent)."""
        self._wait_for_count("stalls", count, timeout)

    def wait_for_hang_up(self, count: int = 1, timeout: float = 10.0) -> None:
        """Wait until clients have hung up on ``count`` stalled streams."""
        self._wait_for_count("hung_up", count, timeout)

    def _wait_for_count(self, name: str, count: int, timeout: float) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: getattr(self, name) >= count, timeout):
                found = getattr(self, name)
                raise AssertionError(f"expected {count} {name} within {timeout}s, {found} came")


def _for_agent(
    agent: str | None, when: Callable[[RecordedRequest], bool] | None
) -> Callable[[RecordedRequest], bool]:
    """``when``, narrowed to the requests of one agent (None: the entry agent)."""

    def matches(request: RecordedRequest) -> bool:
        return request.agent == agent and (when is None or when(request))

    return matches


class _Server(ThreadingHTTPServer):
    """Owns its connection threads, so stopping can hang up on idle clients and join them."""

    daemon_threads = True
    block_on_close = False  # the stdlib joins only non-daemon threads; stop() joins these

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.guard = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.threads: list[threading.Thread] = []

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"fake-messages-api-{self.server_address[1]}-connection",
            daemon=True,
        )
        with self.guard:
            self.sockets.add(request)
            self.threads = [*(t for t in self.threads if t.is_alive()), thread]
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self.guard:
            self.sockets.discard(request)
        super().shutdown_request(request)

    def hang_up(self) -> list[threading.Thread]:
        """End reads on every connection (idle ones close, replies being sent finish)."""
        with self.guard:
            for connection in self.sockets:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RD)
            return list(self.threads)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a daemon killed mid-call) is part of the tests, not an error.
        logger.debug("fake Messages API: connection from %s failed", client_address, exc_info=True)


def _handler(fake: FakeMessagesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # A stream is many small writes: with Nagle's algorithm each one after the first
        # waits for the client's delayed ACK, and every call took 40 ms longer than its work.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._route(b"")

        def do_POST(self) -> None:
            self._route(self.rfile.read(int(self.headers.get("content-length") or 0)))

        def _route(self, raw: bytes) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            path = self.path.split("?")[0]
            bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
            if not (headers.get("x-api-key") or bearer):
                return self._send(
                    error(401, "authentication_error", "x-api-key header is required")
                )
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if self.command != "POST" or not path.endswith(("/v1/messages", "/count_tokens")):
                return self._send(error(404, "not_found_error", f"Not found: {path}"))
            if not isinstance(body, dict):
                return self._send(error(400, "invalid_request_error", "body: invalid JSON"))
            if path.endswith("/v1/messages/count_tokens"):
                # About four characters per token, the API's own rule of thumb.
                return self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            reason = (
                invalid_history(body.get("messages")) or invalid_tools(body.get("tools"), headers)
                if fake.validate
                else None
            )
            request = RecordedRequest(path, headers, body, invalid_reason=reason)
            reply = fake._answer(request)
            if reply.usage is None and reply.status == 200 and reply.body is None:
                reply = replace(reply, usage=fake.cache.usage(body, list(reply.content)))
            fake._wait(reply, streaming=request.stream)
            self._send(reply, request)

        def _send(self, reply: Reply, request: RecordedRequest | None = None) -> None:
            streaming = request is not None and request.stream
            if reply.drop and not (streaming and reply.content):
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif reply.status != 200 or reply.body is not None:
                self._json(reply.status, reply.body or {}, dict(reply.headers))
            elif request is None:
                raise ValueError(f"a message reply needs a request: {reply}")
            elif streaming:
                self._stream(reply, request)
            elif reply.garble:
                self._head(200, {"content-type": "application/json", "content-length": "12"})
                self.wfile.write(b'{"id": "msg_')
            elif reply.stream_error:
                status = 529 if reply.stream_error == "overloaded_error" else 500
                self._send(error(status, reply.stream_error, "fake stream error"))
            else:
                self._json(200, message(reply, request))

        def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            request_id = fresh_id("req")
            if body.get("type") == "error":
                body = {**body, "request_id": request_id}
            payload = json.dumps(body).encode()
            length = {"content-type": "application/json", "content-length": str(len(payload))}
            self._head(status, {**length, "request-id": request_id, **(headers or {})})
            self.wfile.write(payload)

        def _head(self, status: int, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()

        def _stream(self, reply: Reply, request: RecordedRequest) -> None:
            self._head(200, {**_SSE_HEADERS, "request-id": fresh_id("req")})
            stalls = reply.stall is not None
            for event in events(reply, request):
                data = sse(event)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                if stalls and isinstance(event, dict) and event["type"] == "content_block_delta":
                    self.wfile.flush()
                    stalls = False
                    if not fake._stall(reply, self.connection):
                        self.close_connection = True
                        return
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                self.wfile.write(b"0\r\n\r\n")

    return Handler
