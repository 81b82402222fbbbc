"""A stored user message's attachments as the model reads them: image and document blocks.

The bytes come from the blob store; the same stored message always makes the same blocks, so
a request that replays it keeps its prefix byte-identical for the prompt cache. An attachment
older than ``[attachments] history_turns`` becomes a one-line note, and so does one whose
blob is gone.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..attachments import ATTACHMENT_BLOCK, Attachment, BlobStore, api_block, placeholder_block
from ..formats import from_micros, iso
from .blobdata import blob_data

if TYPE_CHECKING:
    from ..db.records import StoredMessage

logger = logging.getLogger(__name__)


def has_attachments(content: list[dict[str, Any]]) -> bool:
    return any(block.get("type") == ATTACHMENT_BLOCK for block in content)


class AttachmentBlocks:
    """Makes stored attachment blocks into API blocks, from the blobs in ``blobs``."""

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs

    def resolve(
        self, content: list[dict[str, Any]], created_at: int, *, full: bool
    ) -> tuple[list[dict[str, Any]], int]:
        """``content`` with each attachment block replaced (a new list), and the bytes of
        attachments it now holds. ``full``: send them whole, else a one-line note each."""
        blocks, held = [], 0
        sent_at = iso(from_micros(created_at))
        for block in content:
            if block.get("type") != ATTACHMENT_BLOCK:
                blocks.append(block)
                continue
            attachment = Attachment.from_dict(block)
            if not full:
                blocks.append(placeholder_block(attachment, sent_at))
                continue
            path = self.blobs.path(attachment.sent_sha256)
            try:
                with path.open("rb") as blob:
                    head = blob.read(16)
                    text = blob.read().decode("utf-8") if attachment.kind == "text" else None
            except FileNotFoundError:
                logger.error("attachment %s: its blob is gone", attachment.name)
                blocks.append(placeholder_block(attachment, sent_at, why="no longer stored"))
                continue
            if text is not None:  # a text document is its text, as is
                blocks.append(api_block(attachment, head + text.encode()))
                held += len(text) + 16
                continue
            # Images and PDFs: a marker the client splices the base64 into (agent.blobdata).
            marker = blob_data().marker(attachment.sent_sha256, path)
            blocks.append(api_block(attachment, head, encoded=marker))
        return blocks, held


def with_attachments(messages: list[StoredMessage], blobs: Path) -> list[StoredMessage]:
    """Stored messages with their attachment blocks made into API blocks (a team agent's
    turn: short, so made at each call rather than kept)."""
    if not any(m.kind == "user" and has_attachments(m.content) for m in messages):
        return messages
    maker = AttachmentBlocks(BlobStore(blobs))
    made = []
    for message in messages:
        if message.kind == "user" and has_attachments(message.content):
            micros = int(message.created_at.timestamp() * 1_000_000)
            content, _ = maker.resolve(message.content, micros, full=True)
            message = replace(message, content=content)
        made.append(message)
    return made
