"""The ``event`` hook, fed from the events table: every event, whoever wrote it, in order.

Events are written by the daemon's workers and its desktop bridge, and by CLI commands in
other processes (``rename``, ``new``, ``tasks abort``), also while the daemon is down. So the
hook is not called where an event is written: the daemon follows the table from a cursor
stored beside it (:class:`~smarthole.db.cursors.Cursors`), woken at once by its own events and
looking every :data:`POLL_SECONDS` for other processes'. Each event is delivered, then the
cursor is committed past it: only a crash between the two delivers that one event again, and
``event.id`` tells a plugin it has seen it.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..db.cursors import Cursors
    from ..db.events import Event, EventLog
    from ..plugins import Plugins

logger = logging.getLogger(__name__)

CURSOR = "event_hook"
POLL_SECONDS = 0.25  # how soon an event written by another process reaches the hook
BATCH = 256
STOP_TIMEOUT = 10.0


class EventHook:
    """Delivers stored events to the plugins' ``event`` hook, oldest first, each once."""

    def __init__(
        self,
        log: EventLog,
        cursors: Cursors,
        plugins: Plugins,
        *,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.log = log
        self.cursors = cursors
        self.plugins = plugins
        self.poll_seconds = poll_seconds
        self._position: int | None = None
        self._deliver_lock = threading.Lock()  # the thread and the last drain take turns
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listening = False

    def start(self) -> None:
        """Go on from the stored cursor, in a thread. A home that never had one starts at its
        newest event, so an upgraded home does not replay its whole history to the plugins;
        with no plugin listening, there is nothing to follow: the cursor keeps up at the start
        and the end of the run, and no message pays for a thread reading its events."""
        self._listening = self.plugins.listens("event")
        position = self.cursors.get(CURSOR)
        if position is None or not self._listening:
            position = self.log.latest_id()
            self.cursors.set(CURSOR, position, durable=False)
        self._position = position
        if self._listening:
            self._thread = threading.Thread(target=self._run, name="smarthole-events", daemon=True)
            self._thread.start()

    def wake(self, _event: Event | None = None) -> None:
        """An event was committed in this process: deliver it now (thread-safe)."""
        if self._listening:
            self._wake.set()

    def stop(self) -> None:
        """Stop following, after delivering every event committed so far."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT)
            if self._thread.is_alive():
                logger.warning("events: the hook thread did not stop in %.0fs", STOP_TIMEOUT)
                return
        if self._position is not None:
            try:
                self.deliver_pending()
            except Exception:  # the shutdown goes on; the events wait for the next start
                logger.exception("events: could not deliver the last events to the event hook")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.deliver_pending()
            except Exception:  # the store failed: the events wait in the table for the next look
                logger.exception("events: could not deliver events to the event hook")
            self._wake.wait(self.poll_seconds)
            self._wake.clear()

    def deliver_pending(self) -> int:
        """Deliver every event after the cursor; returns how many reached the hook."""
        delivered = 0
        with self._deliver_lock:
            assert self._position is not None, "start() first"
            if not self._listening:
                latest = self.log.latest_id()
                self.cursors.set(CURSOR, latest, durable=False)  # nobody to tell: keep up
                self._position = latest
                return 0
            while batch := self.log.since(self._position, limit=BATCH):
                for event in batch:
                    self.plugins.notify("event", event=event)
                    self._advance(event)
                    delivered += 1
        return delivered

    def _advance(self, event: Event) -> None:
        assert event.id is not None
        self.cursors.set(CURSOR, event.id)  # durable: a plugin's act is not undone either
        self._position = event.id
