"""Outbox files: every message for the user, written atomically, then delivered by plugins.

A file is ``outbox/<UTC timestamp>-<id>.md``: TOML front matter between ``+++`` lines, then
the text. Writing is idempotent by item id: an item is first *planned* (a row with its final
file name), then *written* (temp file, fsync, rename), then *delivered* (the ``deliver`` hook).
A turn's final reply skips the first two commits: its id and time come from what the turn
stored, so every attempt gives it the same file name, and the commit that completes the turn
records it, delivered. Whatever a crash interrupts is finished on the next attempt under the
same id and file name, so a reply is never written twice.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Unpack

from ..db.outbox import ItemFields, OutboxItem, OutboxRecord
from ..db.states import OutboxState
from ..formats import new_id
from ..fsutil import atomic_write

if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime

    from ..app import App
    from ..db.events import EventLog

logger = logging.getLogger(__name__)


class Outbox(OutboxRecord):
    """Plans, writes and delivers outbox items of one home."""

    def __init__(self, app: App, events: EventLog) -> None:
        super().__init__(app.home, app.store)
        self.app = app
        self.plugins = app.plugins
        self.events = events

    def send(self, *, item_id: str | None = None, **item: Unpack[ItemFields]) -> OutboxItem:
        """Plan, write and deliver one item; calling again with the same id does no more."""
        planned, state = self.plan(item_id or new_id(), **item)
        self._complete(planned, state)
        return planned

    def hand_over_final(
        self,
        *,
        item_id: str,
        at: datetime,
        fresh: bool,
        deliver: bool = True,
        **item: Unpack[ItemFields],
    ) -> OutboxItem:
        """Write and deliver a turn's final reply, timed ``at`` (a stored message's time), with
        no commit: the caller's completion commit records it (:meth:`record_delivered`).

        A crash before that commit finds the same file in place next time and delivers it
        again. An item an earlier attempt planned (an error reply it gave up with) is finished
        as planned; a ``fresh`` turn (begun by this attempt) has none to look up. Without
        ``deliver`` (a schedule's ``deliver = false``) the file is written, the hook not called.
        """
        found = None if fresh else self.get(item_id)
        if found is not None:
            self._hand_over(*found)
            return found[0]
        final = self.item(item_id, at, **item)
        if not final.path.exists():
            self._write_file(final)
        if deliver:
            self.plugins.notify("deliver", outbox_item=final, app=self.app)
        return final

    def record_delivered(self, item: OutboxItem, *, db: sqlite3.Connection) -> None:
        """Record a handed-over item as delivered, in the caller's transaction."""
        if self.record(item, OutboxState.DELIVERED, db=db):
            self._written_event(item, db)
        else:
            self.mark(item.id, OutboxState.DELIVERED, db=db)

    def hand_over(self, *, item_id: str, **item: Unpack[ItemFields]) -> OutboxItem:
        """Plan, write and deliver one item like :meth:`send`, but leave recording its delivery
        to the caller's next commit (``mark(id, DELIVERED, db=...)``): an error reply's
        delivery commits with its failed turn. A crash before that delivers it again."""
        planned, state = self.plan(item_id, **item)
        self._hand_over(planned, state)
        return planned

    def _complete(self, item: OutboxItem, state: OutboxState) -> None:
        if self._hand_over(item, state):
            self.mark(item.id, OutboxState.DELIVERED)

    def _hand_over(self, item: OutboxItem, state: OutboxState) -> bool:
        """Write the item if it is only planned, and hand it to the ``deliver`` hook unless
        that was recorded; returns whether the hook ran."""
        if state is OutboxState.PLANNED:
            self._write(item)
        if state is OutboxState.DELIVERED:
            return False
        self.plugins.notify("deliver", outbox_item=item, app=self.app)
        return True

    def _write(self, item: OutboxItem) -> None:
        self._write_file(item)
        with self.store.transaction() as db:
            self.mark(item.id, OutboxState.WRITTEN, db=db)
            self._written_event(item, db)

    def _write_file(self, item: OutboxItem) -> None:
        assert not self.store.in_transaction(), "file work under the store's lock"
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(item.path, item.render())
        logger.info("wrote %s reply %s to %s", item.kind, item.id, item.path.name)

    def _written_event(self, item: OutboxItem, db: sqlite3.Connection) -> None:
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

    def finish(self, item_id: str) -> None:
        """Write and deliver a planned or written item (crash recovery)."""
        found = self.get(item_id)
        if found is not None:
            self._complete(*found)
