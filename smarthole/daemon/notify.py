"""Telling the service manager how the daemon is: the sd_notify datagram protocol.

systemd (``Type=notify``) hands the daemon ``$NOTIFY_SOCKET``, a Unix datagram socket given as
a path or as an abstract name starting with ``@``. Each datagram is newline-separated
``KEY=value`` lines: ``READY=1``, ``STATUS=...``, ``WATCHDOG=1``, ``STOPPING=1``,
``RELOADING=1`` with ``MONOTONIC_USEC=``. With ``WatchdogSec=`` it also sets
``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``); the daemon must then send ``WATCHDOG=1`` more often
than that, and it does so from the main loop, so a stuck loop stops petting and is restarted.

The protocol is a few lines of the standard library, so there is no dependency on libsystemd.
Without ``$NOTIFY_SOCKET`` nothing is sent. A failed send is logged once and never stops the
daemon: being supervised is a convenience, not a condition of running.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping

logger = logging.getLogger(__name__)

NOTIFY_SOCKET_ENV = "NOTIFY_SOCKET"
WATCHDOG_USEC_ENV = "WATCHDOG_USEC"
WATCHDOG_PID_ENV = "WATCHDOG_PID"


def socket_address(value: str) -> str | bytes | None:
    """The address to send to: a path, or an abstract name (``@name`` -> ``\\0name``)."""
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None  # vsock and other forms are not supported; stay silent rather than guess


def watchdog_interval(env: Mapping[str, str], pid: int) -> float | None:
    """Seconds between two ``WATCHDOG=1``: half of ``$WATCHDOG_USEC``, or None if not asked.

    ``$WATCHDOG_PID``, when set, names the process the watchdog is meant for; another process
    (a child that inherited the environment) must not pet it.
    """
    try:
        usec = int(env.get(WATCHDOG_USEC_ENV, ""))
    except ValueError:
        return None
    watched = env.get(WATCHDOG_PID_ENV)
    if usec <= 0 or (watched and watched != str(pid)):
        return None
    return usec / 1_000_000 / 2


class Notifier:
    """Sends sd_notify messages; does nothing when not started by a service manager."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.address = socket_address(env.get(NOTIFY_SOCKET_ENV, ""))
        self.interval = watchdog_interval(env, os.getpid()) if self.address else None
        self._next_pet = 0.0
        self._status = ""
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()  # the main loop and the signal watcher both send
        self._warned = False

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *lines: str) -> bool:
        """Send one datagram of ``lines``; True if it was sent."""
        if self.address is None:
            return False
        data = "\n".join(lines).encode()
        with self._lock:
            try:
                if self._socket is None:
                    self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    self._socket.setblocking(False)  # a full queue must not stall the loop
                self._socket.sendto(data, self.address)
            except OSError as exc:
                if not self._warned:
                    logger.warning("cannot notify the service manager: %s", exc)
                    self._warned = True
                return False
        return True

    def ready(self, status: str) -> None:
        """Start-up (or a reload) is done: recovery finished and the inbox is watched."""
        self._status = status
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        """A one-line state for ``systemctl status``; sent only when it changes."""
        if status != self._status:
            self._status = status
            self.send(f"STATUS={status}")

    def reloading(self) -> None:
        # MONOTONIC_USEC lets systemd tell this reload from an earlier one (CLOCK_MONOTONIC).
        self.send("RELOADING=1", f"MONOTONIC_USEC={time.monotonic_ns() // 1000}")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")

    def pet(self, now: float | None = None) -> float | None:
        """Send ``WATCHDOG=1`` if it is due; returns when the next one is due (monotonic)."""
        if self.interval is None:
            return None
        now = time.monotonic() if now is None else now
        if now >= self._next_pet:
            self.send("WATCHDOG=1")
            self._next_pet = now + self.interval
        return self._next_pet

    def close(self) -> None:
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None
