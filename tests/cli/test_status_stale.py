"""`status` on a full disk: figures from the folders and the database, and a stale daemon.json.

The daemon reports itself through `.smarthole/daemon.json` and its stranded claims through
`.smarthole/stranded.json`; on a full disk neither can be rewritten, so `status` looks at the
claimed folder and the ledger itself and says when daemon.json has gone stale.
"""

from __future__ import annotations

import contextlib
import errno
import json
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smarthole import formats
from smarthole.cli import main
from smarthole.daemon import Daemon
from smarthole.daemon import state as state_module
from smarthole.daemon.state import STALE_AFTER_SECONDS, DaemonState
from smarthole.db.ledger import Ledger
from smarthole.db.store import Store
from smarthole.home import Home, HomeLock
from smarthole.pipeline import stranded
from smarthole.pipeline.inbox import claimed_name
from smarthole.pipeline.message import parse_message, render_message_file
from tests.helpers import drop, wait_for

LATER = timedelta(minutes=5)
STALE_WARNING = (
    "warning: .smarthole/daemon.json {when}; the daemon may be unable to write to the home "
    "(a full disk?) — figures below come from the folders and the database"
)


def status_json(home: Path, capsys) -> dict:
    main(["status", "--json", "--home", str(home)])
    return json.loads(capsys.readouterr().out)


def status_lines(home: Path, capsys, *extra: str) -> tuple[int, list[str]]:
    code = main(["status", "--home", str(home), *extra])
    return code, capsys.readouterr().out.splitlines()


def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def database_full(*args, **kwargs):
    raise sqlite3.OperationalError("database or disk is full")


@pytest.fixture
def fill_disk(monkeypatch: pytest.MonkeyPatch):
    """Make every write the daemon makes to report itself, and every claim's commit, fail."""

    def fill() -> None:
        monkeypatch.setattr(state_module, "atomic_write", disk_full)
        monkeypatch.setattr(stranded, "atomic_write", disk_full)
        monkeypatch.setattr(Ledger, "admit", database_full)

    return fill


@pytest.fixture
def time_passes(monkeypatch: pytest.MonkeyPatch):
    """Let ``LATER`` pass for `status` (whose clock is ``formats.utc_now``), not for the daemon."""

    def later() -> None:
        real = formats.utc_now
        monkeypatch.setattr(formats, "utc_now", lambda: real() + LATER)

    return later


@contextlib.contextmanager
def running(home: Path, env: dict[str, str]) -> Iterator[Daemon]:
    """A daemon in a thread of this process, started inside the test (after its faults)."""
    daemon = Daemon(Home(home), env=env, handle_signals=False)
    thread = threading.Thread(target=daemon.run, name="test-daemon")
    thread.start()
    try:
        assert daemon.ready.wait(10)
        yield daemon
    finally:
        daemon.request_stop()
        thread.join(30)
        assert not thread.is_alive()


def claimed_files(home: Path) -> list[Path]:
    return [p for p in Home(home).claimed.iterdir() if not p.name.startswith(".")]


@pytest.mark.parametrize("fills", ["while it runs", "before it starts"])
def test_on_a_full_disk_status_counts_stranded_claims_and_says_daemon_json_is_stale(
    home, env, fake, capsys, fill_disk, time_passes, fills
):
    if fills == "before it starts":
        fill_disk()
    with running(home, env):
        if fills == "while it runs":
            wait_for(lambda: status_json(home, capsys)["ready"], message="daemon.json")
            fill_disk()
        drop(home, "do not lose me", "m1")
        wait_for(lambda: claimed_files(home), message="the claim")
        time_passes()

        report = status_json(home, capsys)
        assert report["stranded_count"] == 1
        assert report["stranded"][0]["source_name"].endswith("-m1.md")
        state = report["state_file"]
        assert state["stale"] is True
        if fills == "while it runs":
            assert state["age_seconds"] >= LATER.total_seconds()
            assert state["written_at"] is not None
            when = "was last written 5 minutes ago"
        else:
            assert state["written_at"] is None and state["age_seconds"] is None
            when = f"has not been written by the running daemon (pid {report['pid']})"

        _, lines = status_lines(home, capsys)
        assert STALE_WARNING.format(when=when) in lines
        assert "stranded claims (retried automatically): 1" in lines

        code, problems = status_lines(home, capsys, "--check")
        assert code == 1
        assert "1 stranded claim(s) in .smarthole/claimed/" in problems
        assert any(line.startswith(".smarthole/daemon.json ") for line in problems)


def test_a_fresh_daemon_json_is_not_stale(home, live_daemon, capsys):
    report = wait_for(lambda: (r := status_json(home, capsys))["ready"] and r, message="ready")
    state = report["state_file"]
    assert state["stale"] is False
    assert 0 <= state["age_seconds"] < STALE_AFTER_SECONDS
    assert formats.parse_time(state["written_at"]) <= datetime.now(UTC)
    _, lines = status_lines(home, capsys)
    assert not any("daemon.json" in line for line in lines)


def test_the_daemon_rewrites_daemon_json_when_nothing_changed(home, monkeypatch):
    daemon_state = DaemonState(Home(home), formats.utc_now)
    daemon_state.flush()
    first = json.loads(state_module.state_path(Home(home)).read_text())["written_at"]
    daemon_state.flush()  # nothing changed, nothing due: the file is left alone
    assert json.loads(state_module.state_path(Home(home)).read_text())["written_at"] == first

    now = state_module.monotonic()
    monkeypatch.setattr(state_module, "monotonic", lambda: now + state_module.REWRITE_SECONDS)
    daemon_state.flush()
    assert json.loads(state_module.state_path(Home(home)).read_text())["written_at"] > first


def claim(home: Path, message_id: str) -> tuple[Path, bytes]:
    """A file as the daemon leaves it in the claimed folder."""
    data = render_message_file("hello", id=message_id)
    path = Home(home).claimed / claimed_name(f"{message_id}.md")
    path.write_bytes(data)
    return path, data


def test_claimed_files_are_stranded_as_recovery_would_find_them(home, capsys):
    unknown, _ = claim(home, "unknown")
    answered, answered_data = claim(home, "answered")
    owned, owned_data = claim(home, "owned")
    (Home(home).claimed / ".half-written.tmp").write_bytes(b"")
    store = Store.open(Home(home).database, clock=formats.utc_now)
    try:
        ledger = Ledger(store)
        for path, data in ((answered, answered_data), (owned, owned_data)):
            message = parse_message(path.name, data, modified=datetime.now(UTC))
            ledger.admit(message, channel="default", claimed_path=path)
        ledger.set_status("answered", "done")  # its claimed file left behind by a crash
    finally:
        store.close()

    report = status_json(home, capsys)
    assert sorted(item["file"] for item in report["stranded"]) == sorted(
        [str(unknown), str(answered)]
    )
    assert report["stranded_count"] == 2
    assert report["state_file"] is None  # no daemon: nothing to be stale


def test_a_claim_the_daemon_may_be_recording_is_not_stranded_yet(home, capsys, time_passes):
    lock = HomeLock(Home(home).lock_file)
    lock.acquire()  # a daemon is running: a claim it just made may not be committed yet
    try:
        claim(home, "just-claimed")
        assert status_json(home, capsys)["stranded_count"] == 0
        time_passes()
        assert status_json(home, capsys)["stranded_count"] == 1
    finally:
        lock.release()
