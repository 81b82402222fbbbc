"""The channel host: intake exactly once, deliveries kept until sent, retried after a failure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smarthole.channels import ChannelHost, ChannelRecords, Incoming
from smarthole.channels.report import channel_reports
from smarthole.db.outbox import OutboxItem
from smarthole.db.states import OutboxKind
from smarthole.db.store import Store
from smarthole.errors import MessageError
from tests.helpers import image_bytes, turned_clock

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    return turned_clock(NOW)


@pytest.fixture
def host(tmp_path, clock):
    store = Store.open(tmp_path / "smarthole.db", clock=clock)
    store.plugin_data("channels").set("chat", {})
    yield ChannelHost("chat", ChannelRecords(store, "chat"), tmp_path / "inbox", 4096, clock=clock)
    store.close()


def inbox(host: ChannelHost) -> list[Path]:
    return sorted(p for p in host.inbox.iterdir() if not p.name.startswith("."))


def item(outbox_id: str, in_reply_to: str, kind: OutboxKind = OutboxKind.RESPONSE) -> OutboxItem:
    return OutboxItem(
        id=outbox_id,
        in_reply_to=in_reply_to,
        conversation="c1",
        channel="chat",
        turn=1,
        kind=kind,
        waiting_for_reply=False,
        text=f"{kind} {outbox_id}",
        path=Path("/nowhere"),
        created_at=NOW,
    )


def test_an_external_id_is_taken_once(host):
    first = host.take(Incoming(external_id="x-1", text="hello", keep={"thread": "t"}))
    again = host.take(Incoming(external_id="x-1", text="hello"))
    assert not first.duplicate and again.duplicate
    assert again.message_id == first.message_id and first.message_id.startswith("chat-")
    assert [p.name for p in inbox(host)] == [first.path.name]
    assert host.records.origin(first.message_id) == {"thread": "t"}


def test_a_crash_before_the_entry_was_written_writes_it_when_offered_again(host):
    """The record said ``taking`` (committed), then the process died before the file."""
    offered = Incoming(external_id="x-2", text="hello")
    taken = host.take(offered)
    taken.path.unlink()
    host.records.intake(taken.message_id, "x-2", "taking", {})
    again = host.take(offered)
    assert not again.duplicate and again.message_id == taken.message_id
    assert inbox(host) == [again.path]


@pytest.mark.parametrize(
    ("incoming", "reason"),
    [
        (Incoming(external_id="big", text="x" * 5000), "too large"),
        (Incoming(external_id="bad", text="hi", channel="no spaces"), "channel"),
        (Incoming(external_id="exe", text="hi", attachments=(("a.exe", b"MZ"),)), "a.exe"),
    ],
)
def test_a_message_that_cannot_be_taken_says_why_and_records_nothing(host, incoming, reason):
    with pytest.raises(MessageError, match=reason):
        host.take(incoming)
    assert host.records.external(incoming.external_id) is None
    assert not host.inbox.exists() or inbox(host) == []


def test_attachments_make_a_folder_message(host):
    taken = host.take(
        Incoming(external_id="p", text="see", attachments=(("a.png", image_bytes()),))
    )
    assert taken.path.is_dir()
    assert sorted(p.name for p in taken.path.iterdir()) == ["a.png", "message.md"]


def test_a_delivery_is_kept_once_retried_after_a_failure_and_never_sent_twice(host, clock):
    taken = host.take(Incoming(external_id="x-3", text="hello", keep={"to": "me"}))
    assert host.keep(item("o1", taken.message_id))
    assert not host.keep(item("o1", taken.message_id)), "deliver is at least once: kept once"
    (due,) = host.due()
    assert due.origin == {"to": "me"} and due.text == "response o1"
    host.failed(due, "the server said 451")
    assert host.due() == []
    (report,) = channel_reports(host.records.store, running=True)
    assert (report["waiting"], report["failing"]) == (1, 1)
    assert report["last_send_error"] == "the server said 451"
    clock.moments.append(NOW + timedelta(seconds=6))
    (retry,) = host.due()
    assert retry.attempts == 1
    host.sent(retry)
    assert host.due() == [] and host.waiting() == []
    assert not host.keep(item("o1", taken.message_id)), "nor once it was sent"
