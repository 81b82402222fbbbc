"""Cutting a model call short from another thread: a turn asked to stop (``/stop``, or a newer
message in an ``interrupt`` channel) must not wait for a long reply to finish streaming.

The turn's thread reads the stream; the thread that halts the turn calls :meth:`StreamCut.cut`,
which hangs up the call's connection (``ModelClient`` says how), so the blocked read returns at
once and the client raises ``TurnHalted``. A cut asked for while no call streams waits for the
next one, which is hung up as soon as it starts (the turn stops before it, at its safe point).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class StreamCut:
    """One turn's way to cut its model call in flight; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._hang_up: Callable[[], None] | None = None

    @property
    def reason(self) -> str | None:
        """Why the call was cut (the turn's halt reason), or None."""
        with self._lock:
            return self._reason

    def cut(self, reason: str) -> None:
        """Cut the call streaming now, or the next one; the first reason stays."""
        with self._lock:
            if self._reason is None:
                self._reason = reason
            hang_up = self._hang_up
        if hang_up is not None:
            hang_up()

    @contextlib.contextmanager
    def watching(self, hang_up: Callable[[], None]) -> Iterator[None]:
        """While the block runs, :meth:`cut` calls ``hang_up`` (at once if it was cut before)."""
        with self._lock:
            self._hang_up = hang_up
            cut_before = self._reason is not None
        try:
            if cut_before:
                hang_up()
            yield
        finally:
            with self._lock:
                self._hang_up = None
