"""Outbox files: every message for the user, written atomically, then delivered by plugins.

A file is ``outbox/<UTC timestamp>-<id>.md``: TOML front matter between ``+++`` lines, then
the text. Writing is idempotent by item id: an item is first *planned* (a row with its final
file name), then *written* (temp file, fsync, rename), then *delivered* (the ``deliver`` hook).
Whatever a crash interrupts is finished on the next attempt under the same id and file name, so
a reply is never written twice.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .formats import FRONT_MATTER_FENCE, dumps_toml, iso, new_id, parse_time
from .fsutil import atomic_write

if TYPE_CHECKING:
    from .db.events import EventLog
    from .db.store import Store
    from .home import Home
    from .plugins import Plugins

logger = logging.getLogger(__name__)

KINDS = ("response", "message", "question", "error")
FINAL_KINDS = ("response", "error")


@dataclass(frozen=True)
class OutboxItem:
    """One message for the user, as written to the outbox and handed to ``deliver``."""

    id: str
    in_reply_to: str
    conversation: str | None
    channel: str
    turn: int | None
    kind: str
    waiting_for_reply: bool
    text: str
    path: Path
    created_at: datetime

    @property
    def final(self) -> bool:
        return self.kind in FINAL_KINDS

    def front_matter(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "id": self.id,
            "in_reply_to": self.in_reply_to,
            "conversation": self.conversation,
            "channel": self.channel,
            "turn": self.turn,
            "kind": self.kind,
            "waiting_for_reply": self.waiting_for_reply,
            "created_at": self.created_at,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def render(self) -> bytes:
        header = dumps_toml(self.front_matter())
        return f"{FRONT_MATTER_FENCE}\n{header}{FRONT_MATTER_FENCE}\n{self.text}\n".encode()

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (webhooks, ``--json`` output)."""
        return {
            **self.front_matter(),
            "conversation": self.conversation,
            "turn": self.turn,
            "created_at": iso(self.created_at),
            "text": self.text,
            "path": str(self.path),
        }


def file_name(created_at: datetime, item_id: str) -> str:
    stamp = iso(created_at).replace(":", "-")
    return f"{stamp}-{item_id}.md"


class OutboxRecord:
    """Reads the store's record of what the outbox holds (usable from any process)."""

    def __init__(self, home: Home, store: Store) -> None:
        self.folder = home.outbox
        self.store = store

    def _item(self, row: sqlite3.Row) -> OutboxItem:
        return OutboxItem(
            id=row["id"],
            in_reply_to=row["in_reply_to"],
            conversation=row["conversation_id"],
            channel=row["channel"],
            turn=row["turn"],
            kind=row["kind"],
            waiting_for_reply=bool(row["waiting_for_reply"]),
            text=row["text"],
            path=self.folder / row["file_name"],
            created_at=parse_time(row["created_at"]),
        )

    def items_for(self, in_reply_to: str) -> list[OutboxItem]:
        """Every written item replying to one inbox message, oldest first."""
        rows = self.store.query(
            "SELECT * FROM outbox WHERE in_reply_to = ? AND state != "
            "'planned' ORDER BY created_at, rowid",
            (in_reply_to,),
        )
        return [self._item(row) for row in rows]

    def items_for_conversation(self, conversation_id: str) -> list[OutboxItem]:
        rows = self.store.query(
            "SELECT * FROM outbox WHERE conversation_id = ? AND state != "
            "'planned' ORDER BY created_at, rowid",
            (conversation_id,),
        )
        return [self._item(row) for row in rows]


class Outbox(OutboxRecord):
    """Plans, writes and delivers outbox items of one home."""

    def __init__(self, home: Home, store: Store, plugins: Plugins, events: EventLog) -> None:
        super().__init__(home, store)
        self.plugins = plugins
        self.events = events

    def send(
        self,
        *,
        item_id: str | None = None,
        in_reply_to: str,
        conversation: str | None,
        channel: str,
        turn: int | None,
        kind: str,
        text: str,
        waiting_for_reply: bool = False,
    ) -> OutboxItem:
        """Plan, write and deliver one item; calling again with the same id does no more."""
        assert kind in KINDS, kind
        item, state = self._plan(
            item_id or new_id(),
            in_reply_to,
            conversation,
            channel,
            turn,
            kind,
            text,
            waiting_for_reply,
        )
        self._complete(item, state)
        return item

    def _complete(self, item: OutboxItem, state: str) -> None:
        if state == "planned":
            self._write(item)
        if state in ("planned", "written"):
            self._deliver(item)

    def _plan(
        self,
        item_id: str,
        in_reply_to: str,
        conversation: str | None,
        channel: str,
        turn: int | None,
        kind: str,
        text: str,
        waiting_for_reply: bool,
    ) -> tuple[OutboxItem, str]:
        created_at = self.store.now()
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO outbox (id, in_reply_to, conversation_id, channel, turn, kind, "
                "waiting_for_reply, text, file_name, created_at, state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'planned') ON CONFLICT (id) DO NOTHING",
                (
                    item_id,
                    in_reply_to,
                    conversation,
                    channel,
                    turn,
                    kind,
                    int(waiting_for_reply),
                    text,
                    file_name(parse_time(created_at), item_id),
                    created_at,
                ),
            )
            row = db.execute("SELECT * FROM outbox WHERE id = ?", (item_id,)).fetchone()
        return self._item(row), row["state"]

    def _write(self, item: OutboxItem) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(item.path, item.render())
        with self.store.transaction() as db:
            db.execute("UPDATE outbox SET state = 'written' WHERE id = ?", (item.id,))
            self.events.emit(
                "reply_written",
                conversation=item.conversation,
                channel=item.channel,
                turn=item.turn,
                message_id=item.in_reply_to,
                db=db,
                outbox_id=item.id,
                kind=item.kind,
                path=str(item.path),
                waiting_for_reply=item.waiting_for_reply,
            )
        logger.info("wrote %s reply %s to %s", item.kind, item.id, item.path.name)

    def _deliver(self, item: OutboxItem) -> None:
        self.plugins.notify("deliver", outbox_item=item)
        with self.store.transaction() as db:
            db.execute("UPDATE outbox SET state = 'delivered' WHERE id = ?", (item.id,))

    def undelivered(self) -> list[OutboxItem]:
        """Items a crash left planned or written but not delivered."""
        rows = self.store.query(
            "SELECT * FROM outbox WHERE state != 'delivered' ORDER BY created_at, rowid"
        )
        return [self._item(row) for row in rows]

    def finish(self, item_id: str) -> None:
        """Write and deliver a planned or written item (crash recovery)."""
        row = self.store.query_one("SELECT * FROM outbox WHERE id = ?", (item_id,))
        if row is None:
            return
        self._complete(self._item(row), row["state"])
