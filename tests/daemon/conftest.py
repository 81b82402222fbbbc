"""Fixtures of the daemon tests: the scheduler's turned clock and runtimes built over it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from smarthole.app import App
from smarthole.daemon.runtime import Runtime
from smarthole.home import Home
from tests.helpers import write_schedules

SCHEDULER_T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class TurnedClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> TurnedClock:
    return TurnedClock(SCHEDULER_T0)


@pytest.fixture
def runtime_for(home: Path, env: dict[str, str], clock: TurnedClock) -> Iterator[Any]:
    built: list[Runtime] = []

    def build(*schedules: dict[str, Any], **sections: Any) -> Runtime:
        write_schedules(home, *schedules, **sections)
        app = App.load(Home(home), env=env, clock=clock)
        runtime = Runtime.build(app, env=env)
        built.append(runtime)
        return runtime

    yield build
    for runtime in built:
        runtime.close()
        runtime.app.close()
