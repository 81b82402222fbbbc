"""The Schedules page's reads and actions: the list, and pause, resume and run now.

An action writes the store as ``smarthole schedule pause|resume|run`` does, and wakes a running
daemon the same way (``pipeline.watch.wake_daemon``): it looks at once and sends a run's message.
"""

from __future__ import annotations

from typing import Any

from ..db.schedule_records import describe
from ..db.schedules import Schedules
from ..db.states import ScheduleState
from ..errors import LookupFailed

ACTIONS = ("pause", "resume", "run")


class Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def schedule_rows(schedules: Schedules) -> list[dict[str, Any]]:
    last = schedules.last_fires()
    return [describe(s, last.get(s.id)) for s in schedules.all()]


def act(schedules: Schedules, key: str, action: str) -> str:
    """Pause, resume or run one schedule; what to tell the person. ``Refused`` otherwise."""
    if action not in ACTIONS:
        raise Refused(404, f"no action {action[:20]!r}; use pause, resume or run")
    try:
        schedule = schedules.find(key)
    except LookupFailed as exc:
        raise Refused(404, str(exc)) from exc
    now = schedules.store.clock()
    label = schedule.label
    if action == "pause":
        schedules.set_state(schedule.id, ScheduleState.PAUSED, now)
        return f"Schedule {label} is paused."
    if action == "resume":
        if schedule.state is not ScheduleState.PAUSED:
            raise Refused(409, f"schedule {label} is not paused ({schedule.state})")
        schedules.resume(schedule, now)
        return f"Schedule {label} is active again."
    fire = schedules.take_now(schedule, now)
    return f"Schedule {label} fires now (message {fire.message_id})."
