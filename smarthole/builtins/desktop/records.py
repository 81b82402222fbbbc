"""What the bridge keeps in the store (plugin data ``desktop``), readable from any process.

- ``status``: the bridge's state, URL, name and last error, for ``smarthole status``.
- ``message:<id>``: a message that came from the desktop (its id is the inbox message's id),
  so the replies to it, and only those, go back to the desktop; with the hash of its text, so
  the id sent again with another text is refused.
- ``reply:<outbox id>``: a notification to send, ``waiting`` until it is sent, then ``sent``.
  Kept across restarts: a reply made while the desktop is away goes out after the next
  registration, oldest first.

Each write is one SQLite transaction; the daemon's threads and the CLI share the database.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ...channels.records import (
    DELIVERY,
    KEEP_MESSAGES,
    KEEP_SENT,
    MESSAGE,
    STATUS_KEY,
    ChannelRecords,
)
from ...formats import parse_time
from .protocol import Notification

if TYPE_CHECKING:
    from ...db.store import Store

PLUGIN = "desktop"
REPLY = "reply:"


class BridgeState(StrEnum):
    """The bridge's state in its ``status`` record, as ``smarthole status`` shows it."""

    DISABLED = "disabled"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    ERROR = "error"


class ReplyState(StrEnum):
    """A ``reply:`` record's notification: to send, or sent (at most once)."""

    WAITING = "waiting"
    SENT = "sent"


class MessageRecord(StrEnum):
    """A ``message:`` record: its inbox file about to be written, or written."""

    TAKING = "taking"
    TAKEN = "taken"


__all__ = [
    "KEEP_MESSAGES",
    "KEEP_SENT",
    "MESSAGE",
    "STATUS_KEY",
    "BridgeRecords",
    "BridgeState",
    "MessageRecord",
    "ReplyState",
]


class BridgeRecords(ChannelRecords):
    """The bridge's durable records in one home's store: a channel's, plus its notifications.

    The desktop's message id is the inbox message's id (its external id is its own), so its
    messages are recorded by id alone, with the digest of their text.
    """

    DELIVERY_PREFIXES = (DELIVERY, REPLY)

    def __init__(self, store: Store) -> None:
        super().__init__(store, PLUGIN)
        self._replies = threading.Lock()  # check-then-set of a reply record is one step

    # -- messages from the desktop ------------------------------------------------------------

    def taking(self, digests: Mapping[str, str | None]) -> None:
        """Before the inbox files are written: a crash after it still routes the replies back.

        ``digests`` maps each message id to :func:`text_digest` of its text; one commit.
        """
        self._set_messages(MessageRecord.TAKING, digests)

    def taken(self, digests: Mapping[str, str | None]) -> None:
        """The inbox files are on disk: each id is answered once, however often it comes."""
        self._set_messages(MessageRecord.TAKEN, digests)

    def _set_messages(self, state: MessageRecord, digests: Mapping[str, str | None]) -> None:
        now = self.store.now()
        with self.store.transaction():
            for message_id, digest in digests.items():
                value = {"state": state, "received_at": now}
                if digest is not None:
                    value["text_sha256"] = digest
                self.data.set(MESSAGE + message_id, value)

    # -- notifications ----------------------------------------------------------------------

    def queue(self, notification: Notification) -> bool:
        """Keep a notification to send; False if this reply was already kept (or sent)."""
        key = REPLY + notification.outbox_id
        with self._replies:
            if self.data.get(key) is not None:
                return False  # ``deliver`` is at least once: a restart may repeat it
            self.data.set(key, {**_notification_fields(notification), "state": ReplyState.WAITING})
        return True

    def waiting(self) -> list[Notification]:
        """Notifications not yet sent, oldest first."""
        found = []
        for key, value in self.data.items():
            if (
                key.startswith(REPLY)
                and isinstance(value, dict)
                and value.get("state") == ReplyState.WAITING
            ):
                try:
                    found.append(_notification(key.removeprefix(REPLY), value))
                except (KeyError, TypeError, ValueError):
                    continue  # a record this version cannot read is never sent
        return sorted(found, key=lambda n: parse_time(n.created_at))

    def owed_count(self) -> int:
        return len(self.waiting())

    def mark(self, notification: Notification, state: ReplyState) -> None:
        """``sent`` before the frame goes out (at most once), ``waiting`` if it did not."""
        fields = {**_notification_fields(notification), "state": state}
        if state == ReplyState.SENT:
            fields["sent_at"] = self.store.now()
        self.data.set(REPLY + notification.outbox_id, fields)


def text_digest(text: str) -> str:
    """What tells two texts of one message id apart: the text as the inbox keeps it."""
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()


def _notification_fields(notification: Notification) -> dict[str, Any]:
    fields = dataclasses.asdict(notification)
    del fields["outbox_id"]  # the record's key names it
    return fields


def _notification(outbox_id: str, value: dict[str, Any]) -> Notification:
    parse_time(value["created_at"])  # unreadable: skipped by the caller
    return Notification(
        outbox_id=outbox_id,
        desktop_id=str(value["desktop_id"]),
        kind=str(value["kind"]),
        text=str(value["text"]),
        conversation=value.get("conversation"),
        created_at=value["created_at"],
    )


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
        "notifications_waiting": len(records.waiting()),
    }
