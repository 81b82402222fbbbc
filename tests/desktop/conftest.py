"""Fixtures of the desktop bridge's tests: a fake desktop, and the bridge in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from smarthole.app import App
from smarthole.backoff import Backoff
from smarthole.builtins.desktop import connection
from smarthole.home import Home

from .desktop import FakeDesktop, enable_bridge


@pytest.fixture
def desktop(request: pytest.FixtureRequest) -> Iterator[FakeDesktop]:
    """The fake desktop; parametrize it indirectly with FakeDesktop's keyword arguments."""
    server = FakeDesktop(**getattr(request, "param", {})).start()
    yield server
    server.stop()


@pytest.fixture
def quick_reconnect(monkeypatch: pytest.MonkeyPatch) -> Backoff:
    """Reconnect waits of 50 ms doubling to 400 ms, not 1 s to 30 s: a test that waits for the
    bridge to come back waits for its behaviour, not its timer (test_bridge checks the real
    schedule). Works for the bridge in this process: a daemon in a thread, not a subprocess."""
    quick = Backoff(base=50, cap=400, jitter=0.1, jitter_past_cap=True)
    monkeypatch.setattr(connection, "RECONNECT_MS", quick)
    return quick


@pytest.fixture
def bridge(home: Path, desktop: FakeDesktop) -> Iterator[Callable[..., App]]:
    """Start the bridge plugin in this process (no daemon: inbox files stay where they land)."""
    started: list[App] = []

    def start(**settings: Any) -> App:
        enable_bridge(home, desktop, **settings)
        app = App.load(Home(home))
        started.append(app)
        app.plugins.call_strict("startup", app=app)
        return app

    yield start
    for app in started:
        app.plugins.notify("shutdown", app=app)
        app.close()
