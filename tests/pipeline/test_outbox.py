"""A turn's final reply: written and delivered before the commit that records it, once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from smarthole import hookimpl
from smarthole.app import App
from smarthole.daemon.runtime import Runtime
from smarthole.home import Home
from smarthole.pipeline.outbox import Outbox

AT = datetime(2026, 11, 24, 5, 6, 7, 890123, tzinfo=UTC)


class Deliveries:
    def __init__(self) -> None:
        self.items: list[Any] = []

    @hookimpl
    def deliver(self, outbox_item: Any) -> None:
        self.items.append(outbox_item)


@pytest.fixture
def outbox(home: Path) -> Iterator[tuple[Outbox, Deliveries]]:
    deliveries = Deliveries()
    app = App.load(Home.resolve(home), extra_plugins=[("deliveries", deliveries)])
    yield Runtime.of(app).outbox, deliveries
    app.close()


def final(item_id: str = "f1", text: str = "The reply.") -> dict[str, Any]:
    return {
        "item_id": item_id,
        "in_reply_to": "m1",
        "conversation": "c1",
        "channel": "default",
        "turn": 1,
        "kind": "response",
        "text": text,
    }


def rows(outbox: Outbox, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in outbox.store.query(sql)]


def test_a_final_reply_is_recorded_once_by_the_commit_that_follows_it(outbox):
    box, deliveries = outbox
    item = box.hand_over_final(**final(), at=AT, fresh=True)
    assert item.path.read_text().endswith("The reply.\n")
    assert "2026-11-24T05-06-07.890123Z" in item.path.name  # named by its stored time
    assert rows(box, "SELECT id FROM outbox") == []  # nothing committed before the turn's end
    with box.store.transaction() as db:
        box.record_delivered(item, db=db)
    assert rows(box, "SELECT id, state, file_name FROM outbox") == [
        ("f1", "delivered", item.path.name)
    ]
    assert rows(box, "SELECT type FROM events") == [("reply_written",)]
    assert [d.id for d in deliveries.items] == ["f1"]


def test_an_attempt_after_a_crash_finds_its_reply_in_place_and_delivers_it_again(outbox):
    box, deliveries = outbox
    first = box.hand_over_final(**final(), at=AT, fresh=True)
    written = first.path.stat()
    # The crash came before the commit: the next attempt has the same stored time.
    again = box.hand_over_final(**final(), at=AT, fresh=False)
    assert again == first
    assert again.path.stat().st_ino == written.st_ino  # not written a second time
    assert [p.name for p in box.folder.iterdir()] == [first.path.name]
    assert len(deliveries.items) == 2  # delivery is at least once
    with box.store.transaction() as db:
        box.record_delivered(again, db=db)
    assert rows(box, "SELECT state FROM outbox") == [("delivered",)]


def test_a_reply_an_earlier_attempt_planned_is_finished_as_planned(outbox):
    box, deliveries = outbox
    planned = box.hand_over(**final(text="Sorry, I could not answer."))  # planned and written
    later = box.hand_over_final(**final(text="A later answer."), at=AT, fresh=False)
    assert later == planned
    assert [p.name for p in box.folder.iterdir()] == [planned.path.name]
    with box.store.transaction() as db:
        box.record_delivered(later, db=db)
    assert rows(box, "SELECT text, state FROM outbox") == [
        ("Sorry, I could not answer.", "delivered")
    ]
    events = rows(box, "SELECT type FROM events")
    assert events == [("reply_written",)]  # written once, by the planned path
    assert len(deliveries.items) == 2
