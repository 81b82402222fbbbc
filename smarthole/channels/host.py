"""What smarthole gives a running channel: intake exactly once, deliveries kept, its status.

**Intake** (:meth:`ChannelHost.take`): the record of the external id commits (``taking``)
before the inbox entry is written (a file, or a folder with the attachments, temp name, fsync,
rename), and ``taken`` after. A crash between the two writes the entry again when the channel
offers the message again; the ledger then takes it once (the same id and text is a duplicate).
The channel acknowledges the message in its own world (a mail marked ``\\Seen``, a frame
acked) only once ``take`` returned: a crash before leaves it offered again, never lost.

**Delivery**: an outbox item answering a message the channel brought in is kept as a
:class:`Delivery` before the channel is woken (:meth:`keep`); the channel sends what is
:meth:`due` and records each as :meth:`sent` (never sent again) or :meth:`failed` (tried again
after the shared backoff). A restart sends what the records still owe.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..attachments import accept
from ..backoff import Backoff
from ..config import AttachmentSettings
from ..errors import MessageError
from ..pipeline.inbox import drop_messages
from ..pipeline.incoming import drop_folder_message
from ..pipeline.message import parse_message, render_message_file
from .base import Delivery, Incoming, Taken, derived_message_id
from .records import ChannelRecords

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..db.outbox import OutboxItem

logger = logging.getLogger(__name__)

# A failed send is tried again after 5 s, doubling to 10 minutes, a tenth of jitter.
DELIVERY_RETRY = Backoff(base=5.0, cap=600.0, jitter=0.1)
TAKING, TAKEN = "taking", "taken"


@dataclass(eq=False)
class ChannelHost:
    """One channel's view of the home: its records, the inbox, the clock."""

    name: str
    records: ChannelRecords
    inbox: Path
    max_bytes: int  # [inbox] max_message_bytes: the text file
    attachments: AttachmentSettings = field(default_factory=AttachmentSettings)
    clock: Callable[[], datetime] | None = None
    emit: Callable[..., object] | None = None  # ``emit(type, **fields)``: an event
    retry: Backoff = DELIVERY_RETRY

    def now(self) -> datetime:
        return self.clock() if self.clock is not None else self.records.store.clock()

    # -- intake --------------------------------------------------------------------------------

    def take(self, incoming: Incoming) -> Taken:
        """Put ``incoming`` into the inbox once; ``MessageError`` says why it cannot be taken
        (nothing is recorded then: offered again, it is refused again)."""
        external = incoming.external_id
        message_id = self.records.external(external) or incoming.message_id
        message_id = message_id or derived_message_id(self.name, external)
        known = self.records.message(message_id)
        if known is not None and known.get("state") == TAKEN:
            return Taken(message_id, None, duplicate=True)
        fields = self._fields(incoming)
        data = self._checked(message_id, incoming, fields)
        self.records.intake(message_id, external, TAKING, incoming.keep)
        path = self._write(message_id, incoming, fields, data)
        self.records.intake(message_id, external, TAKEN, incoming.keep)
        logger.info("%s: message %s is in the inbox as %s", self.name, message_id, path.name)
        return Taken(message_id, path)

    def _fields(self, incoming: Incoming) -> dict[str, Any]:
        fields = {
            "channel": incoming.channel or self.name,
            "conversation": incoming.conversation,
            "new_conversation": incoming.new_conversation,
            "timestamp": incoming.timestamp,
            "metadata": incoming.metadata or None,
            **incoming.fields,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def _checked(self, message_id: str, incoming: Incoming, fields: dict[str, Any]) -> bytes:
        """The text file's bytes, checked as the daemon will check them."""
        try:
            data = render_message_file(incoming.text, id=message_id, **fields)
        except Exception as exc:  # a value TOML cannot hold
            raise MessageError(f"cannot be written as an inbox file: {exc}") from exc
        if len(data) > self.max_bytes:
            raise MessageError(
                f"the message is too large ({len(data)} bytes; the limit is {self.max_bytes})"
            )
        text = incoming.text if incoming.text.strip() else "-"
        parse_message(
            f"{self.name}.md",
            render_message_file(text, id=message_id, **fields),
            modified=self.now(),
        )
        limits = self.attachments
        if len(incoming.attachments) > limits.max_count:
            raise MessageError(
                f"{len(incoming.attachments)} attachments is more than max_count "
                f"({limits.max_count})"
            )
        total = sum(len(data) for _, data in incoming.attachments)
        if total > limits.max_message_bytes:
            raise MessageError(
                f"the attachments come to {total} bytes, more than max_message_bytes "
                f"({limits.max_message_bytes})"
            )
        for name, blob in incoming.attachments:
            accept(name, blob, limits)
        return data

    def _write(
        self, message_id: str, incoming: Incoming, fields: dict[str, Any], data: bytes
    ) -> Path:
        if incoming.attachments:
            return drop_folder_message(
                self.inbox, incoming.text, list(incoming.attachments), message_id=message_id,
                **fields,
            )  # fmt: skip
        (written,) = drop_messages(self.inbox, [(message_id, data)])
        if isinstance(written, OSError):
            raise written
        return written

    # -- delivery ------------------------------------------------------------------------------

    def keep(self, item: OutboxItem) -> bool:
        """Keep ``item`` as a delivery owed; False if it was kept before."""
        origin = self.records.origin(item.in_reply_to)
        return self.records.keep(Delivery.of(item, origin))

    def due(self) -> list[Delivery]:
        """What to send now, oldest first."""
        return self.records.owed(self.now())

    def waiting(self) -> list[Delivery]:
        """Everything not yet sent, due or not."""
        return self.records.owed()

    def next_due(self) -> datetime | None:
        return self.records.next_due()

    def sent(self, delivery: Delivery, **fields: Any) -> None:
        """``delivery`` went out: recorded, it is never sent again."""
        self.records.sent(delivery.outbox_id, **fields)

    def failed(self, delivery: Delivery, error: str) -> datetime:
        """A send failed: tried again after the shared backoff; returns when."""
        wait = self.retry.delay(delivery.attempts + 1)
        next_at = self.now() + timedelta(seconds=wait)
        self.records.failed(delivery.outbox_id, error, next_at)
        logger.warning(
            "%s: sending %s failed (%s); trying again in %.0fs",
            self.name,
            delivery.outbox_id,
            error,
            wait,
        )
        return next_at

    # -- status --------------------------------------------------------------------------------

    def set_status(self, state: str, **fields: Any) -> None:
        self.records.set_status(state, **fields)

    def event(self, type: str, **fields: Any) -> None:
        if self.emit is not None:
            self.emit(type, **fields)


def due_in(host: ChannelHost, most: float) -> float:
    """Seconds until the next delivery is due, at most ``most`` (0: one is due now)."""
    next_at = host.next_due()
    if next_at is None:
        return most
    return max(0.0, min(most, (next_at - host.now()).total_seconds()))
