"""The channel host: intake exactly once, deliveries kept until sent, retried after a failure."""

from __future__ import annotations

import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from smarthole.channels import ChannelHost, ChannelRecords, Incoming
from smarthole.channels.base import text_digest
from smarthole.channels.report import channel_reports
from smarthole.db.ledger import Ledger
from smarthole.db.outbox import OutboxItem
from smarthole.db.states import OutboxKind
from smarthole.db.store import Store
from smarthole.errors import MessageError
from smarthole.pipeline.inbox import REUSED_ID
from smarthole.pipeline.message import parse_message
from tests.helpers import REPO, image_bytes, turned_clock

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


# -- a batch, and the same external id with another text -----------------------------------------


def test_a_batch_is_taken_in_two_commits_with_an_outcome_each_in_order(host, monkeypatch):
    commits = []
    intake_batch = host.records.intake_batch

    def counted(entries, state, **how):
        commits.append((state, len(entries)))
        intake_batch(entries, state, **how)

    monkeypatch.setattr(host.records, "intake_batch", counted)
    outcomes = host.take_batch(
        [
            Incoming(external_id="a", text="hello"),
            Incoming(external_id="b", text="world"),
            Incoming(external_id="a", text="hello"),  # twice in one burst: taken once
            Incoming(external_id="a", text="goodbye"),  # the same id, another message
            Incoming(external_id="c", text="x" * 5000),
        ]
    )
    first, second, again, reused, big = outcomes
    assert not first.duplicate and not second.duplicate
    assert again.duplicate and again.message_id == first.message_id and again.path is None
    assert isinstance(reused, MessageError) and str(reused) == REUSED_ID
    assert isinstance(big, MessageError) and "too large" in str(big)
    assert commits == [("taking", 2), ("taken", 2)]
    assert inbox(host) == sorted([first.path, second.path])


@pytest.mark.parametrize(
    ("text", "refused"),
    [("hello", False), ("  hello\n", False), ("Hello", True)],  # the inbox keeps it stripped
)
def test_a_known_external_id_with_another_text_is_refused(host, text, refused):
    first = host.take(Incoming(external_id="x-1", text="hello"))
    if refused:
        with pytest.raises(MessageError, match=REUSED_ID):
            host.take(Incoming(external_id="x-1", text=text))
    else:
        assert host.take(Incoming(external_id="x-1", text=text)).duplicate
    assert inbox(host) == [first.path]
    assert host.records.message(first.message_id)["text_sha256"] == text_digest("hello")


def test_an_id_the_ledger_has_with_another_text_is_refused(host):
    """A record without a digest (an older version), or none at all: the ledger decides."""
    host.ledger = Ledger(host.records.store)
    data = b"+++\nid = 'm-1'\n+++\nfrom a file\n"
    message = parse_message("m-1.md", data, modified=NOW)
    host.ledger.admit(message, channel="default", claimed_path=None)
    with pytest.raises(MessageError, match=REUSED_ID):
        host.take(Incoming(external_id="x", text="hello", message_id="m-1"))
    assert host.records.message("m-1") is None
    assert host.take(Incoming(external_id="x", text="from a file", message_id="m-1"))


CRASH_BEFORE_TAKEN = """
import os, signal, sys
from datetime import UTC, datetime
from pathlib import Path
from smarthole.channels import ChannelHost, ChannelRecords, Incoming
from smarthole.db.store import Store

records = ChannelRecords(Store.open(Path(sys.argv[1]), clock=lambda: datetime.now(UTC)), "chat")
intake_batch = records.intake_batch

def crash_before_taken(entries, state, **how):
    if state == "taken":  # the files are on disk, the taking records committed
        os.kill(os.getpid(), signal.SIGKILL)
    intake_batch(entries, state, **how)

records.intake_batch = crash_before_taken
host = ChannelHost("chat", records, Path(sys.argv[2]), 4096)
host.take_batch([Incoming(external_id=e, text=f"text of {e}") for e in sys.argv[3:]])
"""


def test_a_crash_between_the_commits_of_a_batch_gives_one_message_each(host):
    store = host.records.store
    batch = [Incoming(external_id=e, text=f"text of {e}") for e in ("x-1", "x-2")]
    crashed = subprocess.run(
        [sys.executable, "-c", CRASH_BEFORE_TAKEN, str(store.path), str(host.inbox), "x-1", "x-2"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert len(inbox(host)) == 2
    again = host.take_batch(batch)  # offered again: the records say ``taking``
    assert [t.duplicate for t in again] == [False, False]
    ledger = Ledger(store)
    admitted = sorted(
        (message.id, ledger.admit(message, channel="chat", claimed_path=path).value)
        for path in inbox(host)
        for message in [parse_message(path.name, path.read_bytes(), modified=NOW)]
    )
    ids = [t.message_id for t in again]
    assert admitted == sorted([(i, "new") for i in ids] + [(i, "duplicate") for i in ids])
    assert [t.duplicate for t in host.take_batch(batch)] == [True, True]


def test_the_records_of_one_kind_are_read_by_their_prefix_alone(host):
    """What ``owed`` reads: the ``delivery:`` keys, not every message a channel took."""
    data = host.records.data
    keys = ["delivery", "delivery:", "delivery:a", "delivery:é", "delivery;", "deliverya", "e"]
    for key in keys:
        data.set(key, {"key": key})
    assert [key for key, _ in data.items("delivery:")] == ["delivery:", "delivery:a", "delivery:é"]
    assert [key for key, _ in data.items()] == sorted(keys)
