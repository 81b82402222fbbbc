"""What the running daemon says about itself, for ``smarthole status`` in another process.

``.smarthole/daemon.json`` holds the daemon's pid, version, start time, whether it is ready,
its one-line status, when it last reloaded and what a reload read but only a restart applies
(``restart_needed``, kept until one), the plugins and agents it has loaded (``plugins``,
``agents``: see ``loaded``), the last error it logged with its time, and when the file was
written (``written_at``). It is rewritten atomically (temp file, fsync, rename) by the main
loop when something changed, and every ``REWRITE_SECONDS`` even when nothing did, never from
inside a logging call. It is only believed while the home's lock is held by the same pid:
a daemon killed with -9 leaves the file behind, and the lock tells that it is stale. A file
older than ``STALE_AFTER_SECONDS`` under a running daemon says it may be unable to write (a
full disk, a read-only mount), and ``status`` says so.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..formats import Clock, iso
from ..fsutil import atomic_write
from ..home import Home, holder

if TYPE_CHECKING:
    from ..app import App

STATE_FILE = "daemon.json"
# The main loop flushes about every second; a write at least this often keeps ``written_at``
# telling that the daemon can still write, at the cost of a small file now and then.
REWRITE_SECONDS = 15.0
# A few rewrites missed: the loop may be held up (a commit waiting out SQLite's 30s busy
# timeout) without anything being wrong with the disk.
STALE_AFTER_SECONDS = 4 * REWRITE_SECONDS


def state_path(home: Home) -> Path:
    return home.state / STATE_FILE


def read_state(home: Home, pid: int | None) -> dict[str, Any] | None:
    """The state the daemon holding the lock (``pid``) last wrote, or None."""
    if not pid:
        return None
    try:
        data = json.loads(state_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("pid") != pid:
        return None  # left behind by an earlier daemon
    return data


def recorded(home: Home, key: str) -> list[dict[str, Any]] | None:
    """What the daemon running for ``home`` recorded as loaded under ``key`` (``plugins``,
    ``agents``); None when no daemon runs, or it recorded none (one older than this)."""
    state = read_state(home, holder(home.lock_file))
    value = state.get(key) if state else None
    if not isinstance(value, list):
        return None
    return [e for e in value if isinstance(e, dict) and isinstance(e.get("name"), str)]


class DaemonStatus(StrEnum):
    """``status`` in daemon.json: one of these, or the status line while the daemon serves."""

    STARTING = "starting"
    STOPPING = "stopping"  # its loop no longer runs
    STOPPED = "stopped"


class DaemonState:
    """The daemon's own record of itself; :meth:`flush` writes it when it changed."""

    def __init__(self, home: Home, clock: Clock) -> None:
        self.path = state_path(home)
        self.clock = clock
        self._lock = threading.Lock()
        self._dirty = True
        self._written: float | None = None  # monotonic() of the last write that succeeded
        self.data: dict[str, Any] = {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": iso(clock()),
            "ready": False,
            "status": DaemonStatus.STARTING,
            "reloaded_at": None,
            "restart_needed": [],  # what a reload read but only a restart applies
            "last_error": None,
            "last_error_at": None,
        }

    def update(self, **fields: Any) -> None:
        with self._lock:
            for key, value in fields.items():
                if self.data.get(key) != value:
                    self.data[key] = value
                    self._dirty = True

    def record_loaded(self, app: App) -> None:
        """Record the plugins and agents ``app`` has loaded (at start, after a reload)."""
        from .loaded import agent_listing, plugin_listing

        self.update(plugins=plugin_listing(app), agents=agent_listing(app))

    def error(self, message: str, at: datetime) -> None:
        self.update(last_error=message, last_error_at=iso(at))

    def flush(self) -> None:
        """Write the file if anything changed, or if it is due for a rewrite; a failure is
        retried on the next flush."""
        with self._lock:
            due = self._written is None or monotonic() - self._written >= REWRITE_SECONDS
            if not (self._dirty or due):
                return
            # The wall clock, not the daemon's (a test's may be fake): another process
            # compares it with its own.
            written = {**self.data, "written_at": iso(datetime.now(UTC))}
            data = json.dumps(written, indent=1).encode()
            self._dirty = False
        try:
            atomic_write(self.path, data)
        except OSError:
            with self._lock:
                self._dirty = True
        else:
            with self._lock:
                self._written = monotonic()


class ErrorRecorder(logging.Handler):
    """Keeps the last error the daemon logged, for ``status``; it does no I/O of its own."""

    def __init__(self, state: DaemonState) -> None:
        super().__init__(level=logging.ERROR)
        self.state = state

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage().splitlines()[0] if record.getMessage() else ""
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                message = f"{message}: {type(exc).__name__}: {exc}"
            self.state.error(message, self.state.clock())
        except Exception:  # a logging handler must never raise into the code that logged
            self.handleError(record)
