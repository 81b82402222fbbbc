"""What the bridge keeps in the store (plugin data ``desktop``): a channel's records
(``smarthole.channels.records``), readable from any process.

- ``status``: the bridge's state, URL, name and last error, for ``smarthole status``.
- ``message:<id>``: a message that came from the desktop (its id is both its external id and
  the inbox message's id), so the replies to it, and only those, go back to the desktop; with
  the digest of its text, so the id sent again with another text is refused.
- ``delivery:<outbox id>``: a notification owed, ``waiting`` until it is ``sent``. Kept across
  restarts: a reply made while the desktop is away goes out after the next registration,
  oldest first.

A version before this one kept its notifications as ``reply:<outbox id>``;
:meth:`BridgeRecords.upgrade` makes them deliveries once, at start, in one commit.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from ...channels import ChannelRecords, ChannelState, Delivery
from ...channels.records import (
    DELIVERY,
    KEEP_MESSAGES,
    KEEP_SENT,
    MESSAGE,
    STATUS_KEY,
    WAITING,
)
from ...formats import parse_time

if TYPE_CHECKING:
    from ...db.store import Store

logger = logging.getLogger(__name__)

PLUGIN = "desktop"
REPLY = "reply:"  # an older version's notification record


BridgeState = ChannelState
"""The bridge's state in its ``status`` record: a channel's (its older name, kept for plugins)."""


__all__ = [
    "KEEP_MESSAGES",
    "KEEP_SENT",
    "MESSAGE",
    "STATUS_KEY",
    "BridgeRecords",
    "BridgeState",
]


class BridgeRecords(ChannelRecords):
    """The bridge's durable records in one home's store: a channel's, named ``desktop``."""

    def __init__(self, store: Store) -> None:
        super().__init__(store, PLUGIN)

    def upgrade(self) -> int:
        """Make an older version's ``reply:`` records deliveries, in one commit; how many.

        A waiting one is sent as any delivery; a sent one stays sent (a repeated ``deliver``
        of its outbox item is not kept again). One this version cannot read is left alone.
        """
        replies = self.data.items(REPLY)
        moved = 0
        with self.store.transaction():
            for key, value in replies:
                outbox_id = key.removeprefix(REPLY)
                record = _delivery_record(outbox_id, value)
                if record is None:
                    logger.warning("desktop: cannot read the old record %s; left as it is", key)
                    continue
                if self.delivery(outbox_id) is None:
                    self.data.set(DELIVERY + outbox_id, record)
                self.data.delete(key)
                moved += 1
        if moved:
            logger.info("desktop: %d notification record(s) of an older version upgraded", moved)
        return moved

    def old_waiting(self) -> int:
        """Notifications an older version left waiting, not yet upgraded (for status)."""
        found = 0
        for key, value in self.data.items(REPLY):
            record = _delivery_record(key.removeprefix(REPLY), value)
            found += record is not None and record["state"] == WAITING
        return found


def _delivery_record(outbox_id: str, value: Any) -> dict[str, Any] | None:
    """A ``delivery:`` record's value for an old ``reply:`` record's (None: unreadable)."""
    try:
        parse_time(value["created_at"])
        delivery = Delivery(
            outbox_id=outbox_id,
            message_id=str(value["desktop_id"]),
            conversation=value.get("conversation"),
            kind=str(value["kind"]),
            text=str(value["text"]),
            created_at=value["created_at"],
        )
        state = value["state"]
    except (KeyError, TypeError, ValueError):
        return None
    fields = dataclasses.asdict(delivery)
    del fields["outbox_id"]  # the record's key names it
    record = {**fields, "state": state, "next_at": None}
    if "sent_at" in value:
        record["sent_at"] = value["sent_at"]
    return record


def bridge_report(
    store: Store, *, enabled: bool, running: bool, url: str, name: str
) -> dict[str, Any]:
    """The bridge's part of ``smarthole status``: state, URL, name, last error, waiting."""
    records = BridgeRecords(store)
    status = records.status()
    if not enabled:
        state, last_error = BridgeState.DISABLED, None
    elif not running:
        state, last_error = BridgeState.ERROR, "the daemon is not running"
    else:  # what the running daemon uses, which may differ from an edited config.toml
        known = status.get("state") in set(BridgeState)
        state = BridgeState(status["state"]) if known else BridgeState.CONNECTING
        last_error = status.get("last_error")
        url, name = status.get("url", url), status.get("name", name)
    return {
        "state": state,
        "url": url,
        "name": name,
        "last_error": last_error,
        "since": status.get("since") if enabled and running else None,
        "notifications_waiting": records.owed_count() + records.old_waiting(),
    }
