"""Housekeeping removes old schedule fires, and nothing a fire still guards or shows.

A schedule `every = "1s"` takes 86,400 fires a day; housekeeping keeps a week of them, plus
each schedule's latest, any whose message is not finished, and any slot its schedule is not yet
past (there the fire's key is what keeps the slot from firing twice).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from smarthole.daemon.upkeep import (
    PRUNE_EVERY,
    SCHEDULE_FIRES_KEPT,
    Every,
    housekeeping,
    prune_schedule_fires,
)
from tests.daemon.test_scheduler import every, messages, slots_fired
from tests.helpers import db


def finish_all(runtime, status: str = "done") -> None:
    with runtime.app.store.transaction() as connection:
        connection.execute("UPDATE inbox SET status = ?", (status,))


def test_housekeeping_removes_fires_older_than_a_week_and_keeps_the_latest(
    home, runtime_for, clock
):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    for _ in range(3):  # three fires, ten minutes apart
        clock.advance(minutes=10)
        runtime.scheduler.tick()
    finish_all(runtime)
    old = slots_fired(home)
    assert len(old) == 3
    clock.advance(days=8)  # a catch-up run for the newest slot, a week later
    runtime.scheduler.tick()
    clock.advance(minutes=10)
    runtime.scheduler.tick()
    finish_all(runtime)
    housekeeping(runtime, clock)
    kept = slots_fired(home)
    assert len(kept) == 2 and not set(old) & set(kept)
    (latest,) = runtime.schedules.last_fires().values()  # what `smarthole schedules` shows
    assert latest.slot_at.isoformat() > old[-1] and latest.outcome == "done"
    clock.advance(minutes=10)
    runtime.scheduler.tick()  # still once per slot
    assert len(messages(home)) == 6 and len(set(slots_fired(home))) == 3


def test_a_schedules_latest_fire_and_unfinished_ones_stay_however_old(home, runtime_for, clock):
    runtime = runtime_for(every(10), {**every(10), "name": "tock"})
    runtime.scheduler.tick()
    clock.advance(minutes=10)
    runtime.scheduler.tick()
    clock.advance(minutes=10)
    runtime.scheduler.tick()
    finish_all(runtime)
    with runtime.app.store.transaction() as connection:  # tock's first message still waits
        connection.execute(
            "UPDATE inbox SET status = 'deferred' WHERE message_id = "
            "(SELECT MIN(message_id) FROM inbox WHERE source_name = 'schedule tock')"
        )
    clock.advance(days=30)
    assert prune_schedule_fires(runtime, clock() - SCHEDULE_FIRES_KEPT) == 1  # tick's first
    rows = db(home).execute(
        "SELECT s.name, COUNT(*) FROM schedule_fires AS f JOIN schedules AS s "
        "ON s.id = f.schedule_id GROUP BY s.name ORDER BY s.name"
    )
    assert [tuple(row) for row in rows] == [("tick", 1), ("tock", 2)]
    with runtime.app.store.transaction() as connection:
        connection.execute("UPDATE schedule_fires SET state = 'recorded'")  # as if not sent
        connection.execute("UPDATE inbox SET status = 'done'")
    assert prune_schedule_fires(runtime, clock()) == 0, "a fire not yet sent stays"


def test_a_slot_the_schedule_is_not_past_keeps_its_fire(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    clock.advance(minutes=10)
    runtime.scheduler.tick()
    clock.advance(minutes=10)
    runtime.scheduler.tick()
    finish_all(runtime)
    first, _ = slots_fired(home)
    with runtime.app.store.transaction() as connection:  # e.g. a retime after a jump back
        connection.execute("UPDATE schedules SET last_slot_at = '2026-03-01T12:05:00.000000Z'")
    clock.advance(days=30)
    assert prune_schedule_fires(runtime, clock()) == 0
    assert slots_fired(home)[0] == first


def test_the_fires_of_a_removed_schedule_go_once_old(home, runtime_for, clock):
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    clock.advance(minutes=10)
    runtime.scheduler.tick()
    finish_all(runtime)
    (schedule,) = runtime.schedules.all()
    runtime.schedules.remove(schedule.id)
    clock.advance(days=6)
    assert prune_schedule_fires(runtime, clock() - SCHEDULE_FIRES_KEPT) == 0
    clock.advance(days=2)
    assert prune_schedule_fires(runtime, clock() - SCHEDULE_FIRES_KEPT) == 1
    assert slots_fired(home) == []


def test_a_long_backlog_goes_in_batches(home, runtime_for, clock, monkeypatch):
    monkeypatch.setattr("smarthole.daemon.upkeep.PRUNE_BATCH", 2)
    runtime = runtime_for(every(10))
    runtime.scheduler.tick()
    for _ in range(6):
        clock.advance(minutes=10)
        runtime.scheduler.tick()
    finish_all(runtime)
    clock.advance(days=8)
    assert prune_schedule_fires(runtime, clock() - SCHEDULE_FIRES_KEPT) == 5
    assert len(slots_fired(home)) == 1


def test_the_housekeeper_prunes_once_an_hour():
    pruning = Every(PRUNE_EVERY)
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert pruning.due(start)
    assert not pruning.due(start + PRUNE_EVERY - timedelta(seconds=1))
    assert pruning.due(start + PRUNE_EVERY)
    assert not pruning.due(start + PRUNE_EVERY + timedelta(minutes=5))
