"""What an attachment is: its type from its bytes, and how a message keeps it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ATTACHMENT_BLOCK = "attachment"
"""The type of the content block a stored user message keeps for each attachment; the
history makes it an image, document or text block (``blocks.api_block``) when it is sent."""

STORED_MARK = '"type":"attachment"'
"""How an attachment block begins in a stored content's JSON (compact, type first)."""
BUDGET_CHARS = 6400
"""What one attachment counts against ``[conversation] history_budget_tokens``, in the
budget's characters (4 a token): about what a photo scaled to 1568 px costs (1,600 tokens).
Counted from the stored JSON alone (:func:`budget_chars`), the same in the store's read of a
conversation's tail as in the history kept between calls."""

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
PDF = "application/pdf"
TEXT_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json")

# What a name's extension says the bytes are (checked against what the bytes say).
BY_SUFFIX = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": PDF,
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
}
SHA256 = re.compile(r"[0-9a-f]{64}")
PLAIN_NAME = re.compile(r"[^/\\\x00-\x1f\x7f]{1,255}")  # one file name, nothing to act on


def sniff(head: bytes) -> str | None:
    """The media type the first bytes of a file say it is: an image or a PDF; None for
    anything else (text is told by decoding it, see ``checks``)."""
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return PDF
    return None


def kind_of(media_type: str) -> str:
    """``image``, ``pdf`` or ``text``."""
    if media_type in IMAGE_TYPES:
        return "image"
    return "pdf" if media_type == PDF else "text"


def suffix_of(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if 0 < dot < len(name) - 1 else ""


@dataclass(frozen=True)
class Attachment:
    """One attachment of a message: its name, type and size, and the hash of its bytes.

    ``sent`` is the hash of what the model is sent when that differs (an image scaled down
    to the API's limits); both are blobs.
    """

    name: str
    media_type: str
    size: int
    sha256: str
    sent: str | None = None

    @property
    def kind(self) -> str:
        return kind_of(self.media_type)

    @property
    def sent_sha256(self) -> str:
        return self.sent or self.sha256

    def hashes(self) -> tuple[str, ...]:
        return (self.sha256,) if self.sent is None else (self.sha256, self.sent)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "media_type": self.media_type,
            "size": self.size,
            "sha256": self.sha256,
        }
        if self.sent is not None:
            data["sent"] = self.sent
        return data

    def to_block(self) -> dict[str, Any]:
        """The content block a stored user message keeps for it."""
        return {"type": ATTACHMENT_BLOCK, **self.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attachment:
        """From :meth:`to_dict` or :meth:`to_block` (also from an import: checked)."""
        sha, sent = data.get("sha256"), data.get("sent")
        if not isinstance(sha, str) or not SHA256.fullmatch(sha):
            raise ValueError(f"attachment hash {sha!r} is not a sha256")
        if sent is not None and (not isinstance(sent, str) or not SHA256.fullmatch(sent)):
            raise ValueError(f"attachment hash {sent!r} is not a sha256")
        name, media_type, size = data.get("name"), data.get("media_type"), data.get("size")
        if (
            not isinstance(name, str)
            or not PLAIN_NAME.fullmatch(name)
            or name in (".", "..")
            or media_type not in BY_SUFFIX.values()
        ):
            raise ValueError(f"attachment {name!r} of type {media_type!r} is not allowed")
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"attachment {name!r} has no size")
        return cls(name, str(media_type), size, sha, sent)


def attachments_in(content: list[dict[str, Any]]) -> list[Attachment]:
    """The attachments of a stored message's content blocks."""
    return [
        Attachment.from_dict(block)
        for block in content
        if isinstance(block, dict) and block.get("type") == ATTACHMENT_BLOCK
    ]


def budget_chars(stored: str) -> int:
    """What a stored body (text, or content JSON) counts against the history budget."""
    return len(stored) + stored.count(STORED_MARK) * BUDGET_CHARS
