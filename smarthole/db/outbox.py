"""The outbox table: each message for the user, planned, written, then delivered.

An item is first *planned* (a row with its final file name), then *written*, then *delivered*;
a turn's final reply, whose name comes from stored data, is recorded once, as delivered.
``smarthole.pipeline.outbox`` does the writing and delivering. :class:`OutboxItem` is what
plugins receive in ``deliver``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, Unpack

from ..formats import FRONT_MATTER_FENCE, compact_json, dumps_toml, iso, parse_time
from ..fsutil import child
from .records import from_row
from .states import OutboxKind, OutboxState

if TYPE_CHECKING:
    from ..home import Home
    from .store import Store

logger = logging.getLogger(__name__)


class ItemFields(TypedDict):
    """What a caller says about a new outbox item; the store adds its id, file and time."""

    in_reply_to: str
    conversation: str | None
    channel: str
    turn: int | None
    kind: OutboxKind
    text: str
    waiting_for_reply: NotRequired[bool]
    retry_of: NotRequired[str | None]
    extra: NotRequired[dict[str, Any] | None]


@dataclass(frozen=True)
class OutboxItem:
    """One message for the user, as written to the outbox and handed to ``deliver``."""

    id: str
    in_reply_to: str
    conversation: str | None
    channel: str
    turn: int | None
    kind: OutboxKind
    waiting_for_reply: bool
    text: str
    path: Path
    created_at: datetime
    # The id of the error reply this final reply follows, after `smarthole retry` of a dead
    # message: the one message then has two final replies, and this says why.
    retry_of: str | None = None
    # More front matter for a kind that carries it (an approval's id, tool, hash, expiry...).
    extra: dict[str, Any] | None = None

    @property
    def final(self) -> bool:
        return self.kind.final

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
            "retry_of": self.retry_of,
            **(self.extra or {}),
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
        return from_row(
            OutboxItem,
            row,
            conversation=row["conversation_id"],
            kind=OutboxKind(row["kind"]),
            waiting_for_reply=bool(row["waiting_for_reply"]),
            path=child(self.folder, row["file_name"]),
            times=("created_at",),
            extra=json.loads(row["extra"]) if row["extra"] else None,
        )

    def items_for(self, in_reply_to: str) -> list[OutboxItem]:
        """Every written item replying to one inbox message, oldest first."""
        return self._written("in_reply_to", in_reply_to)

    def items_for_conversation(self, conversation_id: str) -> list[OutboxItem]:
        """Every written item of one conversation, oldest first."""
        return self._written("conversation_id", conversation_id)

    def _written(self, column: str, value: str) -> list[OutboxItem]:
        assert column in ("in_reply_to", "conversation_id"), column
        rows = self.store.query(
            f"SELECT * FROM outbox WHERE {column} = ? AND state != {OutboxState.PLANNED.sql} "
            "ORDER BY created_at, rowid",
            (value,),
        )
        return [self._item(row) for row in rows]

    def item(self, item_id: str, created_at: datetime, **item: Unpack[ItemFields]) -> OutboxItem:
        """The item of these fields, its file name fixed by its id and time."""
        return OutboxItem(
            id=item_id,
            in_reply_to=item["in_reply_to"],
            conversation=item["conversation"],
            channel=item["channel"],
            turn=item["turn"],
            kind=OutboxKind(item["kind"]),  # a kind that is none raises
            waiting_for_reply=bool(item.get("waiting_for_reply", False)),
            text=item["text"],
            path=child(self.folder, file_name(created_at, item_id)),
            created_at=created_at,
            retry_of=item.get("retry_of"),
            extra=item.get("extra"),
        )

    def plan(self, item_id: str, **item: Unpack[ItemFields]) -> tuple[OutboxItem, OutboxState]:
        """Record an item under a fixed id (once); returns it and its state."""
        planned = self.item(item_id, parse_time(self.store.now()), **item)
        with self.store.transaction() as db:
            if self.record(planned, OutboxState.PLANNED, db=db):
                return planned, OutboxState.PLANNED
            # Planned by an earlier attempt: that item, under its own time and file name.
            row = db.execute("SELECT * FROM outbox WHERE id = ?", (item_id,)).fetchone()
        return self._item(row), OutboxState(row["state"])

    def record(self, item: OutboxItem, state: OutboxState, *, db: sqlite3.Connection) -> bool:
        """Insert ``item`` in ``state`` (in ``db``'s transaction); False if its id is taken."""
        inserted = db.execute(
            "INSERT INTO outbox (id, in_reply_to, conversation_id, channel, turn, kind, "
            "waiting_for_reply, text, file_name, created_at, state, retry_of, extra) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (
                item.id,
                item.in_reply_to,
                item.conversation,
                item.channel,
                item.turn,
                item.kind,
                int(item.waiting_for_reply),
                item.text,
                item.path.name,
                iso(item.created_at),
                state,
                item.retry_of,
                compact_json(item.extra) if item.extra else None,
            ),
        )
        return inserted.rowcount == 1

    def mark(
        self, item_id: str, state: OutboxState, *, db: sqlite3.Connection | None = None
    ) -> None:
        """Move an item to ``written`` or ``delivered`` (inside ``db``'s transaction if given)."""
        with self.store.transaction() as connection:
            (db or connection).execute("UPDATE outbox SET state = ? WHERE id = ?", (state, item_id))

    def get(self, item_id: str) -> tuple[OutboxItem, OutboxState] | None:
        """An item and its state, if it was planned."""
        row = self.store.query_one("SELECT * FROM outbox WHERE id = ?", (item_id,))
        return (self._item(row), OutboxState(row["state"])) if row else None

    def undelivered(self) -> list[OutboxItem]:
        """Items a crash left planned or written but not delivered."""
        rows = self.store.query(
            f"SELECT * FROM outbox WHERE state != {OutboxState.DELIVERED.sql} "
            "ORDER BY created_at, rowid"
        )
        return [self._item(row) for row in rows]
