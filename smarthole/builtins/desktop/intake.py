"""Routed messages from the desktop into the inbox, through the channel host; then the answers.

A thin mapping: each ``message`` frame becomes an :class:`~smarthole.channels.Incoming` (the
desktop's message id is its external id and the inbox message's id) and a burst goes to
:meth:`ChannelHost.take_batch` at once: one commit of records before the files, the files each
synced and the folder once, one commit after. Only once its message's file and record are on
disk is an ``ack`` due; a message that cannot be taken gets a ``reject`` with the reason, and
no file. An id that comes again with the same text is a duplicate (acked, answered once); with
another text it is refused (the host's rule for every channel).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...channels import Incoming
from ...channels import Taken as Stored
from ...errors import MessageError
from ...formats import parse_time
from ...pipeline.message import MAX_ID_LENGTH, MAX_METADATA_DEPTH
from . import protocol

if TYPE_CHECKING:
    from datetime import datetime

    from ...channels import ChannelHost

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Taken:
    """What to answer a message frame with (``None``: ignore the frame)."""

    answer: dict[str, Any] | None
    path: Path | None = None


class Intake:
    """Takes the desktop's messages into one home's inbox, through its channel host."""

    def __init__(self, host: ChannelHost, channel: str) -> None:
        self.host = host
        self.channel = channel  # the ledger's channel ([desktop] channel)

    def take(self, payload: dict[str, Any]) -> Taken:
        (taken,) = self.take_batch([payload])
        return taken

    def take_batch(self, payloads: Sequence[dict[str, Any]]) -> list[Taken]:
        """Take message payloads in order; an answer for each, in the same order."""
        screened = [self._screen(payload) for payload in payloads]
        offered = [item for item in screened if isinstance(item, Incoming)]
        outcomes = iter(self.host.take_batch(offered))
        return [
            self._answer(item, next(outcomes)) if isinstance(item, Incoming) else item
            for item in screened
        ]

    def _screen(self, payload: dict[str, Any]) -> Incoming | Taken:
        """The message a payload carries, or the answer it gets without the host."""
        message_id = payload.get("id")
        if not isinstance(message_id, str) or not message_id.strip():
            logger.warning("desktop: ignored a message frame without a string id")
            return Taken(None)
        if len(message_id) > MAX_ID_LENGTH:
            return _reject(message_id, f"the message id is over {MAX_ID_LENGTH} characters")
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip():
            return _reject(message_id, "the message text is empty")
        try:
            metadata = _metadata(payload.get("metadata"))
        except MessageError as exc:
            return _reject(message_id, str(exc))
        return Incoming(
            external_id=message_id,
            text=text,
            channel=self.channel,
            timestamp=_timestamp(payload.get("timestamp")),
            metadata=metadata,
            message_id=message_id,
        )

    def _answer(self, incoming: Incoming, outcome: Stored | Exception) -> Taken:
        """A stored message (or one stored before: a duplicate) is acked; the rest rejected."""
        message_id = incoming.external_id
        if isinstance(outcome, Stored):
            return Taken(protocol.ack(message_id), outcome.path)
        if isinstance(outcome, MessageError):
            return _reject(message_id, str(outcome))
        if isinstance(outcome, OSError):  # the inbox; the store raises its own errors
            return _reject(message_id, f"the inbox is not writable: {outcome.strerror or outcome}")
        return _reject(message_id, f"smarthole could not take it: {outcome}")


def _reject(message_id: str, reason: str) -> Taken:
    logger.warning("desktop: rejected message %s: %s", message_id, reason)
    return Taken(protocol.reject(message_id, reason))


def _timestamp(value: Any) -> datetime | None:
    """The desktop's ISO time; without a readable one the file's own time orders it."""
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _metadata(value: Any) -> dict[str, Any]:
    """The desktop's metadata, kept as is, minus nulls (TOML front matter has none)."""
    cleaned = _without_nulls(value) if isinstance(value, dict) else {}
    return cleaned if isinstance(cleaned, dict) else {}


def _without_nulls(value: Any, depth: int = 0) -> Any:
    if depth > MAX_METADATA_DEPTH:
        raise MessageError(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
    if isinstance(value, dict):
        return {str(k): _without_nulls(v, depth + 1) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v, depth + 1) for v in value if v is not None]
    return value
