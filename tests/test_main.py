"""The ``smarthole`` command's own exit: after ``run``, no interpreter teardown to wait for."""

from __future__ import annotations

import atexit
import logging
import threading

import pytest

from smarthole import __main__ as entry


class Left(Exception):
    pass


@pytest.fixture
def exits(monkeypatch) -> list[str]:
    """What leaving did, in order; nothing of this test process is really ended or closed."""
    done: list[str] = []

    def leave(code: int) -> None:
        done.append(f"exit {code}")
        raise Left

    monkeypatch.setattr("os._exit", leave)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: done.append("atexit"))
    monkeypatch.setattr(logging, "shutdown", lambda: done.append("logging"))
    return done


def test_leaving_runs_the_exit_functions_and_exits_with_the_code(exits):
    with pytest.raises(Left):
        entry._leave(3)
    assert exits == ["atexit", "logging", "exit 3"]


def test_a_thread_still_running_gets_the_ordinary_exit(exits):
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        entry._leave(0)  # returns: the interpreter's exit joins the thread
    finally:
        release.set()
        worker.join()
    assert exits == []
