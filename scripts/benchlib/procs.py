"""Processes and folders: spawning the daemon and the baseline children, reading their CPU
and memory from /proc, and waiting on a folder without adding a delay of our own."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from smarthole.formats import dumps_toml
from smarthole.home import Home

CHILDREN = Path(__file__).resolve().parent / "children.py"
FAKE_CHILD = Path(__file__).resolve().parent / "fake_child.py"
IN_CREATE, IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO = 0x100, 0x200, 0x40, 0x80
IN_Q_OVERFLOW = 0x4000
_EVENT = struct.Struct("iIII")


class Timeout(Exception):
    """A wait passed its deadline."""


def poll_until(check: Callable[[], Any], timeout: float, interval: float = 0.002) -> Any:
    """Call ``check`` until it returns something truthy; ``Timeout`` after ``timeout`` s."""
    deadline = time.perf_counter() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.perf_counter() > deadline:
            raise Timeout(f"nothing after {timeout:.1f}s")
        time.sleep(interval)


class FolderEvents:
    """Raw inotify on one folder (Linux), read without watchdog's move-pairing delay.

    The benchmark must not measure its own latency: watchdog holds every IN_MOVED_FROM for
    0.5 s, so "claimed" (the file left inbox/) is read here straight from the kernel.
    """

    def __init__(self, folder: Path, mask: int) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(folder), mask) < 0:
            raise OSError(ctypes.get_errno(), f"inotify on {folder}")

    def read(self, timeout: float) -> list[tuple[int, str, float]]:
        """Events (mask, name, perf_counter when read) arriving within ``timeout`` seconds."""
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not ready:
            return []
        now = time.perf_counter()
        data = os.read(self.fd, 1 << 16)
        events, offset = [], 0
        while offset < len(data):
            _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
            events.append((mask, os.fsdecode(raw.rstrip(b"\0")), now))
            offset += _EVENT.size + length
        return events

    def close(self) -> None:
        os.close(self.fd)


def is_reply(name: str) -> bool:
    return name.endswith(".md") and not name.startswith(".")


class Replies:
    """Counts final replies as they appear in outbox/, from inotify: waiting costs no CPU.

    (Scanning an outbox of 10,000 files every few ms would take a core from the daemon.)
    """

    def __init__(self, home: Home) -> None:
        self.folder = home.outbox
        self._events = FolderEvents(self.folder, IN_MOVED_TO | IN_CREATE)
        self.names = self._scan()

    def _scan(self) -> set[str]:
        with os.scandir(self.folder) as entries:
            return {e.name for e in entries if is_reply(e.name)}

    def wait_for(self, count: int, timeout: float) -> int:
        """Wait until ``count`` replies exist; ``Timeout`` after ``timeout`` seconds."""
        deadline = time.perf_counter() + timeout
        while len(self.names) < count:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise Timeout(f"{len(self.names)} of {count} replies after {timeout:.0f}s")
            for mask, name, _at in self._events.read(min(remaining, 1.0)):
                if mask & IN_Q_OVERFLOW:
                    self.names = self._scan()
                elif is_reply(name):
                    self.names.add(name)
        return len(self.names)

    def close(self) -> None:
        self._events.close()


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` (from /proc/<pid>/stat), in seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def context_switches(pid: int) -> int:
    """Voluntary and involuntary context switches of the live threads of ``pid`` (from
    /proc/<pid>/task/*/status): a thread blocking on a lock, the GIL or I/O counts one each
    time it sleeps. The counts of threads that have ended are gone with them."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile
        for line in text.splitlines():
            if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                total += int(line.split()[1])
    return total


def rss_mib(pid: int) -> float:
    """VmRSS of ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for {pid}")


def make_home(root: Path, **settings: Any) -> Home:
    """A fresh home whose config turns titles off (no extra model calls) plus ``settings``."""
    home = Home(root)
    home.ensure()
    config = {"titles": {"enabled": False}, **settings}
    home.config_file.write_text(dumps_toml(config))
    (home.root / ".staging").mkdir(exist_ok=True)
    return home


def daemon_env(url: str) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": url}


@contextlib.contextmanager
def daemon(home: Home, url: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``python -m smarthole run`` subprocess; stopped with SIGTERM on the way out."""
    log = (home.root / "daemon.log").open("ab")  # a file, not a pipe nobody drains
    command = [sys.executable, "-m", "smarthole", "run", "--home", str(home.root)]
    process = subprocess.Popen(command, env=daemon_env(url), stdout=log, stderr=log)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def is_ready(home: Home, process: subprocess.Popen[bytes]) -> bool:
    """daemon.json says ``ready: true`` for this process (smarthole/daemon/state.py)."""
    if process.poll() is not None:
        raise RuntimeError(f"the daemon exited: {(home.root / 'daemon.log').read_text()[-2000:]}")
    try:
        data = json.loads((home.state / "daemon.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(data.get("ready")) and data.get("pid") == process.pid


def wait_ready(home: Home, process: subprocess.Popen[bytes], timeout: float = 60) -> float:
    """Wait for readiness; returns perf_counter when it was seen."""
    poll_until(lambda: is_ready(home, process), timeout)
    return time.perf_counter()


def replies(home: Home) -> int:
    """Final replies written so far (outbox/*.md), by a scan: for small outboxes."""
    with os.scandir(home.outbox) as entries:
        return sum(1 for e in entries if is_reply(e.name))


def child(*args: str) -> subprocess.Popen[str]:
    """One of the baseline programs in children.py, talking JSON lines over stdout."""
    return subprocess.Popen(
        [sys.executable, str(CHILDREN), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # watchdog complains about its stop; the JSON says enough
        text=True,
    )


@contextlib.contextmanager
def fake_server_process() -> Iterator[str]:
    """The fake Messages API in a child process (fake_child.py); yields its URL."""
    process = subprocess.Popen(
        [sys.executable, str(FAKE_CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield str(json.loads(process.stdout.readline())["url"])
    finally:
        if process.stdin:
            process.stdin.close()
        process.wait(timeout=30)


def child_result(*args: str, timeout: float = 600) -> dict[str, Any]:
    """Run a child to its end and return the JSON it printed last."""
    done = subprocess.run(
        [sys.executable, str(CHILDREN), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
