"""``smarthole schedules`` and ``schedule add|rm|pause|resume|run``: the work behind them.

They write the store and wake a running daemon (``pipeline.watch.wake_daemon``): it looks at
the schedules at once and sends a ``schedule run`` fire then (or at its next start). Everything
shown is made safe for the terminal: a tool's schedule carries text the model wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..config.schedules import CHANNEL_PATTERN, MAX_TEXT, NAME_RULE, SCHEDULE_NAME
from ..db.schedule_records import describe, local_time
from ..db.schedules import Schedule, Schedules
from ..db.states import ScheduleState
from ..errors import UsageError
from ..schedules import TimingError
from .output import one_line, print_json, short


def print_schedules(schedules: Schedules, *, as_json: bool, now: datetime | None = None) -> None:
    last = schedules.last_fires()
    rows = [describe(s, last.get(s.id)) for s in schedules.all()]
    if as_json:
        print_json(rows)
        return
    if not rows:
        print("no schedules (add one to config.toml, or: smarthole schedule add)")
        return
    for row in rows:
        timing = next(f"{k} {row[k]}" for k in ("cron", "every", "at") if k in row)
        name = row["name"] or "-"
        when = row["next_local"] if row["state"] == ScheduleState.ACTIVE else row["state"]
        if when and row["next_at"] and now is not None:
            when = soon(datetime.fromisoformat(row["next_at"]), now) or when
        print(f"{row['id'][:8]}  {one_line(name)}  [{row['source']}]  {short(timing, 40)}")
        print(f"    next: {when or 'never'}   ({one_line(row['timezone'])})")
        run = row["last_run"]
        if run is not None:
            fired = local_time(datetime.fromisoformat(run["fired_at"]), row["timezone"])
            print(f"    last: {fired} - {run['outcome']}")
        print(f"    text: {short(row['text'], 70)}")


def soon(at: datetime, now: datetime) -> str | None:
    """A next run within the hour, to the second: ``10:42:07 (in 35 s)``; None if later."""
    seconds = (at - now).total_seconds()
    if seconds >= 3600:
        return None
    if seconds < 1:
        wait = "now"
    elif seconds < 90:
        wait = f"in {seconds:.0f} s"
    else:
        wait = f"in {seconds / 60:.0f} min"
    return f"{at.astimezone():%H:%M:%S} ({wait})"


def add_schedule(
    schedules: Schedules,
    *,
    name: str,
    kind: str,
    expression: str,
    timezone: str,
    text: str,
    channel: str,
    now: datetime,
    conversation: str = "new",
    find_conversation: Callable[[str], str] | None = None,
) -> Schedule:
    """A ``cli`` schedule; ``conversation`` is ``new``, ``same`` or a conversation that
    ``find_conversation`` resolves to its id (each run continues it)."""
    mode, conversation_id = conversation, None
    if conversation not in ("new", "same"):
        if find_conversation is None:
            raise UsageError("--conversation must be new, same or a conversation's id")
        mode, conversation_id = "same", find_conversation(conversation)
    if not SCHEDULE_NAME.fullmatch(name):
        raise UsageError(f"the name must be {NAME_RULE}")
    if not text.strip() or len(text) > MAX_TEXT:
        raise UsageError(f"the text must be 1 to {MAX_TEXT} characters")
    if not CHANNEL_PATTERN.fullmatch(channel):
        raise UsageError("--channel must be 1-64 letters, digits, or . @ + - _")
    try:
        return schedules.create(
            name=name,
            kind=kind,
            expression=expression,
            timezone=timezone,
            text=text,
            channel=channel,
            source="cli",
            now=now,
            conversation_mode=mode,
            conversation_id=conversation_id,
        )
    except TimingError as exc:
        raise UsageError(str(exc)) from exc


def change_schedule(schedules: Schedules, key: str, action: str, now: datetime) -> str:
    """``rm``, ``pause``, ``resume`` or ``run`` one schedule; returns what was done."""
    schedule = schedules.find(key)
    label = one_line(schedule.label)
    if action == "rm":
        if schedule.source == "config":
            raise UsageError(f"schedule {label} is in config.toml: remove it there (or pause it)")
        schedules.remove(schedule.id)
        return f"removed schedule {label}"
    if action == "pause":
        schedules.set_state(schedule.id, ScheduleState.PAUSED, now)
        return f"paused schedule {label}"
    if action == "resume":
        schedules.resume(schedule, now)
        return f"resumed schedule {label}"
    fire = schedules.take_now(schedule, now)
    return f"schedule {label} fires now as message {fire.message_id}"
