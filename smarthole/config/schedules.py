"""Schedules in ``config.toml``: the ``[[schedules]]`` array and the ``[scheduler]`` switch.

Each entry is checked on its own (its name, exactly one of ``cron``/``every``/``at``, the
expression and zone, the choices) and against the others (unique names) and the team (its
``agents``); every problem is one message naming the schedule, so a bad one is a
``ConfigError`` at start.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..schedules import MissedPolicy, Timing, TimingError
from .fields import build_settings, setting

SCHEDULE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
NAME_RULE = "a letter, then up to 63 letters, digits, - or _"
CONVERSATION_MODES = ("new", "same")
CHANNEL_PATTERN = re.compile(r"[\w.@+-]{1,64}")  # as an inbox file's channel
MAX_TEXT = 64 * 1024


@dataclass(frozen=True)
class SchedulerSettings:
    enabled: bool = setting(True, "Fire schedules; false pauses them all (none are lost).")


@dataclass(frozen=True)
class ScheduleSettings:
    """One ``[[schedules]]`` entry as written."""

    name: str = setting("", "Required: a letter first; letters, digits, - and _; unique.")
    cron: str = setting("", 'A cron expression, as "0 8 * * mon-fri".')
    every: str = setting("", 'Or an interval: a number and s, m, h or d, as "30m".')
    at: str = setting("", 'Or one local time, as "2026-12-01T09:00".')
    timezone: str = setting("", "The zone of cron and at; empty means the system's zone.")
    text: str = setting("", "Required: the message the schedule sends.")
    channel: str = setting("default", "The channel its messages run in.")
    conversation: str = setting("new", '"new": a fresh conversation each run; "same": one.')
    agents: list[str] = setting([], "Run it as a team task with these agents.")
    missed: str = setting("once", 'After downtime: "once" (one catch-up), "skip" or "all".')
    deliver: bool = setting(True, "false: the reply is stored but not delivered by hooks.")
    budget: float = setting(0.0, "Dollars one run may spend; 0 means no cap of its own.", minimum=0)

    @property
    def timing(self) -> Timing:
        kind = "cron" if self.cron else "every" if self.every else "at"
        return Timing.of(kind, self.cron or self.every or self.at, self.timezone)


def check_schedule(schedule: ScheduleSettings) -> list[str]:
    """What is wrong with one schedule, apart from its name (empty: nothing)."""
    problems = []
    given = [k for k in ("cron", "every", "at") if getattr(schedule, k)]
    if len(given) != 1:
        problems.append("give exactly one of cron, every or at")
    else:
        try:
            schedule.timing  # noqa: B018 (checks the expression and zone)
        except TimingError as exc:
            problems.append(str(exc))
    if not schedule.text.strip():
        problems.append("text is required")
    elif len(schedule.text) > MAX_TEXT:
        problems.append(f"text is over {MAX_TEXT} characters")
    if not CHANNEL_PATTERN.fullmatch(schedule.channel):
        problems.append("channel must be 1-64 letters, digits, or . @ + - _")
    if schedule.conversation not in CONVERSATION_MODES:
        problems.append('conversation must be "new" or "same"')
    if schedule.missed not in tuple(MissedPolicy):
        problems.append('missed must be "once", "skip" or "all"')
    return problems


def parse_schedules(value: Any, errors: list[str]) -> tuple[ScheduleSettings, ...]:
    """The ``[[schedules]]`` array of tables."""
    if not isinstance(value, list):
        errors.append(
            "schedules must be an array of tables ([[schedules]]); "
            "the scheduler's own settings are in [scheduler]"
        )
        return ()
    schedules: list[ScheduleSettings] = []
    seen: set[str] = set()
    for index, table in enumerate(value, 1):
        if not isinstance(table, dict):
            errors.append(f"[[schedules]] entry {index} must be a table")
            continue
        name = table.get("name")
        where = (
            f"[[schedules]] {name!r}"
            if isinstance(name, str) and name
            else f"[[schedules]] entry {index}"
        )
        before = len(errors)
        schedule = build_settings(ScheduleSettings, table, where, errors)
        if len(errors) > before:
            continue
        if not SCHEDULE_NAME.fullmatch(schedule.name):
            errors.append(f"{where} name must be {NAME_RULE}")
            continue
        if schedule.name.lower() in seen:
            errors.append(f"{where} name is used by another schedule")
            continue
        seen.add(schedule.name.lower())
        problems = check_schedule(schedule)
        errors.extend(f"{where} {problem}" for problem in problems)
        if not problems:
            schedules.append(schedule)
    return tuple(schedules)


def check_schedule_agents(
    schedules: Collection[ScheduleSettings], agents: Collection[str], errors: list[str]
) -> None:
    for schedule in schedules:
        unknown = [a for a in schedule.agents if a not in agents]
        if unknown:
            errors.append(
                f"[[schedules]] {schedule.name!r} agents: no agent named {', '.join(unknown)}"
            )
