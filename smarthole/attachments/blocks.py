"""The Messages API blocks of an attachment: image, document (PDF), or text document."""

from __future__ import annotations

import base64
from typing import Any

from .kinds import PDF, Attachment, sniff


def api_block(attachment: Attachment, data: bytes, *, encoded: str | None = None) -> dict[str, Any]:
    """The block the model reads for ``attachment``, whose sent bytes are ``data``.

    ``encoded`` stands in for the base64 of an image or PDF (``data`` then needs only its
    first bytes): a marker the model client splices the bytes into. The same bytes always
    make the same block, so a history that replays it keeps the request's prefix
    byte-identical, and the prompt cache keeps it.
    """
    media_type = sniff(data[:16]) or attachment.media_type
    if media_type.startswith("image/"):
        return {"type": "image", "source": _base64(media_type, data, encoded)}
    if media_type == PDF:
        source = _base64(PDF, data, encoded)
        return {"type": "document", "source": source, "title": attachment.name}
    return {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": data.decode("utf-8")},
        "title": attachment.name,
    }


def placeholder_block(attachment: Attachment, sent_at: str, *, why: str = "") -> dict[str, Any]:
    """The one line a turn's attachment becomes when it is not sent again."""
    note = why or "not sent again"
    return {
        "type": "text",
        "text": f"[attachment {attachment.name} ({attachment.media_type}, "
        f"{attachment.size} bytes), sent {sent_at}: {note}]",
    }


def _base64(media_type: str, data: bytes, encoded: str | None) -> dict[str, str]:
    text = encoded if encoded is not None else base64.b64encode(data).decode()
    return {"type": "base64", "media_type": media_type, "data": text}
