"""Routed messages from the desktop into the inbox: durable files first, then the answers.

Each file is written the way any writer should (temp name, fsync, rename), so the daemon takes
it like any other message: the ledger, dedupe, pending questions and conversations all apply.
A burst is taken in batches (``take_batch``): one commit of the bridge's records before the
files, the files each synced and the folder once, one commit after. Only once its message's
file and record are on disk is an ``ack`` due; a message that cannot be taken gets a
``reject`` with the reason, and no file. An id that comes again with the same text is a
duplicate (acked, answered once); with another text it is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import MessageError
from ...formats import parse_time
from ...pipeline.inbox import REUSED_ID, drop_messages
from ...pipeline.message import (
    MAX_ID_LENGTH,
    MAX_METADATA_DEPTH,
    parse_message,
    render_message_file,
)
from . import protocol
from .records import MessageRecord, text_digest

if TYPE_CHECKING:
    from ...db.ledger import Ledger
    from .records import BridgeRecords

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Taken:
    """What to answer a message frame with (``None``: ignore the frame)."""

    answer: dict[str, Any] | None
    path: Path | None = None


@dataclass(frozen=True)
class _Drop:
    """A message to write: its id, the digest of its text, the file's bytes."""

    message_id: str
    digest: str
    data: bytes


@dataclass(frozen=True)
class _Again:
    """The same id and text as an earlier message of the batch: answered as that one is."""

    message_id: str


class Intake:
    """Writes the desktop's messages into one home's inbox."""

    def __init__(
        self, inbox: Path, channel: str, max_bytes: int, records: BridgeRecords, ledger: Ledger
    ):
        self.inbox = inbox
        self.channel = channel
        self.max_bytes = max_bytes
        self.records = records
        self.ledger = ledger

    def take(self, payload: dict[str, Any]) -> Taken:
        (taken,) = self.take_batch([payload])
        return taken

    def take_batch(self, payloads: Sequence[dict[str, Any]]) -> list[Taken]:
        """Take message payloads in order; an answer for each, in the same order."""
        batch: dict[str, _Drop] = {}
        screened = [self._screen(payload, batch) for payload in payloads]
        stored = self._store(list(batch.values()))
        answers = []
        for outcome in screened:
            if isinstance(outcome, _Drop):
                outcome = stored[outcome.message_id]
            elif isinstance(outcome, _Again):
                logger.info("desktop: message %s came twice in one burst", outcome.message_id)
                outcome = stored[outcome.message_id]
            answers.append(outcome)
        return answers

    def _screen(self, payload: dict[str, Any], batch: dict[str, _Drop]) -> Taken | _Drop | _Again:
        """What to do with one payload: answer it now, write it, or answer as its twin."""
        message_id = payload.get("id")
        if not isinstance(message_id, str) or not message_id.strip():
            logger.warning("desktop: ignored a message frame without a string id")
            return Taken(None)
        if len(message_id) > MAX_ID_LENGTH:
            return self._reject(message_id, f"the message id is over {MAX_ID_LENGTH} characters")
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip():
            return self._reject(message_id, "the message text is empty")
        digest = text_digest(text)
        earlier = batch.get(message_id)
        if earlier is not None:
            return _Again(message_id) if earlier.digest == digest else self._reused(message_id)
        known = self.records.message(message_id)
        if digest != self._known_digest(message_id, known, digest):
            return self._reused(message_id)
        if known is not None and known.get("state") == MessageRecord.TAKEN:
            logger.info("desktop: message %s came again; acknowledged, answered once", message_id)
            return Taken(protocol.ack(message_id))
        try:
            data = self._render(message_id, text, payload)
        except MessageError as exc:
            return self._reject(message_id, str(exc))
        batch[message_id] = _Drop(message_id, digest, data)
        return batch[message_id]

    def _known_digest(self, message_id: str, known: dict[str, Any] | None, digest: str) -> str:
        """The digest of the text this id was first taken with; ``digest`` if none is known.

        A record of a version before digests has none: the ledger has the text, once the
        daemon has claimed the file (so does it for an id an inbox file used).
        """
        if known is not None and isinstance(known.get("text_sha256"), str):
            return str(known["text_sha256"])
        entry = self.ledger.get(message_id)
        return text_digest(entry.message.text) if entry is not None else digest

    def _render(self, message_id: str, text: str, payload: dict[str, Any]) -> bytes:
        """The inbox file; ``MessageError`` if the daemon would set it aside: refuse it now."""
        fields = {
            "channel": self.channel,
            "timestamp": _timestamp(payload.get("timestamp")),
            "metadata": _metadata(payload.get("metadata")),
        }
        try:
            data = render_message_file(text, id=message_id, **fields)
        except Exception as exc:  # a value TOML cannot hold
            raise MessageError(f"cannot be written as an inbox file: {exc}") from exc
        if len(data) > self.max_bytes:
            raise MessageError(
                f"the message is too large ({len(data)} bytes; the limit is {self.max_bytes})"
            )
        parse_message("desktop.md", data, modified=datetime.now(UTC))
        return data

    def _store(self, drops: list[_Drop]) -> dict[str, Taken]:
        """Write a batch: records (one commit), files, records again (one commit); answers."""
        if not drops:
            return {}
        digests = {drop.message_id: drop.digest for drop in drops}
        try:
            self.records.taking(digests)
        except Exception as exc:  # the store failed: say so rather than leave them unanswered
            return self._failed(digests, exc)
        written = drop_messages(self.inbox, [(drop.message_id, drop.data) for drop in drops])
        answers: dict[str, Taken] = {}
        on_disk: dict[str, Path] = {}
        for drop, path in zip(drops, written, strict=True):
            if isinstance(path, OSError):
                reason = f"the inbox is not writable: {path.strerror or path}"
                answers[drop.message_id] = self._reject(drop.message_id, reason)
            else:
                on_disk[drop.message_id] = path
        try:
            self.records.taken({message_id: digests[message_id] for message_id in on_disk})
        except Exception as exc:
            return answers | self._failed(on_disk, exc)
        for message_id, path in on_disk.items():
            logger.info("desktop: message %s is in the inbox as %s", message_id, path.name)
            answers[message_id] = Taken(protocol.ack(message_id), path)
        return answers

    def _failed(self, message_ids: dict[str, Any], exc: Exception) -> dict[str, Taken]:
        logger.exception("desktop: could not take %d message(s)", len(message_ids))
        reason = f"smarthole could not take it: {exc}"
        return {message_id: self._reject(message_id, reason) for message_id in message_ids}

    def _reused(self, message_id: str) -> Taken:
        return self._reject(message_id, REUSED_ID)

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
