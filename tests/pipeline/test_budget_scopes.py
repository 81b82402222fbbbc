"""The other caps: a day's across channels running in parallel, a team task's, a schedule run's.

As for a conversation's: the sum of what the fake reported for every request it received never
passes the cap, and at least 80 % of the cap is spent before a call is held.
"""

from __future__ import annotations

from datetime import UTC, datetime

from smarthole.config.prices import micros
from smarthole.db.schedules import Schedules
from smarthole.db.store import Store
from tests.helpers import db, drop, finals, run_once, wait_for, write_schedules
from tests.spending import budget_items, capped_sections, looping, spent, write_capped

CAP = 0.05


def test_a_day_cap_holds_two_channels_running_at_once(home, fake, env, threads):
    threads(write_capped(home, budget={"per_day": CAP}, daemon={"workers": 2}), env)
    looping(fake, times=800)
    drop(home, "look around, forever", "m1", channel="one")
    drop(home, "look around, forever", "m2", channel="two")
    items = wait_for(lambda: budget_items(home)[1:] and budget_items(home), 60, "both held")
    assert {i["channel"] for i in items} == {"one", "two"}
    assert {i["cap"] for i in items} == {"per_day"}
    assert micros(CAP) * 0.8 <= spent(fake) <= micros(CAP)
    with db(home) as connection:
        channels = {r["channel"] for r in connection.execute("SELECT channel FROM spend")}
    assert channels == {"one", "two"}  # both ran, in parallel, under one cap


def test_a_task_cap_holds_a_team_agent(home, fake, env, threads):
    team = {"looper": {"description": "Looks", "instructions": "Look.", "tools": ["list_files"]}}
    threads(write_capped(home, budget={"per_task": CAP}, agents=team), env)
    looping(fake, agent="looper")
    drop(home, "look around, forever", "m1", agents=["looper"])
    (item,) = wait_for(lambda: budget_items(home), 30, "the task held")
    assert item["cap"] == "per_task" and "looper" not in item.text
    assert micros(CAP) * 0.8 <= spent(fake) <= micros(CAP)
    (task,) = db(home).execute("SELECT id FROM tasks").fetchall()
    with db(home) as connection:
        tasks = {r["task_id"] for r in connection.execute("SELECT task_id FROM spend")}
    assert tasks == {task["id"]}
    drop(home, "", "a1", deny=item["approval"])
    wait_for(lambda: finals(home), 30, "the turn's end")


def test_a_schedule_run_is_held_by_its_own_budget_and_not_fired_again(home, fake, env, threads):
    schedule = {"name": "nightly", "every": "1d", "text": "Look around.", "budget": CAP}
    write_schedules(home, schedule, **capped_sections())
    run_once(home, env)  # the daemon keeps the file's schedules in the store
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        schedules = Schedules(store)
        schedules.take_now(schedules.find("nightly"), datetime.now(UTC))
    finally:
        store.close()
    looping(fake)
    threads(home, env)
    (item,) = wait_for(lambda: budget_items(home), 30, "the run held")
    assert item["cap"] == "schedule"
    assert micros(CAP) * 0.8 <= spent(fake) <= micros(CAP)
    with db(home) as connection:
        (fires,) = connection.execute("SELECT COUNT(*) FROM schedule_fires").fetchone()
        (names,) = connection.execute("SELECT COUNT(DISTINCT schedule) FROM spend").fetchone()
    assert (fires, names) == (1, 1)
    drop(home, "", "a1", deny=item["approval"])
    (final,) = wait_for(lambda: finals(home), 30, "the run's end")
    assert "schedule run budget of $0.05 is reached" in final.text
