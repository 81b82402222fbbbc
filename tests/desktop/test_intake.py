"""Taking a batch of the desktop's messages: one answer each, in order, after one durable batch.

A burst is stored a batch at a time; these call ``Intake.take_batch`` directly, so what shares
a batch is certain (over the socket it depends on timing; see ``test_burst``). The intake maps
frames to the channel host's ``take_batch``, which does the durable part.
"""

from __future__ import annotations

import sqlite3
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from smarthole.builtins.desktop.intake import Intake
from smarthole.builtins.desktop.records import MESSAGE, BridgeRecords
from smarthole.channels import ChannelHost
from smarthole.db.ledger import Ledger
from smarthole.db.store import Store
from smarthole.pipeline.inbox import REUSED_ID
from smarthole.pipeline.message import parse_message

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path):
    store = Store.open(tmp_path / "smarthole.db", clock=lambda: NOW)
    yield store
    store.close()


@pytest.fixture
def host(tmp_path: Path, store: Store) -> ChannelHost:
    records = BridgeRecords(store)
    return ChannelHost("desktop", records, tmp_path / "inbox", 2000, ledger=Ledger(store))


@pytest.fixture
def intake(host: ChannelHost) -> Intake:
    return Intake(host, "desktop")


def payload(message_id: str, text: str, **more: object) -> dict:
    return {"id": message_id, "text": text, "timestamp": "2026-11-22T09:00:00.000Z", **more}


def answers(taken) -> list[tuple[str, str, str]]:
    """(type, message id, reason) of each answer, in order."""
    return [
        (
            t.answer["payload"]["type"],
            t.answer["payload"]["messageId"],
            t.answer["payload"]["payload"].get("reason", ""),
        )
        for t in taken
    ]


def texts_on_disk(inbox: Path) -> dict[str, list[str]]:
    """Message id -> the texts of its inbox files."""
    found: dict[str, list[str]] = {}
    for path in sorted(inbox.glob("*.md")):
        _, header, body = path.read_text().split("+++\n", 2)
        found.setdefault(tomllib.loads(header)["id"], []).append(body.strip())
    return found


def test_a_batch_is_answered_in_order_with_each_id_written_once(intake):
    taken = intake.take_batch(
        [
            payload("a", "hello"),
            payload("b", ""),
            payload("a", "hello"),  # the same message twice in one burst
            payload("c", "x" * 3000),
            payload("a", "goodbye"),  # the same id, another message
            payload("d", "world"),
        ]
    )
    assert answers(taken) == [
        ("ack", "a", ""),
        ("reject", "b", "the message text is empty"),
        ("ack", "a", ""),
        ("reject", "c", "the message is too large (3076 bytes; the limit is 2000)"),
        ("reject", "a", REUSED_ID),
        ("ack", "d", ""),
    ]
    assert texts_on_disk(intake.host.inbox) == {"a": ["hello"], "d": ["world"]}
    assert {intake.host.records.message(i)["state"] for i in "ad"} == {"taken"}


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("hello", ("ack", "a", "")),
        ("  hello\n", ("ack", "a", "")),  # the inbox keeps the text stripped: the same
        ("Hello", ("reject", "a", REUSED_ID)),
    ],
)
def test_an_id_taken_before_is_acked_again_only_with_the_same_text(intake, text, answer):
    intake.take_batch([payload("a", "hello")])
    assert answers(intake.take_batch([payload("a", text)])) == [answer]
    assert texts_on_disk(intake.host.inbox) == {"a": ["hello"]}


def test_a_record_from_before_text_digests_is_checked_against_the_ledger(intake, store, tmp_path):
    """A version before this one kept no digest; the daemon's ledger has the text."""
    intake.host.records.data.set(MESSAGE + "a", {"state": "taken", "received_at": "x"})
    assert answers(intake.take_batch([payload("a", "anything")])) == [("ack", "a", "")]
    data = b"+++\nid = 'a'\n+++\nhello\n"
    Ledger(store).admit(
        parse_message("a.md", data, modified=NOW), channel="desktop", claimed_path=tmp_path / "a"
    )
    assert answers(intake.take_batch([payload("a", "goodbye")])) == [("reject", "a", REUSED_ID)]
    assert answers(intake.take_batch([payload("a", "hello")])) == [("ack", "a", "")]
    assert texts_on_disk(intake.host.inbox) == {}


def test_an_id_an_inbox_file_used_for_another_text_is_refused(intake, store, tmp_path):
    data = b"+++\nid = 'a'\n+++\nfrom a file\n"
    Ledger(store).admit(
        parse_message("a.md", data, modified=NOW), channel="default", claimed_path=tmp_path / "a"
    )
    assert answers(intake.take_batch([payload("a", "hello")])) == [("reject", "a", REUSED_ID)]
    assert intake.host.records.message("a") is None


def test_a_batch_that_cannot_be_recorded_is_rejected_whole_without_files(intake, monkeypatch):
    def broken(entries, state, **how):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(intake.host.records, "intake_batch", broken)
    taken = intake.take_batch([payload("a", "hello"), payload("b", "world")])
    assert answers(taken) == [
        ("reject", "a", "smarthole could not take it: disk I/O error"),
        ("reject", "b", "smarthole could not take it: disk I/O error"),
    ]
    assert not intake.host.inbox.exists() or texts_on_disk(intake.host.inbox) == {}
