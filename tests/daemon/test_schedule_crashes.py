"""A real daemon fires a schedule, and a kill -9 at any step gives one reply per slot; and
what a fired message becomes (deliver = false, a team task).

The daemon is a subprocess; ``SMARTHOLE_TEST_CRASH_AT`` stops it dead (``os._exit``, as a
kill -9: nothing is cleaned up) at a named step between the fire's record and its message.
"""

from __future__ import annotations

import signal
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smarthole import hookimpl
from smarthole.daemon.scheduler import CRASH_ENV
from smarthole.db.schedules import Schedules, ScheduleSpec
from smarthole.db.states import ScheduleState
from smarthole.db.store import Store
from smarthole.testing import hold, text
from tests.helpers import db, finals, run_once, wait_for, write_schedules


def add_schedule(home: Path, *, seconds: float = 1.0, **spec: object) -> str:
    """A one-time schedule (as `smarthole schedule add --at` makes), due in ``seconds``."""
    now = datetime.now(UTC)
    at = now + timedelta(seconds=seconds)
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        fields = {
            "name": "remind",
            "kind": "at",
            "expression": at.strftime("%Y-%m-%dT%H:%M:%S"),
            "timezone": "UTC",
            "text": "Time to call the bank.",
            "channel": "default",
            **spec,
        }
        added = Schedules(store).add(ScheduleSpec(**fields), source="cli", now=now, next_at=at)  # type: ignore[arg-type]
    finally:
        store.close()
    return added.id


def counted(home: Path) -> tuple[int, int, int]:
    """(fires, ledger messages of schedules, final replies)."""
    connection = db(home)
    fires = connection.execute("SELECT COUNT(*) FROM schedule_fires").fetchone()[0]
    messages = connection.execute(
        "SELECT COUNT(*) FROM inbox WHERE message_id LIKE 'schedule-%'"
    ).fetchone()[0]
    return fires, messages, len(finals(home))


def test_a_schedule_fires_and_its_reply_arrives(home, fake, env, daemons):
    add_schedule(home)
    fake.add(text("Reminder: call the bank."))
    daemons(home, env)
    (reply,) = wait_for(lambda: finals(home), 20, "the scheduled reply")
    assert reply.text == "Reminder: call the bank."
    assert fake.requests[-1].last_user_text == "Time to call the bank."
    assert counted(home) == (1, 1, 1)


@pytest.mark.parametrize("point", ["schedule_recorded", "schedule_sent"])
def test_a_crash_between_the_record_and_the_message_fires_once(home, fake, env, daemons, point):
    add_schedule(home)
    first = daemons(home, {**env, CRASH_ENV: point})
    first.process.wait(timeout=30)  # it stops itself dead at that step
    assert first.process.returncode == 9, first.output()
    assert counted(home)[0] == 1 and counted(home)[2] == 0
    fake.add(text("Once."))
    daemons(home, env)
    wait_for(lambda: finals(home), 20, "the reply after the crash")
    wait_for(lambda: db(home).execute("SELECT status FROM inbox").fetchone()[0] == "done", 10)
    assert counted(home) == (1, 1, 1)
    assert [f.text for f in finals(home)] == ["Once."]


def test_a_kill_during_the_scheduled_turn_gives_one_reply(home, fake, env, daemons):
    release = threading.Event()
    fake.add(hold(release, text("too late")))
    add_schedule(home)
    first = daemons(home, env)
    fake.wait_for_requests(1, timeout=20)
    first.kill()
    release.set()
    fake.add(text("After the crash."))
    daemons(home, env)
    wait_for(lambda: finals(home), 20, "the reply after restart")
    wait_for(lambda: db(home).execute("SELECT status FROM inbox").fetchone()[0] == "done", 10)
    assert counted(home) == (1, 1, 1)
    assert [f.text for f in finals(home)] == ["After the crash."]
    users = db(home).execute("SELECT COUNT(*) FROM messages WHERE kind = 'user'").fetchone()[0]
    assert users == 1


def test_sighup_reloads_the_schedules_and_a_bad_one_keeps_the_old(home, fake, env, daemons):
    fake.default = text("Fired.")
    daemon = daemons(home, env)
    write_schedules(home, {"name": "soon", "every": "1s", "text": "Ping.", "missed": "skip"})
    daemon.process.send_signal(signal.SIGHUP)
    wait_for(lambda: finals(home), 20, "a reply to the new schedule")
    write_schedules(home, {"name": "soon", "cron": "61 * * * *", "text": "Ping."})
    daemon.process.send_signal(signal.SIGHUP)
    wait_for(lambda: "'soon' cron '61 * * * *': Bad minute" in daemon.output(), 10, "the error")
    names = [r[0] for r in db(home).execute("SELECT name FROM schedules")]
    assert names == ["soon"]
    write_schedules(home)
    daemon.process.send_signal(signal.SIGHUP)
    wait_for(lambda: not db(home).execute("SELECT name FROM schedules").fetchall(), 10)
    assert daemon.terminate() == 0
    fires = db(home).execute("SELECT COUNT(*), COUNT(DISTINCT slot_at) FROM schedule_fires")
    assert len(set(fires.fetchone())) == 1  # never one slot twice


class Deliveries:
    def __init__(self) -> None:
        self.items: list[object] = []

    @hookimpl
    def deliver(self, outbox_item):
        self.items.append(outbox_item)


@pytest.mark.parametrize("deliver", [True, False])
def test_deliver_false_stores_the_reply_without_the_deliver_hook(home, fake, env, deliver):
    write_schedules(home, {"name": "quiet", "every": "1d", "text": "Tidy up.", "deliver": deliver})
    run_once(home, env)  # the daemon keeps the file's schedules in the store
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        schedules = Schedules(store)
        schedules.take_now(schedules.find("quiet"), datetime.now(UTC))
    finally:
        store.close()
    fake.add(text("Tidied."))
    seen = Deliveries()
    run_once(home, env, extra_plugins=[("seen", seen)])
    assert [f.text for f in finals(home)] == ["Tidied."]
    assert len(seen.items) == (1 if deliver else 0)


def test_a_schedule_with_agents_runs_as_a_team_task(home, fake, env):
    team = {"researcher": {"description": "Finds facts", "instructions": "Research."}}
    write_schedules(
        home,
        {"name": "digest", "every": "1d", "text": "Find the news.", "agents": ["researcher"]},
        agents=team,
    )
    run_once(home, env)
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        schedules = Schedules(store)
        schedules.take_now(schedules.find("digest"), datetime.now(UTC))
    finally:
        store.close()
    fake.default = text("Three items of news.")
    run_once(home, env)
    (task,) = db(home).execute("SELECT task, agents, status FROM tasks").fetchall()
    assert task["task"] == "Find the news." and "researcher" in task["agents"]
    assert len(finals(home)) == 1


def test_kills_across_many_slots_give_one_reply_per_slot(home, fake, env, daemons):
    fake.default = text("Tick.")
    write_schedules(home, {"name": "often", "every": "1s", "text": "Tick?", "missed": "all"})
    for run in (1, 2):  # killed dead twice while slots fire and turns run
        daemon = daemons(home, env)
        wait_for(lambda n=run: counted(home)[2] >= 3 * n, 20, "a few more replies")
        daemon.kill()
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        often = Schedules(store).find("often")
        Schedules(store).set_state(often.id, ScheduleState.PAUSED, datetime.now(UTC))
    finally:
        store.close()
    run_once(home, env)  # what the kills cut off, finished; no new slot fires
    fires, messages, replies = counted(home)
    assert fires == messages == replies and fires >= 6
    answered = [f["in_reply_to"] for f in finals(home)]
    assert len(answered) == len(set(answered))
    states = db(home).execute("SELECT DISTINCT status FROM inbox").fetchall()
    assert [row[0] for row in states] == ["done"]
