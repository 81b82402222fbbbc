"""What the bridge keeps in the store: notifications waiting, oldest first, and what is pruned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from smarthole.builtins.desktop.protocol import Notification
from smarthole.builtins.desktop.records import BridgeRecords, BridgeState, ReplyState, bridge_report
from smarthole.db.store import Store
from tests.helpers import turned_clock

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    return turned_clock(NOW)


@pytest.fixture
def records(tmp_path, clock):
    store = Store.open(tmp_path / "smarthole.db", clock=clock)
    yield BridgeRecords(store)
    store.close()


def notification(outbox_id: str, minutes: int) -> Notification:
    return Notification(
        outbox_id=outbox_id,
        desktop_id=f"d-{outbox_id}",
        kind="response",
        text=outbox_id,
        conversation=None,
        created_at=(NOW + timedelta(minutes=minutes)).isoformat(),
    )


def test_notifications_wait_oldest_first_and_are_kept_once(records):
    assert records.queue(notification("late", 5))
    assert records.queue(notification("early", 1))
    assert not records.queue(notification("early", 1)), "a repeated delivery is not kept again"
    assert [n.outbox_id for n in records.waiting()] == ["early", "late"]
    records.mark(records.waiting()[0], ReplyState.SENT)
    assert [n.outbox_id for n in records.waiting()] == ["late"]
    assert not records.queue(notification("early", 1)), "nor once it was sent"


def test_pruning_forgets_old_sent_notifications_and_messages_never_waiting_ones(records, clock):
    records.queue(notification("sent", 0))
    records.mark(notification("sent", 0), ReplyState.SENT)
    records.queue(notification("waiting", 0))
    records.taken({"m1": None})
    clock.moments.append(NOW + timedelta(days=8))
    assert records.prune(clock()) == 1
    assert [n.outbox_id for n in records.waiting()] == ["waiting"]
    assert records.message("m1") is not None
    clock.moments.append(NOW + timedelta(days=31))
    assert records.prune(clock()) == 1
    assert records.message("m1") is None
    assert [n.outbox_id for n in records.waiting()] == ["waiting"]


@pytest.mark.parametrize(
    ("enabled", "running", "state", "last_error"),
    [
        (False, True, "disabled", None),
        (True, False, "error", "the daemon is not running"),
        (True, True, "connected", None),
    ],
)
def test_the_status_report(records, enabled, running, state, last_error):
    records.set_status(BridgeState.CONNECTED, url="ws://x", name="n", last_error=None)
    records.queue(notification("a", 0))
    report = bridge_report(records.store, enabled=enabled, running=running, url="ws://y", name="m")
    assert (report["state"], report["last_error"]) == (state, last_error)
    assert report["notifications_waiting"] == 1
