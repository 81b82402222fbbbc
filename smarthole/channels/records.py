"""What a channel keeps in the store (its plugin data, named after it), readable from any process.

- ``status``: the channel's state and its own fields (URL, last error...), for status.
- ``message:<message id>``: a message the channel brought in, ``taking`` before its inbox
  entry is written, ``taken`` after; with the external id, the digest of its text (the same
  external id with another text is refused) and what the channel keeps with it.
- ``external:<sha-256 of the external id>``: the message id an external id was taken as.
- ``delivery:<outbox id>``: a :class:`Delivery` owed, ``waiting`` (with its failed attempts
  and the next attempt's time) until it is ``sent``.

``prune`` forgets messages (and their external ids) after ``KEEP_MESSAGES`` and sent
deliveries after ``KEEP_SENT``; a delivery still waiting is never forgotten.

Each write is one SQLite transaction; the daemon's threads and the CLI share the database.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..formats import iso, parse_time
from .base import ChannelState, Delivery

if TYPE_CHECKING:
    from ..db.plugindata import PluginData
    from ..db.store import Store

STATUS_KEY = "status"
MESSAGE = "message:"
EXTERNAL = "external:"
DELIVERY = "delivery:"
WAITING, SENT = "waiting", "sent"
# How long records are kept once they can no longer matter: a sent delivery is never sent
# again, and a message older than this will not be answered any more.
KEEP_SENT = timedelta(days=7)
KEEP_MESSAGES = timedelta(days=30)


@dataclass(frozen=True)
class IntakeEntry:
    """One message's intake record: its id, its external id, its text's digest, its keep."""

    message_id: str
    external_id: str
    digest: str | None = None
    keep: dict[str, Any] = dataclasses.field(default_factory=dict)


class ChannelRecords:
    """One channel's durable records in one home's store."""

    DELIVERY_PREFIXES: tuple[str, ...] = (DELIVERY,)  # what ``prune`` takes for deliveries

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name
        self.data: PluginData = store.plugin_data(name)
        self._deliveries = threading.Lock()  # check-then-set of a delivery is one step

    # -- status ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        value = self.data.get(STATUS_KEY)
        return value if isinstance(value, dict) else {}

    def set_status(self, state: str, **fields: Any) -> None:
        ChannelState(state)  # a state status cannot show is a bug
        status = {**self.status(), **fields, "state": state, "since": self.store.now()}
        self.data.set(STATUS_KEY, status)

    def update_status(self, **fields: Any) -> None:
        """Change fields of the status (counts, the last refusal), not its state."""
        self.data.set(STATUS_KEY, {**self.status(), **fields})

    # -- messages brought in -----------------------------------------------------------------

    def message(self, message_id: str) -> dict[str, Any] | None:
        value = self.data.get(MESSAGE + message_id)
        return value if isinstance(value, dict) else None

    def external(self, external_id: str) -> str | None:
        """The message id ``external_id`` was taken as, if it was."""
        value = self.data.get(EXTERNAL + external_key(external_id))
        return value.get("message_id") if isinstance(value, dict) else None

    def intake(
        self,
        message_id: str,
        external_id: str,
        state: str,
        keep: dict[str, Any],
        digest: str | None = None,
    ) -> None:
        """Record a message ``taking`` (before its inbox entry) or ``taken`` (after): one commit."""
        self.intake_batch([IntakeEntry(message_id, external_id, digest, keep)], state)

    def intake_batch(
        self, entries: Sequence[IntakeEntry], state: str, *, external: bool = True
    ) -> None:
        """Record messages ``taking`` or ``taken``, all in one commit (a burst, one sync).

        ``external=False``: their external ids were recorded with them before (``taking``).
        """
        now = self.store.now()
        with self.store.transaction():
            for entry in entries:
                value: dict[str, Any] = {
                    "state": state,
                    "received_at": now,
                    "external_id": entry.external_id,
                    "keep": entry.keep,
                }
                if entry.digest is not None:
                    value["text_sha256"] = entry.digest
                self.data.set(MESSAGE + entry.message_id, value)
                if external:
                    self.data.set(
                        EXTERNAL + external_key(entry.external_id),
                        {"message_id": entry.message_id, "received_at": now},
                    )

    def origin(self, message_id: str) -> dict[str, Any]:
        """What the channel kept with message ``message_id`` (``Incoming.keep``)."""
        keep = (self.message(message_id) or {}).get("keep")
        return keep if isinstance(keep, dict) else {}

    # -- deliveries ----------------------------------------------------------------------------

    def keep(self, delivery: Delivery) -> bool:
        """Keep a delivery to send; False if it was already kept (or sent)."""
        key = DELIVERY + delivery.outbox_id
        with self._deliveries:
            if self.data.get(key) is not None:
                return False  # ``deliver`` is at least once: a restart may repeat it
            self.data.set(key, {**_fields(delivery), "state": WAITING, "next_at": None})
        return True

    def delivery(self, outbox_id: str) -> dict[str, Any] | None:
        value = self.data.get(DELIVERY + outbox_id)
        return value if isinstance(value, dict) else None

    def owed(self, now: datetime | None = None) -> list[Delivery]:
        """Deliveries not yet sent (due by ``now`` when given), oldest first."""
        found = []
        for key, value in self.data.items(DELIVERY):
            if not isinstance(value, dict):
                continue
            if value.get("state") != WAITING:
                continue
            if now is not None and _later(value.get("next_at"), now):
                continue
            try:
                found.append(_delivery(key.removeprefix(DELIVERY), value))
            except (KeyError, TypeError, ValueError):
                continue  # a record this version cannot read is never sent
        return sorted(found, key=lambda d: parse_time(d.created_at))

    def owed_count(self) -> int:
        """How many deliveries wait to be sent (for status)."""
        return len(self.owed())

    def next_due(self) -> datetime | None:
        """When the earliest waiting delivery is due (None: none waits)."""
        times = []
        for _, value in self.data.items(DELIVERY):
            if not isinstance(value, dict):
                continue
            if value.get("state") == WAITING:
                try:
                    times.append(parse_time(value.get("next_at") or value["created_at"]))
                except (KeyError, TypeError, ValueError):
                    continue
        return min(times, default=None)

    def sent(self, outbox_id: str, **fields: Any) -> None:
        """Recorded as sent: never sent again."""
        self._update(outbox_id, state=SENT, sent_at=self.store.now(), **fields)

    def failed(self, outbox_id: str, error: str, next_at: datetime) -> None:
        """A send failed: waiting again (also when it was recorded sent just before)."""
        value = self.delivery(outbox_id) or {}
        attempts = int(value.get("attempts", 0)) + 1
        self._update(
            outbox_id,
            state=WAITING,
            sent_at=None,
            attempts=attempts,
            last_error=error,
            next_at=iso(next_at),
        )

    def _update(self, outbox_id: str, **fields: Any) -> None:
        with self._deliveries:
            value = self.delivery(outbox_id)
            if value is not None:
                self.data.set(DELIVERY + outbox_id, {**value, **fields})

    # -- housekeeping ----------------------------------------------------------------------------

    def prune(self, now: datetime) -> int:
        """Forget sent deliveries and old messages (with their external ids) that can no
        longer matter; never a delivery still waiting."""
        removed = 0
        records = self.data.items()
        for key, value in records:
            if not isinstance(value, dict):
                continue
            if key.startswith(self.DELIVERY_PREFIXES) and value.get("state") == SENT:
                expired = _older(value.get("sent_at"), now - KEEP_SENT)
            elif key.startswith((MESSAGE, EXTERNAL)):
                expired = _older(value.get("received_at"), now - KEEP_MESSAGES)
            else:
                continue
            if expired:
                self.data.delete(key)
                removed += 1
        return removed + self._prune_undated(records)

    def _prune_undated(self, records: list[tuple[str, Any]]) -> int:
        """External ids of an older version (no time of their own): kept while their message
        record is (a record written since has a time, so none is taken for one of these)."""
        removed = 0
        for key, value in records:
            if not key.startswith(EXTERNAL) or not isinstance(value, dict):
                continue
            message_id = value.get("message_id")
            if "received_at" not in value and self.message(str(message_id)) is None:
                self.data.delete(key)
                removed += 1
        return removed


def external_key(external_id: str) -> str:
    return hashlib.sha256(external_id.encode("utf-8", "surrogatepass")).hexdigest()


def _fields(delivery: Delivery) -> dict[str, Any]:
    fields = dataclasses.asdict(delivery)
    del fields["outbox_id"]  # the record's key names it
    return fields


def _delivery(outbox_id: str, value: dict[str, Any]) -> Delivery:
    parse_time(value["created_at"])  # unreadable: skipped by the caller
    names = {f.name for f in dataclasses.fields(Delivery)} - {"outbox_id"}
    return Delivery(outbox_id=outbox_id, **{k: v for k, v in value.items() if k in names})


def _later(stamp: Any, now: datetime) -> bool:
    try:
        return isinstance(stamp, str) and parse_time(stamp) > now
    except ValueError:
        return False


def _older(stamp: Any, cutoff: datetime) -> bool:
    try:
        return isinstance(stamp, str) and parse_time(stamp) < cutoff
    except ValueError:
        return True
