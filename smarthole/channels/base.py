"""The values that cross the channel interface: a message in, what taking it did, a
delivery owed, a channel's state."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..formats import iso

if TYPE_CHECKING:
    from ..db.outbox import OutboxItem


class ChannelState(StrEnum):
    """How a channel stands, as ``smarthole status`` shows it."""

    DISABLED = "disabled"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    ERROR = "error"


@dataclass(frozen=True)
class Incoming:
    """A message a channel received, on its way into the inbox.

    ``external_id`` is the message's id in the channel's own world (a desktop message id, a
    mail's Message-ID); the same external id is taken once, however often it comes.
    ``attachments`` are ``(name, bytes)`` pairs, checked and stored like those of a folder
    message. ``fields`` are more inbox front matter (``approve``, ``args_hash``, ``always``...).
    ``keep`` is what the channel wants back with each delivery answering it (a mail's thread).
    """

    external_id: str
    text: str
    channel: str | None = None  # the ledger's channel; the channel's name when None
    conversation: str | None = None
    new_conversation: bool = False
    timestamp: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: tuple[tuple[str, bytes], ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)
    keep: dict[str, Any] = field(default_factory=dict)
    message_id: str | None = None  # derived from the channel and the external id when None


def derived_message_id(channel: str, external_id: str) -> str:
    """The inbox message id of ``external_id`` in ``channel``: the same pair, the same id."""
    digest = hashlib.sha256(f"{channel}\0{external_id}".encode("utf-8", "surrogatepass"))
    return f"{channel[:40]}-{digest.hexdigest()[:32]}"


def text_digest(text: str) -> str:
    """What tells two texts of one external id apart: the text as the inbox keeps it."""
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Taken:
    """What :meth:`ChannelHost.take` did: the message's id, and the inbox entry it wrote.

    ``duplicate`` is true when the external id was taken before (or earlier in the same
    batch) with the same text: nothing was written.
    """

    message_id: str
    path: Path | None
    duplicate: bool = False


@dataclass(frozen=True)
class Delivery:
    """One outbox item a channel owes, as its durable record keeps it until it is sent."""

    outbox_id: str
    message_id: str  # the inbox message it answers
    conversation: str | None
    kind: str  # response, message, question, error or approval (``OutboxKind``)
    text: str
    created_at: str
    extra: dict[str, Any] = field(default_factory=dict)  # approval id, args hash, expiry...
    origin: dict[str, Any] = field(default_factory=dict)  # ``Incoming.keep`` of the message
    attempts: int = 0  # failed sends so far
    last_error: str | None = None
    turn: int | None = None  # the turn that made it (its stored messages say what it did)

    @classmethod
    def of(cls, item: OutboxItem, origin: dict[str, Any] | None = None) -> Delivery:
        return cls(
            outbox_id=item.id,
            message_id=item.in_reply_to,
            conversation=item.conversation,
            kind=str(item.kind),
            text=item.text,
            created_at=iso(item.created_at),
            extra=dict(item.extra or {}),
            origin=dict(origin or {}),
            turn=item.turn,
        )
