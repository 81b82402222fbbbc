"""One follower of the events table for the whole server, fanned out to every open page.

A thread polls ``EventLog.since(last)`` every ``interval`` seconds (a primary-key range read,
nothing when nothing happened) and hands each batch to the server's event loop, which puts it
in every subscriber's queue. Twenty open pages cost one query per interval, not twenty.

A subscriber resumes from the id it last saw with :func:`follow`: it subscribes first, then
reads what it missed from the store, then takes the live batches, skipping any id it already
sent. Events are committed in id order (SQLite has one writer at a time), so every event is in
the store read or in a later batch: no gap, and no duplicate.

The same thread looks every second at whether a daemon holds the home, and tells the pages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..db.events import Event, EventLog

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.03
DAEMON_CHECK_SECONDS = 1.0
BATCH = 500
QUEUE_LIMIT = 1000  # batches a slow subscriber may fall behind before it is dropped
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True)
class DaemonState:
    """Whether a daemon runs for the home (sent to pages; not an event of the store)."""

    running: bool


Item = list[Event] | DaemonState | None  # None: the stream ends (shutdown, or fell behind)


class EventFollower:
    """Polls the events table in a thread it owns; :meth:`start` and :meth:`close` it."""

    def __init__(
        self,
        events: EventLog,
        *,
        daemon_running: Callable[[], bool] = lambda: False,
        interval: float = POLL_SECONDS,
    ) -> None:
        self.events = events
        self.daemon_running = daemon_running
        self.interval = interval
        self.last_id = 0
        self.daemon: DaemonState = DaemonState(False)
        self._queues: set[asyncio.Queue[Item]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.closed = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.last_id = self.events.latest_id()
        self.daemon = DaemonState(self.daemon_running())
        self._thread = threading.Thread(target=self._run, name="smarthole-web-follower")
        self._thread.daemon = True  # joined by close(); never outlives the server's owner
        self._thread.start()

    def close(self) -> None:
        """Stop polling and end every stream (call from the event loop or any thread)."""
        if self.closed:
            return
        self.closed = True
        self._stop.set()
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop has just stopped
                self._loop.call_soon_threadsafe(self._publish, None)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    # -- subscribers (on the event loop) ----------------------------------------------------

    def subscribe(self) -> asyncio.Queue[Item]:
        queue: asyncio.Queue[Item] = asyncio.Queue(QUEUE_LIMIT)
        if self.closed:
            queue.put_nowait(None)
        self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Item]) -> None:
        self._queues.discard(queue)

    @property
    def subscribers(self) -> int:
        return len(self._queues)

    def _publish(self, item: Item) -> None:
        for queue in list(self._queues):
            try:
                queue.put_nowait(item)
            except asyncio.QueueFull:  # it fell behind: end its stream; it resumes from its id
                self._queues.discard(queue)
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
                queue.put_nowait(None)

    # -- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        next_check = time.monotonic() + DAEMON_CHECK_SECONDS
        while not self._stop.wait(self.interval):
            try:
                batch = self.events.since(self.last_id, limit=BATCH)
                if batch:
                    self.last_id = batch[-1].id or self.last_id
                    self._send(batch)
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + DAEMON_CHECK_SECONDS
                    state = DaemonState(self.daemon_running())
                    if state != self.daemon:
                        self.daemon = state
                        self._send(state)
            except Exception:  # a locked or busy store: log, and look again next time
                logger.exception("web: could not read new events; trying again")

    def _send(self, item: Item) -> None:
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed under us: we stop too
                self._loop.call_soon_threadsafe(self._publish, item)


async def follow(
    follower: EventFollower,
    read_since: Callable[[int, int], Any],
    after: int,
) -> AsyncIterator[Event | DaemonState | None]:
    """Every event after ``after``, then each new one as it is committed; a ``DaemonState``
    first and whenever it changes; ``None`` every ``KEEPALIVE_SECONDS`` of quiet.

    ``read_since(after, limit)`` reads the store (awaitable: it runs off the event loop).
    """
    queue = follower.subscribe()
    try:
        yield follower.daemon
        last = after
        while True:
            missed: list[Event] = await read_since(last, BATCH)
            for event in missed:
                yield event
                last = event.id or last
            if len(missed) < BATCH:
                break
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield None
                continue
            if item is None:
                return
            if isinstance(item, DaemonState):
                yield item
                continue
            for event in item:
                if event.id is not None and event.id > last:
                    yield event
                    last = event.id
    finally:
        follower.unsubscribe(queue)
