"""What smarthole gives a running channel: intake exactly once, deliveries kept, its status.

**Intake** (:meth:`ChannelHost.take`, :meth:`ChannelHost.take_batch` for a burst): the record
of the external id commits (``taking``) before the inbox entry is written (a file, or a folder
with the attachments, temp name, fsync, rename), and ``taken`` after. A crash between the two
writes the entry again when the channel offers the message again; the ledger then takes it
once (the same id and text is a duplicate). The record keeps the digest of the text: a known
external id offered with another text is refused (``MessageError``), as the daemon refuses an
inbox id used again for another message. The channel acknowledges the message in its own world
(a mail marked ``\\Seen``, a frame acked) only once ``take`` returned: a crash before leaves
it offered again, never lost.

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
from ..pipeline.inbox import REUSED_ID, drop_messages
from ..pipeline.incoming import drop_folder_message
from ..pipeline.message import parse_message, render_message_file
from .base import Delivery, Incoming, Taken, derived_message_id, text_digest
from .records import ChannelRecords, IntakeEntry

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..db.ledger import Ledger
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
    ledger: Ledger | None = None  # what an id was claimed with, for records without a digest
    retry: Backoff = DELIVERY_RETRY

    def now(self) -> datetime:
        return self.clock() if self.clock is not None else self.records.store.clock()

    # -- intake --------------------------------------------------------------------------------

    def take(self, incoming: Incoming) -> Taken:
        """Put ``incoming`` into the inbox once; ``MessageError`` says why it cannot be taken
        (nothing is recorded then: offered again, it is refused again)."""
        (outcome,) = self.take_batch([incoming])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def take_batch(self, batch: Sequence[Incoming]) -> list[Taken | Exception]:
        """Take messages in order, as one durable batch: what each came to, in the same order.

        One commit of ``taking`` records, the entries (each file synced, the folder once),
        one commit of ``taken``: a burst costs two commits, not two a message. Each outcome is
        a :class:`Taken`, a ``MessageError`` (refused: offered again, refused again), an
        ``OSError`` (its inbox entry could not be written) or what the store raised (the
        records could not be written): for those two it is not taken; offer it again later.
        """
        planned: dict[str, _Plan] = {}
        screened = [self._screen(incoming, planned) for incoming in batch]
        stored = self._store(list(planned.values()))
        outcomes: list[Taken | Exception] = []
        for outcome in screened:
            if isinstance(outcome, _Plan):
                outcomes.append(stored[outcome.message_id])
            elif isinstance(outcome, _Again):
                first = stored[outcome.message_id]
                again = Taken(outcome.message_id, None, duplicate=True)
                outcomes.append(first if isinstance(first, Exception) else again)
            else:
                outcomes.append(outcome)
        return outcomes

    def _screen(
        self, incoming: Incoming, planned: dict[str, _Plan]
    ) -> Taken | MessageError | _Plan | _Again:
        """What to do with one message: a duplicate, a refusal, an entry to write, or the
        same message as one earlier in the batch."""
        external = incoming.external_id
        message_id = self.records.external(external) or incoming.message_id
        message_id = message_id or derived_message_id(self.name, external)
        digest = text_digest(incoming.text)
        earlier = planned.get(message_id)
        if earlier is not None:
            return _Again(message_id) if earlier.digest == digest else MessageError(REUSED_ID)
        known = self.records.message(message_id)
        if digest != self._known_digest(message_id, known, digest):
            return MessageError(REUSED_ID)
        if known is not None and known.get("state") == TAKEN:
            logger.info("%s: message %s came again; taken once", self.name, message_id)
            return Taken(message_id, None, duplicate=True)
        fields = self._fields(incoming)
        try:
            data = self._checked(message_id, incoming, fields)
        except MessageError as exc:
            return exc
        planned[message_id] = _Plan(message_id, incoming, fields, data, digest)
        return planned[message_id]

    def _known_digest(self, message_id: str, known: dict[str, Any] | None, digest: str) -> str:
        """The digest of the text ``message_id`` was first taken with; ``digest`` if none.

        A record of a version before digests has none: the ledger has the text once the
        daemon claimed the entry (so it has for an id an inbox file used).
        """
        if known is not None and isinstance(known.get("text_sha256"), str):
            return str(known["text_sha256"])
        entry = self.ledger.get(message_id) if self.ledger is not None else None
        return text_digest(entry.message.text) if entry is not None else digest

    def _store(self, plans: list[_Plan]) -> dict[str, Taken | Exception]:
        """Records (one commit), entries, records again (one commit): what each came to."""
        if not plans:
            return {}
        try:
            self.records.intake_batch([plan.record for plan in plans], TAKING)
        except Exception as exc:  # the store failed: nothing is written; not a refusal
            logger.exception("%s: could not record %d message(s)", self.name, len(plans))
            return {plan.message_id: exc for plan in plans}
        outcomes: dict[str, Taken | Exception] = {}
        on_disk: list[tuple[_Plan, Path]] = []
        for plan, written in zip(plans, self._write(plans), strict=True):
            if isinstance(written, OSError):
                outcomes[plan.message_id] = written
            else:
                on_disk.append((plan, written))
        try:
            self.records.intake_batch([plan.record for plan, _ in on_disk], TAKEN, external=False)
        except Exception as exc:  # written, not recorded taken: offered again, written again
            logger.exception("%s: could not record %d message(s)", self.name, len(on_disk))
            return outcomes | {plan.message_id: exc for plan, _ in on_disk}
        for plan, path in on_disk:
            logger.info(
                "%s: message %s is in the inbox as %s", self.name, plan.message_id, path.name
            )
            outcomes[plan.message_id] = Taken(plan.message_id, path)
        return outcomes

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
        checked = data
        if not incoming.text.strip():  # attachments alone: the text is theirs, the rest checked
            checked = render_message_file("-", id=message_id, **fields)
        parse_message(f"{self.name}.md", checked, modified=self.now())
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

    def _write(self, plans: list[_Plan]) -> list[Path | OSError]:
        """Each plan's entry: the text files as one batch, a folder for each with attachments."""
        files = [plan for plan in plans if not plan.incoming.attachments]
        written = dict(
            zip(
                (plan.message_id for plan in files),
                drop_messages(self.inbox, [(plan.message_id, plan.data) for plan in files]),
                strict=True,
            )
        )
        for plan in plans:
            if plan.incoming.attachments:
                written[plan.message_id] = self._write_folder(plan)
        return [written[plan.message_id] for plan in plans]

    def _write_folder(self, plan: _Plan) -> Path | OSError:
        incoming = plan.incoming
        try:
            return drop_folder_message(
                self.inbox, incoming.text, list(incoming.attachments),
                message_id=plan.message_id, **plan.fields,
            )  # fmt: skip
        except OSError as exc:
            return exc

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


@dataclass(frozen=True)
class _Plan:
    """A message of a batch to write: its id, what it came as, its front matter and file."""

    message_id: str
    incoming: Incoming
    fields: dict[str, Any]
    data: bytes
    digest: str

    @property
    def record(self) -> IntakeEntry:
        incoming = self.incoming
        return IntakeEntry(self.message_id, incoming.external_id, self.digest, incoming.keep)


@dataclass(frozen=True)
class _Again:
    """The same external id and text as a message earlier in the batch: taken as that one."""

    message_id: str


def due_in(host: ChannelHost, most: float) -> float:
    """Seconds until the next delivery is due, at most ``most`` (0: one is due now)."""
    next_at = host.next_due()
    if next_at is None:
        return most
    return max(0.0, min(most, (next_at - host.now()).total_seconds()))
