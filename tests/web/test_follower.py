"""One follower of the events table feeds every subscriber: no gap and no repeat on resume."""

from __future__ import annotations

import asyncio
import concurrent.futures
from datetime import UTC, datetime

import pytest

from smarthole.db.events import EventLog
from smarthole.db.store import Store
from smarthole.web.follower import DaemonState, EventFollower, follow


@pytest.fixture
def events(tmp_path):
    store = Store.open(tmp_path / "smarthole.db", clock=lambda: datetime.now(UTC))
    yield EventLog(store)
    store.close()


def emit(events: EventLog, count: int) -> list[int]:
    return [
        events.emit("conversation_ended", conversation="c", reason=str(i)).id for i in range(count)
    ]


async def collect(follower, events, after, count):
    async def read(since, limit):
        return await asyncio.to_thread(events.since, since, limit=limit)

    got: list[int] = []
    states = []
    stream = follow(follower, read, after)
    async for item in stream:
        if isinstance(item, DaemonState):
            states.append(item.running)
        elif item is not None:
            got.append(item.id)
            if len(got) == count:
                break
    await stream.aclose()
    return got, states


def run(scenario):
    """``asyncio.run`` in a thread of its own: Playwright's sync API keeps a loop running in
    this one once a browser test has run."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, scenario()).result(timeout=30)


async def subscribed(follower, count):
    while follower.subscribers < count:
        await asyncio.sleep(0.005)


def test_a_subscriber_gets_what_it_missed_then_what_comes(events):
    before = emit(events, 5)

    async def scenario():
        follower = EventFollower(events, daemon_running=lambda: True, interval=0.01)
        follower.start(asyncio.get_running_loop())
        try:
            task = asyncio.create_task(collect(follower, events, before[1], 3 + 20))
            await asyncio.sleep(0)  # it subscribes and reads the store first
            later = await asyncio.to_thread(emit, events, 20)
            got, states = await asyncio.wait_for(task, 10)
            return later, got, states
        finally:
            follower.close()

    later, got, states = run(scenario)
    assert got == before[2:] + later  # in order, each once
    assert states == [True]


def test_many_subscribers_share_one_follower(events):
    async def scenario():
        follower = EventFollower(events, interval=0.01)
        follower.start(asyncio.get_running_loop())
        try:
            start = events.latest_id()
            tasks = [asyncio.create_task(collect(follower, events, start, 10)) for _ in range(20)]
            await asyncio.wait_for(subscribed(follower, 20), 5)
            ids = await asyncio.to_thread(emit, events, 10)
            results = await asyncio.wait_for(asyncio.gather(*tasks), 10)
            return ids, results
        finally:
            follower.close()

    ids, results = run(scenario)
    assert all(got == ids for got, _ in results)


def test_closing_ends_every_stream(events):
    async def scenario():
        follower = EventFollower(events, interval=0.01)
        follower.start(asyncio.get_running_loop())
        task = asyncio.create_task(collect(follower, events, 0, 1_000))
        await asyncio.wait_for(subscribed(follower, 1), 5)
        follower.close()
        return await asyncio.wait_for(task, 5)

    got, _ = run(scenario)
    assert got == []
