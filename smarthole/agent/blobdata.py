"""Attachment bytes in a request without holding them in the history: a marker, spliced.

A 30 MiB PDF is 40 MiB of base64. Held as a string in a block of the history, it was copied
again by each step of building a request (the message's JSON, the history's, the body's text,
its bytes). Instead the block's ``data`` is a short marker naming the blob, the history and
the request's text stay small, and the client splices the base64 bytes into the encoded body
at the last step: the largest copies are the base64 once and the body once. The last few
attachments' base64 is kept (bounded), so a tool loop or the next turn does not read and
encode it again. The same blob always gives the same bytes: the prompt cache sees no change.
"""

from __future__ import annotations

import base64
import re
import secrets
import threading
from collections import OrderedDict
from pathlib import Path

from ..errors import ModelError

KEEP_BYTES = 48 * 1024 * 1024
"""About the base64 kept for the next request (one large PDF; a few photos)."""


class BlobData:
    """Markers for blobs, and the base64 they stand for."""

    def __init__(self, keep_bytes: int = KEEP_BYTES) -> None:
        self._tag = secrets.token_hex(6)  # no text from outside can guess a marker
        self._pattern = re.compile(
            rb"@@smarthole-blob-" + self._tag.encode() + rb"-([0-9a-f]{64})@@"
        )
        self._where: dict[str, Path] = {}  # sha256 -> its blob file
        self._kept: OrderedDict[str, bytes] = OrderedDict()
        self._keep = keep_bytes
        self._lock = threading.Lock()

    def marker(self, sha256: str, path: Path) -> str:
        """The text that stands for the base64 of blob ``sha256`` (at ``path``)."""
        with self._lock:
            self._where[sha256] = path
        return f"@@smarthole-blob-{self._tag}-{sha256}@@"

    def splice(self, body: bytes) -> bytes:
        """``body`` with each marker replaced by its blob's base64."""
        if b"@@smarthole-blob-" not in body:
            return body
        parts: list[bytes] = []
        at = 0
        for found in self._pattern.finditer(body):
            parts += [body[at : found.start()], self._base64(found.group(1).decode())]
            at = found.end()
        parts.append(body[at:])
        return b"".join(parts)

    def _base64(self, sha256: str) -> bytes:
        with self._lock:
            kept = self._kept.get(sha256)
            if kept is not None:
                self._kept.move_to_end(sha256)
                return kept
            path = self._where.get(sha256)
        if path is None:
            raise ModelError(
                f"attachment blob {sha256[:12]} is not known to this process", retryable=True
            )
        try:
            encoded = base64.b64encode(path.read_bytes())
        except FileNotFoundError as exc:
            raise ModelError(
                f"attachment blob {sha256[:12]} is no longer stored", retryable=False
            ) from exc
        with self._lock:
            self._kept[sha256] = encoded
            while sum(len(v) for v in self._kept.values()) > self._keep and len(self._kept) > 1:
                self._kept.popitem(last=False)
        return encoded


_shared: BlobData | None = None
_shared_lock = threading.Lock()


def blob_data() -> BlobData:
    """The process's one :class:`BlobData` (made at first use, not at import)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = BlobData()
        return _shared
