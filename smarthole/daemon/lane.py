"""The fast lane: commands that run at once while their channel is busy, and the busy policy's
look at what arrived behind a running turn.

A channel's messages run in order, one at a time, so a ``/stop`` or ``/status`` queued behind
a running turn (or an ``/approve`` behind the message whose call waits for it) would wait for
it. After each claim the main loop calls :meth:`FastLane.look`: an immediate command
(``MessageCommand.immediate``) waiting behind a busy or waiting channel's head goes to the
lane's own thread, which runs it at once (the runner takes each command once, whoever gets
there first); and a channel whose policy is ``interrupt`` asks its running turn to stop.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..db.ledger import LedgerEntry
    from .runtime import Runtime

logger = logging.getLogger(__name__)

LOOK_BEHIND = 200  # the queued messages of a busy channel looked at for a command


class FastLane:
    """Runs immediate commands of busy channels on a thread of its own."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._jobs: queue.Queue[LedgerEntry | None] = queue.Queue()
        self._taken: set[str] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="smarthole-commands", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout)

    def look(self, busy: Iterable[str], now: datetime) -> None:
        """Hand the immediate commands waiting behind a ``busy`` channel's running turn, or
        behind a message that waits (for an approval, a retry), to the lane; ask a turn to stop
        where a newer message interrupts it."""
        runtime = self.runtime
        busy = set(busy)
        for head in runtime.ledger.channel_heads():
            if head.channel in busy or head.waits(now):
                self._take_commands(head)
        runtime.arrivals.look()

    def _take_commands(self, head: LedgerEntry) -> None:
        """The immediate commands queued behind ``head``, each to the lane once."""
        runtime = self.runtime
        waiting = runtime.ledger.followers(
            head.channel, after=head.id, limit=LOOK_BEHIND, slashed=True
        )
        for entry in waiting:
            invocation = runtime.message_commands.parse(entry.message.text)
            if invocation is None or not invocation.command.immediate:
                continue
            with self._lock:
                if entry.id in self._taken:
                    continue
                self._taken.add(entry.id)
            self._jobs.put(entry)

    def _work(self) -> None:
        runner = self.runtime.command_runner
        entry = self._jobs.get()
        while entry is not None:
            try:
                invocation = runner.invocation(entry)
                if invocation is not None:
                    runner.run(entry, invocation)
            except Exception:
                logger.exception("command of message %s failed", entry.id)
            finally:
                with self._lock:
                    self._taken.discard(entry.id)
            entry = self._jobs.get()
