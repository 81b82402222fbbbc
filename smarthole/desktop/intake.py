"""A routed message from the desktop into the inbox: a durable file first, then the answer.

The file is written the way any writer should (``pipeline.inbox.drop_message``: temp name,
fsync, rename), so the daemon takes it like any other message: the ledger, dedupe, pending
questions and conversations all apply. Only once it is on disk is the ``ack`` due; a message
that cannot be taken gets a ``reject`` with the reason, and no file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MessageError
from ..formats import parse_time
from ..pipeline.inbox import drop_message
from ..pipeline.message import (
    MAX_ID_LENGTH,
    MAX_METADATA_DEPTH,
    parse_message,
    render_message_file,
)
from . import protocol

if TYPE_CHECKING:
    from .records import BridgeRecords

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Taken:
    """What to answer a message frame with (``None``: ignore the frame)."""

    answer: dict[str, Any] | None
    path: Path | None = None


class Intake:
    """Writes the desktop's messages into one home's inbox."""

    def __init__(self, inbox: Path, channel: str, max_bytes: int, records: BridgeRecords):
        self.inbox = inbox
        self.channel = channel
        self.max_bytes = max_bytes
        self.records = records

    def take(self, payload: dict[str, Any]) -> Taken:
        message_id = payload.get("id")
        if not isinstance(message_id, str) or not message_id.strip():
            logger.warning("desktop: ignored a message frame without a string id")
            return Taken(None)
        if len(message_id) > MAX_ID_LENGTH:
            return self._reject(message_id, f"the message id is over {MAX_ID_LENGTH} characters")
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip():
            return self._reject(message_id, "the message text is empty")
        known = self.records.message(message_id)
        if known is not None and known.get("state") == "taken":
            logger.info("desktop: message %s came again; acknowledged, answered once", message_id)
            return Taken(protocol.ack(message_id))
        try:
            fields = {
                "channel": self.channel,
                "timestamp": _timestamp(payload.get("timestamp")),
                "metadata": _metadata(payload.get("metadata")),
            }
            self._check(message_id, text, fields)
        except MessageError as exc:
            return self._reject(message_id, str(exc))
        try:
            self.records.taking(message_id)
            path = drop_message(self.inbox, text, message_id=message_id, **fields)
            self.records.taken(message_id)
        except OSError as exc:
            return self._reject(message_id, f"the inbox is not writable: {exc.strerror or exc}")
        except Exception as exc:  # the store failed: say so rather than leave it unanswered
            logger.exception("desktop: could not take message %s", message_id)
            return self._reject(message_id, f"smarthole could not take it: {exc}")
        logger.info("desktop: message %s is in the inbox as %s", message_id, path.name)
        return Taken(protocol.ack(message_id), path)

    def _check(self, message_id: str, text: str, fields: dict[str, Any]) -> None:
        """Raise ``MessageError`` if the daemon would set this message aside: refuse it now."""
        try:
            data = render_message_file(text, id=message_id, **fields)
        except Exception as exc:  # a value TOML cannot hold
            raise MessageError(f"cannot be written as an inbox file: {exc}") from exc
        if len(data) > self.max_bytes:
            raise MessageError(
                f"the message is too large ({len(data)} bytes; the limit is {self.max_bytes})"
            )
        parse_message("desktop.md", data, modified=datetime.now(UTC))

    def _reject(self, message_id: str, reason: str) -> Taken:
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
