"""What the bridge keeps in the store: a channel's records (deliveries owed, oldest first, and
what is pruned), the upgrade of an older version's ``reply:`` records, and the status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smarthole.builtins.desktop.records import BridgeRecords, BridgeState, bridge_report
from smarthole.channels import ChannelHost, Incoming
from smarthole.channels.report import channel_reports
from smarthole.cli.channellines import channel_lines, desktop_line
from smarthole.db.outbox import OutboxItem
from smarthole.db.states import OutboxKind
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


@pytest.fixture
def host(records, tmp_path, clock) -> ChannelHost:
    records.store.plugin_data("channels").set("desktop", {})  # as the daemon's start does
    return ChannelHost("desktop", records, tmp_path / "inbox", 4096, clock=clock)


def item(outbox_id: str, in_reply_to: str, minutes: int = 0) -> OutboxItem:
    return OutboxItem(
        id=outbox_id,
        in_reply_to=in_reply_to,
        conversation=None,
        channel="desktop",
        turn=1,
        kind=OutboxKind.RESPONSE,
        waiting_for_reply=False,
        text=f"reply {outbox_id}",
        path=Path("/nowhere"),
        created_at=NOW + timedelta(minutes=minutes),
    )


def take(host: ChannelHost, message_id: str) -> None:
    host.take(Incoming(external_id=message_id, text="hi", message_id=message_id))


def old_reply(records: BridgeRecords, outbox_id: str, state: str, minutes: int = 0) -> None:
    """A notification record as a version before the channel API's deliveries kept it."""
    value = {
        "desktop_id": f"d-{outbox_id}",
        "kind": "question",
        "text": f"old {outbox_id}",
        "conversation": "c1",
        "created_at": (NOW + timedelta(minutes=minutes)).isoformat(),
        "state": state,
    }
    if state == "sent":
        value["sent_at"] = NOW.isoformat()
    records.data.set(f"reply:{outbox_id}", value)


def test_notifications_are_deliveries_owed_oldest_first_and_kept_once(host):
    take(host, "m1")
    assert host.keep(item("late", "m1", minutes=5))
    assert host.keep(item("early", "m1", minutes=1))
    assert not host.keep(item("early", "m1", minutes=1)), "a repeated delivery is not kept again"
    assert [d.outbox_id for d in host.waiting()] == ["early", "late"]
    host.sent(host.waiting()[0])
    assert [d.outbox_id for d in host.waiting()] == ["late"]
    assert not host.keep(item("early", "m1", minutes=1)), "nor once it was sent"


def test_a_failed_write_after_recording_it_sent_makes_it_owed_again(host):
    take(host, "m1")
    host.keep(item("o1", "m1"))
    (delivery,) = host.waiting()
    host.sent(delivery)  # the bridge records it sent before the frame goes out
    host.failed(delivery, "ConnectionClosedError")
    (again,) = host.waiting()
    assert (again.outbox_id, again.attempts, again.last_error) == ("o1", 1, "ConnectionClosedError")


def test_pruning_forgets_old_sent_deliveries_and_messages_never_waiting_ones(host, records, clock):
    take(host, "m1")
    host.keep(item("sent", "m1"))
    host.sent(host.waiting()[0])
    host.keep(item("waiting", "m1"))
    clock.moments.append(NOW + timedelta(days=8))
    assert records.prune(clock()) == 1
    assert [d.outbox_id for d in host.waiting()] == ["waiting"]
    assert records.message("m1") is not None and records.external("m1") == "m1"
    clock.moments.append(NOW + timedelta(days=31))
    assert records.prune(clock()) == 2, "the message and its external id"
    assert records.message("m1") is None and records.external("m1") is None
    assert [d.outbox_id for d in host.waiting()] == ["waiting"]


def test_an_external_id_of_an_older_version_goes_with_its_message(records, clock):
    """Before, external ids had no time of their own: pruned once their message is gone."""
    records.data.set("external:kept", {"message_id": "m1"})
    records.data.set("external:orphan", {"message_id": "gone"})
    records.data.set("message:m1", {"state": "taken", "received_at": NOW.isoformat()})
    assert records.prune(clock()) == 1
    assert [key for key, _ in records.data.items()] == ["external:kept", "message:m1"]


def test_the_upgrade_makes_old_replies_deliveries_once(host, records):
    old_reply(records, "w2", "waiting", minutes=2)
    old_reply(records, "w1", "waiting", minutes=1)
    old_reply(records, "s1", "sent")
    records.data.set("reply:unreadable", {"state": "waiting"})
    assert (
        bridge_report(records.store, enabled=True, running=False, url="u", name="n")[
            "notifications_waiting"
        ]
        == 2
    ), "counted before the daemon upgraded them too"
    assert records.upgrade() == 3
    assert records.upgrade() == 0, "once"
    owed = host.waiting()
    assert [d.outbox_id for d in owed] == ["w1", "w2"]
    assert (owed[0].message_id, owed[0].kind, owed[0].text) == ("d-w1", "question", "old w1")
    assert records.delivery("s1")["state"] == "sent"
    assert not host.keep(item("s1", "d-s1")), "sent before the upgrade: never sent again"
    assert [k for k, _ in records.data.items() if k.startswith("reply:")] == ["reply:unreadable"]


def test_an_upgrade_that_fails_half_way_changes_nothing(records, monkeypatch):
    old_reply(records, "w1", "waiting")
    old_reply(records, "w2", "waiting")
    deleted = []

    def delete_then_fail(key):
        if deleted:
            raise OSError("disk I/O error")
        deleted.append(key)
        records.store.write("DELETE FROM plugin_data WHERE plugin = 'desktop' AND key = ?", (key,))

    monkeypatch.setattr(records.data, "delete", delete_then_fail)
    with pytest.raises(OSError, match="disk I/O error"):
        records.upgrade()
    assert sorted(k for k, _ in records.data.items()) == ["reply:w1", "reply:w2"]


def test_a_desktop_delivery_is_in_the_generic_channel_status(host, records):
    take(host, "m1")
    host.keep(item("o1", "m1"))
    records.set_status(BridgeState.CONNECTED, url="ws://x", name="n", last_error=None)
    (report,) = channel_reports(records.store, running=True)
    assert (report["name"], report["state"], report["waiting"]) == ("desktop", "connected", 1)
    bridge = bridge_report(records.store, enabled=True, running=True, url="ws://y", name="m")
    assert bridge["notifications_waiting"] == 1
    lines = channel_lines({"desktop": bridge, "channels": [report]})
    assert lines == [desktop_line(bridge)], "the bridge's own line, not a second one"
    assert lines[0].endswith("· 1 notification waiting")


@pytest.mark.parametrize(
    ("enabled", "running", "state", "last_error"),
    [
        (False, True, "disabled", None),
        (True, False, "error", "the daemon is not running"),
        (True, True, "connected", None),
    ],
)
def test_the_status_report(host, records, enabled, running, state, last_error):
    records.set_status(BridgeState.CONNECTED, url="ws://x", name="n", last_error=None)
    take(host, "a")
    host.keep(item("o-a", "a"))
    report = bridge_report(records.store, enabled=enabled, running=running, url="ws://y", name="m")
    assert (report["state"], report["last_error"]) == (state, last_error)
    assert report["notifications_waiting"] == 1
