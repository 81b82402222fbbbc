"""The turn lifecycle: file work and hooks after the commit, and a stop between the two."""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

import smarthole.daemon  # noqa: F401  (imports every module a turn runs through)
from smarthole import fsutil
from smarthole.plugins import Plugins
from smarthole.testing import error, server_error, text
from tests.helpers import db, drop, finals, run_once, write_config

FILE_WORK = ("move_durably", "atomic_write", "fsync_dir", "write_new_files")


class OpenTransactions:
    """Which threads are inside a transaction now, as SQLite sees the statements run."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def trace(self, statement: str) -> None:
        if statement == "BEGIN IMMEDIATE":
            self.threads.add(threading.get_ident())
        elif statement in ("COMMIT", "ROLLBACK"):
            self.threads.discard(threading.get_ident())

    def here(self) -> bool:
        return threading.get_ident() in self.threads


@pytest.fixture
def watched(monkeypatch) -> tuple[list[str], list[str]]:
    """Every file move or fsync and every hook call from here on: ``(done, violations)``, the
    violations being those made while their thread had a transaction open."""
    transactions = OpenTransactions()
    done: list[str] = []
    violations: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(transactions.trace)
        return connection

    def checked(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def check(*args: Any, **kwargs: Any) -> Any:
            what = f"{name} {args[1] if name == 'hook' else args[0]}"
            done.append(what)
            if transactions.here():
                violations.append(what)
            return call(*args, **kwargs)

        return check

    monkeypatch.setattr(sqlite3, "connect", traced)
    for name in FILE_WORK:  # wherever a module took the function by name
        original = getattr(fsutil, name)
        for module in [m for k, m in sys.modules.items() if k.startswith("smarthole")]:
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, checked(name, original))
    monkeypatch.setattr(Plugins, "collect", checked("hook", Plugins.collect))
    return done, violations


def test_file_moves_fsyncs_and_hooks_never_run_inside_a_transaction(home, fake, env, watched):
    """A turn that completes, one deferred then given up, and one that cannot start: each
    transition commits first, then moves files and calls hooks, never under the store's lock."""
    write_config(home, retry={"max_attempts": 2, "base_delay_seconds": 0.0})
    fake.add(text("Hello."), when=lambda r: "fine" in r.last_user_text)
    fake.add(server_error(503), when=lambda r: "doomed" in r.last_user_text, times=2)
    drop(home, "fine", "m1", channel="a")
    drop(home, "doomed", "m2", channel="b")
    drop(home, "lost", "m3", conversation="doesnotexist")
    run_once(home, env)
    done, violations = watched
    assert not violations, "inside a transaction:\n" + "\n".join(violations)
    statuses = dict(db(home).execute("SELECT message_id, status FROM inbox").fetchall())
    assert statuses == {"m1": "done", "m2": "dead", "m3": "dead"}
    assert {f["in_reply_to"]: f["kind"] for f in finals(home)} == {"m1": "response", "m2": "error"}
    assert len(list((home / "failed").glob("*.error.txt"))) == 2
    for expected in ("move_durably", "hook deliver", "hook message_stored", "hook turn_failed"):
        assert any(what.startswith(expected) for what in done), expected


def test_a_dead_message_whose_file_a_fault_kept_claimed_is_set_aside_at_the_next_start(
    home, fake, env, monkeypatch
):
    """The commit that makes a message dead comes first; its file moves after. A fault (or a
    stop) in between leaves the claim recorded, and the next start finishes the move."""
    from smarthole.daemon import runner
    from smarthole.pipeline import inbox

    monkeypatch.setattr(runner, "WORKER_BACKOFF_SECONDS", 0.0)
    move = inbox.move_to_failed

    def refuse(*args: Any) -> Any:
        raise OSError(5, "Input/output error")

    write_config(home, retry={"max_attempts": 1})
    fake.add(error(400, "invalid_request_error", "nope"))
    drop(home, "hello", "m1")
    monkeypatch.setattr(inbox, "move_to_failed", refuse)
    run_once(home, env)
    row = db(home).execute("SELECT status, claimed_path, failed_path FROM inbox").fetchone()
    assert row["status"] == "dead" and row["failed_path"] is None
    assert list((home / ".smarthole" / "claimed").iterdir()) == [
        home / ".smarthole" / "claimed" / row["claimed_path"].rsplit("/", 1)[-1]
    ]

    monkeypatch.setattr(inbox, "move_to_failed", move)
    run_once(home, env)
    row = db(home).execute("SELECT status, claimed_path, failed_path FROM inbox").fetchone()
    assert row["status"] == "dead" and row["claimed_path"] is None
    assert not list((home / ".smarthole" / "claimed").iterdir())
    note = (home / "failed" / (row["failed_path"].rsplit("/", 1)[-1] + ".error.txt")).read_text()
    assert note.startswith("HTTP 400") and "attempts: 1" in note
    assert len(fake.requests) == 1, "a dead message is not tried again"
