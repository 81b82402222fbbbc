"""Signals for the daemon and the CLI: one context manager owns the handlers.

Modelled on uvicorn's ``capture_signals``. While the block runs, a handler only records the
signal and writes its number to a pipe; a watcher thread reads the pipe and calls back outside
signal context, where logging and taking locks are safe (a handler that set a
``threading.Event`` could deadlock on the lock the interrupted code holds). On exit the
original handlers are restored and the watcher is joined. A second stop signal (SIGINT or
SIGTERM) exits at once with status 130, even if the program is stuck.

This module is the only importer of ``signal``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any

from ..errors import ExitCode

logger = logging.getLogger(__name__)

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
DAEMON_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
INTERRUPT_SIGNALS = (signal.SIGINT,)
FORCED_EXIT_LINE = b"smarthole: forced exit\n"

Signals = signal.Signals
Callback = Callable[[Signals], None]


class CapturedSignals:
    """What a :func:`capture_signals` block has received, and a way to wait for a stop."""

    def __init__(self, on_signal: Callback | None, *, force_exit: bool) -> None:
        self.on_signal = on_signal
        self.force_exit = force_exit
        self.stop = threading.Event()
        self.received: list[Signals] = []
        self._stops = 0
        self._read_fd = -1
        self._write_fd = -1

    @property
    def interrupted(self) -> bool:
        """True once SIGINT (Ctrl-C) has been received."""
        return signal.SIGINT in self.received

    def exit_code(self, default: int = ExitCode.OK) -> int:
        """``ExitCode.INTERRUPTED`` (130) after Ctrl-C, else ``default``."""
        return ExitCode.INTERRUPTED if self.interrupted else default

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The installed handler: record, wake the watcher, nothing else."""
        if signum in STOP_SIGNALS:
            self._stops += 1
            if self._stops > 1 and self.force_exit:
                os.write(2, FORCED_EXIT_LINE)
                os._exit(ExitCode.INTERRUPTED)
        with contextlib.suppress(OSError):  # a full pipe already holds a wake-up
            os.write(self._write_fd, bytes([signum]))

    def watch(self) -> None:
        """The watcher thread: turn each recorded signal into a callback, until the pipe closes."""
        while data := os.read(self._read_fd, 64):
            for number in data:
                self.deliver(Signals(number))

    def deliver(self, received: Signals) -> None:
        self.received.append(received)
        if received in STOP_SIGNALS:
            self.stop.set()
        if self.on_signal is not None:
            try:
                self.on_signal(received)
            except Exception:
                logger.exception("handling %s failed", received.name)


@contextlib.contextmanager
def capture_signals(
    on_signal: Callback | None = None,
    *,
    signals: Iterable[int] = DAEMON_SIGNALS,
    force_exit: bool = True,
    enabled: bool = True,
) -> Iterator[CapturedSignals]:
    """Own ``signals`` for the length of the block; restore the original handlers after.

    Off the main thread (where Python cannot install handlers) or with ``enabled`` false,
    nothing is installed and the block runs as is.
    """
    captured = CapturedSignals(on_signal, force_exit=force_exit)
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield captured
        return
    captured._read_fd, captured._write_fd = os.pipe()
    os.set_blocking(captured._write_fd, False)
    watcher = threading.Thread(target=captured.watch, name="smarthole-signals", daemon=True)
    watcher.start()
    original: dict[int, Any] = {}
    try:
        for signum in signals:
            original[signum] = signal.signal(signum, captured.handle)
        yield captured
    finally:
        for signum, handler in original.items():
            signal.signal(signum, handler)
        os.close(captured._write_fd)  # the watcher reads what is left, then end of file
        watcher.join()
        os.close(captured._read_fd)


def send_reload(pid: int) -> None:
    """Ask the daemon ``pid`` to reload its configuration (SIGHUP), for ``smarthole reload``."""
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError as exc:
        from ..errors import DaemonError

        raise DaemonError(f"the daemon (pid {pid}) is gone; nothing to reload") from exc
