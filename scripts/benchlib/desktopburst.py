"""Row 8: a burst from the SmartHole desktop, acked by a real daemon's bridge.

A fake desktop (a ``websockets`` server in a thread of this process, with the library's
default keepalive, as the desktop has) registers the daemon's bridge, then sends ``count``
routed messages back to back, as fast as the socket takes them, and times each ``ack`` from
the moment its message was handed to the socket. The daemon answers the messages meanwhile
(the fake Messages API runs in a process of its own, as for the pickup row), so the bridge
stores the burst while the daemon claims and answers it. The desktop waits 30 s for an ack.

``scripts/torture.py`` sends a third of its messages through the same fake desktop, in
bursts (``Bursts``), sending again after each kill what was never answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .procs import Timeout, daemon, fake_server_process, make_home, poll_until
from .report import Row, percentile

ACK_DEADLINE = 30.0  # what the desktop waits for an ack, in seconds
SETTLE = 60.0  # after the last send, how long the burst may take to be acked in full


@dataclass
class Seen:
    """What the fake desktop saw, stamped with ``time.perf_counter()``."""

    registrations: int = 0
    closes: list[str] = field(default_factory=list)
    sent: dict[str, float] = field(default_factory=dict)  # the last send of each message
    acked: dict[str, float] = field(default_factory=dict)  # the first ack of each
    acks: int = 0  # every ack frame, a repeated one too
    rejected: dict[str, str] = field(default_factory=dict)  # message id -> reason
    notified: Counter[str] = field(default_factory=Counter)  # notifications per message id


class BurstDesktop:
    """The desktop's side: registers a client and routes messages to it in bursts.

    ``burst`` sends on demand. At each registration, ``on_register`` may give messages to
    send at once, and with ``resend`` every message sent but never answered (acked or
    rejected) goes again first, as a desktop that retries does after a lost connection.
    """

    def __init__(
        self,
        *,
        resend: bool = False,
        on_register: Callable[[], list[tuple[str, str]]] | None = None,
    ) -> None:
        self.seen = Seen()
        self.texts: dict[str, str] = {}
        self.resend = resend
        self.on_register = on_register
        self.registered = threading.Event()
        self.port = 0
        self._client: Any = None
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._sending: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._serve, name="fake-desktop")
        self._started = threading.Event()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def __enter__(self) -> BurstDesktop:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the fake desktop did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread.is_alive():
            self._thread.join(30)
        self._loop.close()

    def unanswered(self) -> list[str]:
        """Messages sent and neither acked nor rejected, in the order first sent."""
        seen = self.seen
        return [i for i in self.texts if i not in seen.acked and i not in seen.rejected]

    def _serve(self) -> None:
        self._loop.run_until_complete(self._run())

    async def _run(self) -> None:
        from websockets.asyncio.server import serve

        self._stop = asyncio.Event()
        async with serve(self._handle, "127.0.0.1", 0) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._started.set()
            await self._stop.wait()

    async def _handle(self, ws: Any) -> None:
        try:
            async for raw in ws:
                if self._received(json.loads(raw)):
                    await self._registered(ws)
        except Exception as exc:  # the keepalive's close is what the row reports
            self.seen.closes.append(f"{type(exc).__name__}: {exc}")
        else:
            self.seen.closes.append(f"closed ({ws.close_code})")
        finally:
            if ws is self._client:
                self._client = None

    async def _registered(self, ws: Any) -> None:
        self._client = ws
        await ws.send(_registered())
        due = [(i, self.texts[i]) for i in self.unanswered()] if self.resend else []
        due += self.on_register() if self.on_register else []
        if due:  # from a task of its own: the acks are read meanwhile
            task = asyncio.create_task(self._send_all(ws, due))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
        self.registered.set()

    def _received(self, frame: dict[str, Any]) -> bool:
        """Count a frame from the client; True for a registration (to be answered)."""
        now, seen = time.perf_counter(), self.seen
        if frame.get("type") == "registration":
            seen.registrations += 1
            return True
        payload = frame.get("payload", {})
        kind, message_id = payload.get("type"), payload.get("messageId")
        if kind == "ack":
            seen.acks += 1
            seen.acked.setdefault(message_id, now)
        elif kind == "reject":
            seen.rejected[message_id] = payload.get("payload", {}).get("reason", "")
        elif kind == "notification":
            seen.notified[message_id] += 1
        return False

    async def _send_all(self, ws: Any, messages: list[tuple[str, str]]) -> None:
        """Send messages back to back, as fast as the socket takes them, until it closes."""
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            for message_id, text in messages:
                self.texts.setdefault(message_id, text)
                self.seen.sent[message_id] = time.perf_counter()
                await ws.send(_message(message_id, text))

    def burst(self, count: int) -> None:
        """Send ``count`` new messages back to back; returns once the socket took the last."""
        messages = [
            (f"burst-{n:05d}", f"burst message {n}: add item {n} to my list") for n in range(count)
        ]
        sending = self._send_all(self._client, messages)
        asyncio.run_coroutine_threadsafe(sending, self._loop).result(300)


class Bursts:
    """An ``on_register`` for :class:`BurstDesktop`: ``messages`` in ``count`` bursts, one
    at each registration; all that is left once settling (called in the desktop's thread,
    ``settle`` from another).
    """

    def __init__(self, messages: list[tuple[str, str]], count: int) -> None:
        size = max(1, -(-len(messages) // count))
        self.waiting = [messages[n : n + size] for n in range(0, len(messages), size)]
        self.settling = False

    def __call__(self) -> list[tuple[str, str]]:
        if self.settling:
            burst = [m for chunk in self.waiting for m in chunk]
            self.waiting = []
            return burst
        return self.waiting.pop(0) if self.waiting else []

    def settle(self) -> None:
        self.settling = True


def _registered() -> str:
    payload = {"success": True, "clientId": "bench", "message": "Registered"}
    return json.dumps({"type": "registration_response", "payload": payload})


def _message(message_id: str, text: str) -> str:
    payload = {
        "id": message_id,
        "text": text,
        "timestamp": "2026-11-22T09:00:00.000Z",
        "metadata": {"inputMethod": "voice", "directRouted": False},
    }
    return json.dumps({"type": "message", "payload": payload})


def measure_burst(root: Path, count: int) -> dict[str, Any]:
    """Run the burst against a real daemon; the figures of the row, in seconds."""
    with fake_server_process() as api, BurstDesktop() as desktop:
        home = make_home(root / "burst", desktop={"enabled": True, "url": desktop.url})
        with daemon(home, api):
            if not desktop.registered.wait(60):
                raise RuntimeError("the daemon's bridge did not register")
            started = time.perf_counter()
            desktop.burst(count)
            sent = time.perf_counter() - started
            seen = desktop.seen
            with contextlib.suppress(Timeout):  # the figures say how many were missed
                poll_until(lambda: len(seen.acked) >= count, SETTLE, interval=0.05)
    latencies = [seen.acked[i] - at for i, at in seen.sent.items() if i in seen.acked]
    last = max(seen.acked.values(), default=started)
    return {
        "messages": count,
        "acked": len(seen.acked),
        "ack_frames": seen.acks,
        "rejected": len(seen.rejected),
        "reconnects": max(0, seen.registrations - 1),
        "closes_before_stop": [c for c in seen.closes if "1001" not in c],
        "send_seconds": sent,
        "acks_per_second": len(seen.acked) / (last - started) if last > started else 0.0,
        "p50": percentile(latencies, 0.5) if latencies else None,
        "p99": percentile(latencies, 0.99) if latencies else None,
        "max": max(latencies, default=None),
        "over_deadline": sum(1 for latency in latencies if latency > ACK_DEADLINE),
        "notifications": sum(seen.notified.values()),
    }


def burst_rows(root: Path, count: int) -> list[Row]:
    """Row 8: every message acked once, in time, on one connection; and how fast."""
    found = measure_burst(root, count)
    ms = 1000
    scaled = {k: (found[k] * ms if found[k] is not None else None) for k in ("p50", "p99")}
    name = f"desktop burst of {count:,}"
    return [
        Row(
            f"{name}: acked",
            found["acked"] / count,
            "%",
            goal="100%",
            min_value=1.0,
            detail=found,
        ),
        Row(f"{name}: ack p50", scaled["p50"], "ms"),
        Row(f"{name}: ack p99", scaled["p99"], "ms"),
        Row(
            f"{name}: ack max",
            found["max"],
            "s",
            goal=f"<= {ACK_DEADLINE:.0f} s",
            max_value=ACK_DEADLINE,
        ),
        Row(f"{name}: reconnects", float(found["reconnects"]), "", goal="0", max_value=0.0),
        Row(f"{name}: acks/s", found["acks_per_second"], "/s"),
    ]
