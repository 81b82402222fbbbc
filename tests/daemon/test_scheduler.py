"""The scheduler in the daemon, on a clock the test turns: each slot fires once, DST, downtime.

No test sleeps until 08:00: the scheduler reads the app's clock, and each test moves it and
ticks. The daemon-level and crash tests are in ``test_schedule_crashes.py``.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from smarthole.config import load_config
from smarthole.db.schedules import Schedules, ScheduleSpec
from smarthole.db.states import ScheduleState
from smarthole.home import Home
from tests.daemon.conftest import SCHEDULER_T0
from tests.helpers import db

T0 = SCHEDULER_T0


def messages(home: Path) -> list[dict[str, Any]]:
    rows = db(home).execute("SELECT payload FROM inbox ORDER BY sort_at").fetchall()
    return [json.loads(row[0]) for row in rows]


def events(home: Path, kind: str) -> list[dict[str, Any]]:
    rows = db(home).execute("SELECT data FROM events WHERE type = ? ORDER BY id", (kind,))
    return [json.loads(row[0]) for row in rows]


def slots_fired(home: Path) -> list[str]:
    rows = db(home).execute("SELECT slot_at FROM schedule_fires ORDER BY slot_at").fetchall()
    return [row[0] for row in rows]


def every(minutes: int, **extra: Any) -> dict[str, Any]:
    return {"name": "tick", "every": f"{minutes}m", "text": "Check the notes.", **extra}


# -- once per slot ---------------------------------------------------------------------------


def test_a_slot_fires_once_into_the_ledger(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()  # first seen now: nothing is due
    assert messages(home) == []
    clock.advance(minutes=10, seconds=1)
    for _ in range(3):
        runtime.scheduler.tick()
    (message,) = messages(home)
    assert message["text"] == "Check the notes."
    assert message["new_conversation"] is True and message["channel"] == "default"
    assert message["metadata"]["schedule"] == "tick"
    (fired,) = events(home, "schedule_fired")
    assert fired["slot"] == "2026-03-01T12:10:00.000000Z"
    assert events(home, "schedule_missed") == []


def test_the_next_tick_is_due_at_the_next_slot(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    clock.advance(minutes=9, seconds=58)  # a look at least every 5 s, and one at the slot
    assert runtime.scheduler.tick() == T0 + timedelta(minutes=10)


def test_a_schedule_never_fires_for_slots_before_it_was_first_seen(home, runtime_for, clock):
    runtime = runtime_for(
        {"name": "past", "at": "2026-02-01T09:00", "timezone": "UTC", "text": "Too late."},
        {"name": "daily", "cron": "0 8 * * *", "timezone": "UTC", "text": "Good morning."},
    )
    runtime.scheduler.tick()
    assert messages(home) == [] and events(home, "schedule_missed") == []


def test_an_at_schedule_fires_once_then_is_done(home, runtime_for, clock):
    runtime = runtime_for(
        {"name": "bank", "at": "2026-03-06T09:00", "timezone": "Europe/Berlin", "text": "Call."}
    )
    runtime.scheduler.tick()
    clock.now = datetime(2026, 3, 6, 8, 0, 30, tzinfo=UTC)  # 09:00:30 in Berlin
    runtime.scheduler.tick()
    clock.advance(days=400)
    runtime.scheduler.tick()
    assert [m["text"] for m in messages(home)] == ["Call."]
    (schedule,) = Schedules(runtime.app.store).all()
    assert schedule.state is ScheduleState.DONE and schedule.next_at is None


# -- DST, in two zones ------------------------------------------------------------------------

DST_DAYS = [
    ("Europe/Berlin", datetime(2026, 3, 28), 2, "2026-03-29 03:00 CEST"),  # 02:30 does not exist
    ("Europe/Berlin", datetime(2026, 10, 24), 2, "2026-10-25 02:30 CEST"),  # 02:30 twice
    ("America/New_York", datetime(2026, 3, 7), 2, "2026-03-08 03:00 EDT"),  # 02:30 does not exist
    ("America/New_York", datetime(2026, 10, 31), 1, "2026-11-01 01:30 EDT"),  # 01:30 twice
]


@pytest.mark.parametrize(("zone", "day_before", "hour", "expected"), DST_DAYS)
def test_a_daily_slot_fires_once_on_a_dst_day(
    home, runtime_for, clock, zone, day_before, hour, expected
):
    """Walked five minutes at a time through the day, as a daemon that looks often would."""
    clock.now = day_before.replace(hour=12, tzinfo=ZoneInfo(zone)).astimezone(UTC)
    schedule = {"name": "night", "cron": f"30 {hour} * * *", "timezone": zone, "text": "Hi"}
    runtime = runtime_for(schedule)
    runtime.scheduler.tick()
    for _ in range(24 * 12):
        clock.advance(minutes=5)
        runtime.scheduler.tick()
    (slot,) = slots_fired(home)
    local = datetime.fromisoformat(slot.replace("Z", "+00:00")).astimezone(ZoneInfo(zone))
    assert local.strftime("%Y-%m-%d %H:%M %Z") == expected
    assert events(home, "schedule_missed") == []


# -- downtime ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "fired", "note"),
    [("once", 1, "missed_slots = 10"), ("skip", 0, None), ("all", 10, None)],
)
def test_downtime_over_ten_slots_follows_missed(home, runtime_for, clock, policy, fired, note):
    runtime = runtime_for(every(10, missed=policy))
    runtime.scheduler.tick()
    clock.advance(minutes=100, seconds=30)  # the daemon was stopped (or the machine asleep)
    runtime.scheduler.tick()
    runtime.scheduler.tick()
    texts = [m["text"] for m in messages(home)]
    assert len(texts) == fired
    if note:
        assert note in texts[0]
        assert messages(home)[0]["metadata"]["missed_slots"] == 10
    (missed,) = events(home, "schedule_missed")
    assert missed["missed"] == 10 and missed["fired"] == fired and missed["policy"] == policy
    clock.advance(minutes=10)  # and on time again afterwards
    runtime.scheduler.tick()
    assert len(messages(home)) == fired + 1


def test_a_restart_after_downtime_fires_what_the_policy_says(home, runtime_for, clock):
    runtime_for(every(10, missed="once")).scheduler.tick()
    clock.advance(hours=5)
    later = runtime_for(every(10, missed="once"))  # a new daemon on the same store
    later.scheduler.tick()
    (message,) = messages(home)
    assert "missed_slots = 30" in message["text"]


def test_a_clock_jumping_back_fires_nothing_twice(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    clock.advance(minutes=10, seconds=1)
    runtime.scheduler.tick()
    clock.advance(minutes=-30)
    runtime.scheduler.tick()
    clock.advance(minutes=30)
    runtime.scheduler.tick()
    assert len(messages(home)) == 1


# -- the switch, reloads, pausing ------------------------------------------------------------


def test_scheduler_disabled_fires_nothing(home, runtime_for, clock):
    runtime = runtime_for(every(10), scheduler={"enabled": False})
    runtime.scheduler.tick()
    clock.advance(minutes=25)
    runtime.scheduler.tick()
    assert messages(home) == []


def test_a_reload_adds_changes_and_removes_config_schedules(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    config = load_config(Home(home))
    (tick,) = config.schedules
    moved = dataclasses.replace(tick, every="1h")
    other = dataclasses.replace(tick, name="other", every="", cron="*/5 * * * *")
    runtime.app.reconfigure(dataclasses.replace(config, schedules=(moved, other)))
    runtime.scheduler.tick()
    names = {s.label: s for s in Schedules(runtime.app.store).all()}
    assert set(names) == {"tick", "other"} and names["tick"].spec.expression == "1h"
    runtime.app.reconfigure(dataclasses.replace(config, schedules=()))
    runtime.scheduler.tick()
    assert Schedules(runtime.app.store).all() == []


def test_a_paused_schedule_waits(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    schedules = Schedules(runtime.app.store)
    (tick,) = schedules.all()
    schedules.set_state(tick.id, ScheduleState.PAUSED, clock.now)
    clock.advance(minutes=11)
    runtime.scheduler.tick()
    assert messages(home) == []


# -- exactly once, in pieces -------------------------------------------------------------------


def test_a_fire_recorded_but_not_sent_is_sent_once_by_the_next_daemon(home, runtime_for, clock):
    first = runtime_for(every(10))
    first.scheduler.tick()
    clock.advance(minutes=10, seconds=1)
    first.scheduler.send_recorded = lambda: 0  # as if killed between the two commits
    first.scheduler.tick()
    assert len(slots_fired(home)) == 1 and messages(home) == []
    second = runtime_for(every(10))
    second.scheduler.tick()
    second.scheduler.tick()
    assert len(messages(home)) == 1


def test_a_fire_sent_twice_is_one_message(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    clock.advance(minutes=10, seconds=1)
    runtime.scheduler.tick()
    with runtime.app.store.transaction() as connection:  # as if the mark were lost
        connection.execute("UPDATE schedule_fires SET state = 'recorded'")
    runtime.scheduler.poke()
    runtime.scheduler.tick()
    assert len(messages(home)) == 1 and len(events(home, "schedule_fired")) == 1


def test_a_same_schedule_continues_its_conversation(home, runtime_for, clock):
    runtime = runtime_for(every(10, conversation="same"))
    runtime.scheduler.tick()
    clock.advance(minutes=10, seconds=1)
    runtime.scheduler.tick()
    (first,) = messages(home)
    assert first["new_conversation"] is True
    store = runtime.app.store
    conversation = runtime.conversations.start("default", first["id"])
    with store.transaction() as connection:
        connection.execute(
            "UPDATE inbox SET conversation_id = ?, status = 'done'", (conversation.id,)
        )
    clock.advance(minutes=10)
    runtime.scheduler.tick()
    second = messages(home)[1]
    assert second["conversation"] == conversation.id and second["new_conversation"] is False


def test_a_schedule_spec_from_the_store_round_trips(home, runtime_for, clock):
    runtime = runtime_for()
    spec = ScheduleSpec(
        name=None,
        kind="every",
        expression="1h",
        timezone="UTC",
        text="x",
        channel="c",
        agents=("a", "b"),
        deliver=False,
    )
    added = Schedules(runtime.app.store).add(spec, source="cli", now=clock.now, next_at=None)
    assert added.spec == spec and added.label == added.id


def test_status_shows_the_next_fire(home, runtime_for, clock):
    from smarthole.cli.admin import status_report

    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    report = status_report(runtime)
    assert report["next_schedule"]["name"] == "tick"
    assert report["next_schedule"]["at"] == "2026-03-01T12:10:00.000000Z"


def test_a_schedule_that_cannot_fire_does_not_stop_the_others(home, runtime_for, clock, caplog):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    broken = ScheduleSpec(
        name="broken",
        kind="cron",
        expression="0 8 * * *",
        timezone="Gone/Zone",
        text="x",
        channel="default",
    )
    Schedules(runtime.app.store).add(broken, source="cli", now=clock.now, next_at=clock.now)
    clock.advance(minutes=10, seconds=1)
    runtime.scheduler.tick()
    assert [m["text"] for m in messages(home)] == ["Check the notes."]
    assert "schedule broken cannot fire" in caplog.text
