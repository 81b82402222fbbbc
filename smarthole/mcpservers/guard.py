"""Runs a stdio MCP server so that it dies with the daemon, however the daemon dies.

``python -I -S guard.py COMMAND [ARG...]``, on Linux. The SDK starts each server in a session
of its own and stops it by signalling that process group — but only when the daemon lives to
do so. After a ``kill -9``, the group would live on. So the server runs under this guard, the
group's leader: the kernel sends the guard SIGTERM when the thread that started it ends
(``PR_SET_PDEATHSIG``), and on SIGTERM, from there or from the SDK, the guard passes it to the
whole group, gives it :data:`GRACE` seconds, then SIGKILLs what is left (itself included).
Standard input and output are the server's own: the guard never reads or writes them.

Deliberately standalone (no import of smarthole, ``-S``): it starts in milliseconds.
"""

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
GRACE = 3.0


def main(argv: list[str]) -> int:
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the daemon died before the line above: go now
        return 1
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)
    signal.signal(signal.SIGTERM, lambda *_: end_group())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the daemon's
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    end_group()  # the server ended (its stdin closed, say): what it started goes with it
    return os.waitstatus_to_exitcode(status) & 0xFF


def end_group() -> None:
    """SIGTERM to the rest of the group; SIGKILL to the whole group if any is left after
    the grace (the guard goes with it then)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while others_in_group():
        with contextlib.suppress(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)  # reap the server, if it is the one left
        if time.monotonic() > deadline:
            os.killpg(0, signal.SIGKILL)
        time.sleep(0.05)


def others_in_group() -> bool:
    """Whether a live process other than the guard is in its process group."""
    me, group = os.getpid(), os.getpgrp()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
