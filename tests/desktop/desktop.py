"""A stand-in for the SmartHole desktop: a real ``websockets`` server on 127.0.0.1.

It accepts (or refuses) registrations, routes messages to the connected client, and records
every frame the client sends. ``observe`` runs in the server's thread the moment a frame
arrives, so a test can look at the world as it was when, say, an ack came in.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import wait_for, write_config


@dataclass
class Received:
    frame: dict[str, Any]
    connection: int
    seen: Any = None  # what ``observe`` returned when it arrived
    at: float = 0.0  # time.monotonic() when it arrived


class FakeDesktop:
    """``ping_interval`` and ``ping_timeout`` are the server's keepalive (websockets' own,
    20 s each by default): with a tight one, a client that stops reading is dropped."""

    def __init__(self, *, ping_interval: float = 20, ping_timeout: float = 20) -> None:
        self.ping_interval, self.ping_timeout = ping_interval, ping_timeout
        self.received: list[Received] = []
        self.sent_at: dict[str, float] = {}  # message id -> time.monotonic() of its last send
        self.refusal: dict[str, Any] | None = None  # {"code", "message"}: refuse registrations
        self.observe: Callable[[dict[str, Any]], Any] | None = None
        self.close_codes: list[int | None] = []
        self.port = 0
        self._connections = itertools.count(1)
        self._current: Any = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    # -- running ---------------------------------------------------------------------------

    def start(self) -> FakeDesktop:
        """Listen (on the same port again after :meth:`stop`)."""
        started = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            from websockets.asyncio.server import serve

            self._server = await serve(
                self._handle,
                "127.0.0.1",
                self.port,
                ping_interval=self.ping_interval,
                ping_timeout=self.ping_timeout,
            )
            self.port = self._server.sockets[0].getsockname()[1]
            started.set()
            await self._server.wait_closed()

        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(serve(),), name="fake-desktop"
        )
        self._thread.start()
        assert started.wait(10), "the fake desktop did not start"
        return self

    def stop(self) -> None:
        """Go away: close every connection (1001) and stop listening."""
        if self._loop is None or self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._server.close)
        self._thread.join(10)
        self._loop.close()
        self._loop = self._thread = None
        self._current = None

    async def _handle(self, ws: Any) -> None:
        number = next(self._connections)
        self._current = ws
        try:
            async for raw in ws:
                frame = json.loads(raw)
                seen = self.observe(frame) if self.observe else None
                with self._lock:
                    self.received.append(Received(frame, number, seen, time.monotonic()))
                if frame.get("type") == "registration":
                    await ws.send(json.dumps(self._registration_response()))
        finally:
            self.close_codes.append(ws.close_code)

    def _registration_response(self) -> dict[str, Any]:
        if self.refusal is not None:
            return {"type": "registration_response", "payload": {"success": False, **self.refusal}}
        payload = {"success": True, "clientId": str(uuid.uuid4()), "message": "Registered"}
        return {"type": "registration_response", "payload": payload}

    # -- talking to the client --------------------------------------------------------------

    def send_raw(self, data: str | bytes) -> None:
        """Send one frame, as is, to the connected client."""
        ws, loop = self._current, self._loop
        assert ws is not None and loop is not None, "no client is connected"
        asyncio.run_coroutine_threadsafe(ws.send(data), loop).result(10)

    def route(self, text: str, *, message_id: str | None = None, **metadata: Any) -> str:
        """Route a message to the client, as the desktop does; returns its id."""
        message_id = message_id or str(uuid.uuid4())
        self.sent_at[message_id] = time.monotonic()
        self.send_raw(message_frame(message_id, text, **metadata))
        return message_id

    def burst(self, messages: list[tuple[str, str]], timeout: float = 60) -> None:
        """Send ``(id, text)`` messages back to back, as fast as the socket takes them."""
        ws, loop = self._current, self._loop
        assert ws is not None and loop is not None, "no client is connected"

        async def send_all() -> None:
            for message_id, text in messages:
                self.sent_at[message_id] = time.monotonic()
                await ws.send(message_frame(message_id, text))

        asyncio.run_coroutine_threadsafe(send_all(), loop).result(timeout)

    # -- what the client sent ---------------------------------------------------------------

    def frames(self, type: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.received if type is None or r.frame.get("type") == type]

    def responses(self, message_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        """The ``response`` payloads about one message, in order (``kind``: ack, reject...)."""
        return [
            r.frame["payload"]
            for r in self.frames("response")
            if r.frame["payload"]["messageId"] == message_id
            and (kind is None or r.frame["payload"]["type"] == kind)
        ]

    def registrations(self) -> list[Received]:
        return self.frames("registration")

    def wait_registered(self, count: int = 1, timeout: float = 20) -> None:
        wait_for(lambda: len(self.registrations()) >= count, timeout, f"{count} registration(s)")
        wait_for(lambda: self._current is not None, timeout, "the connection")

    def wait_response(
        self, message_id: str, kind: str, count: int = 1, timeout: float = 20
    ) -> list[dict[str, Any]]:
        return wait_for(
            lambda: (found := self.responses(message_id, kind)) and len(found) >= count and found,
            timeout,
            f"{count} {kind} response(s) to {message_id}",
        )


def message_frame(message_id: str, text: str, **metadata: Any) -> str:
    """A routed ``message`` frame, as the desktop sends it."""
    payload = {
        "id": message_id,
        "text": text,
        "timestamp": "2026-11-22T09:00:00.000Z",
        "metadata": {"inputMethod": "voice", "directRouted": False, **metadata},
    }
    return json.dumps({"type": "message", "payload": payload})


def enable_bridge(home: Path, desktop: FakeDesktop, **settings: Any) -> None:
    """A config.toml with the bridge on, pointed at ``desktop``; ``sections`` adds tables."""
    extra = settings.pop("sections", {})
    write_config(home, desktop={"enabled": True, "url": desktop.url, **settings}, **extra)
