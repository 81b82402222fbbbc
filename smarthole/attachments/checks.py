"""Taking one attachment, or refusing it with the file's name and the rule it broke.

The type is decided from the bytes: an image or PDF by its signature, anything else must be
UTF-8 text. A name whose extension says otherwise is refused, and so is a name with an
extension that is not accepted at all.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MessageError
from ..formats import display_name
from .kinds import BY_SUFFIX, PDF, kind_of, sniff, suffix_of
from .pdf import pdf_pages

if TYPE_CHECKING:
    from ..config import AttachmentSettings

NAME = re.compile(r"[^/\\\x00-\x1f\x7f]{1,255}")
HEAD_BYTES = 16
ACCEPTED = "JPEG, PNG, GIF, WebP, PDF, or UTF-8 text (.txt, .md, .csv, .json)"


@dataclass(frozen=True)
class Accepted:
    """One attachment taken: its type, and what the model is sent instead, if anything."""

    name: str
    media_type: str
    data: bytes
    sent: bytes | None = None


def check_name(name: str) -> str:
    shown = display_name(name)
    if not NAME.fullmatch(name) or name in (".", "..") or shown != name:
        raise MessageError(f"attachment name {shown!r} is not a plain file name")
    return name


def size_limit(name: str, head: bytes, settings: AttachmentSettings) -> tuple[int, str]:
    """The size limit of a file, from its first bytes (before it is read): (bytes, key)."""
    media_type = sniff(head) or BY_SUFFIX.get(suffix_of(name)) or "text/plain"
    kind = kind_of(media_type)
    if kind == "image":
        return settings.max_image_bytes, "max_image_bytes"
    if kind == "pdf":
        return settings.max_pdf_bytes, "max_pdf_bytes"
    return settings.max_text_bytes, "max_text_bytes"


def accept(
    name: str, data: bytes, settings: AttachmentSettings, *, declared: str | None = None
) -> Accepted:
    """Take ``data`` as attachment ``name`` or raise ``MessageError`` naming file and rule.

    ``declared``: the media type a JSON message gave, which must agree with the bytes.
    """
    check_name(name)
    suffix = suffix_of(name)
    by_name = BY_SUFFIX.get(suffix)
    if suffix and by_name is None:
        raise MessageError(f"{name}: type {suffix!r} is not accepted; send {ACCEPTED}")
    by_bytes = sniff(data[:HEAD_BYTES])
    if by_bytes is not None:
        if by_name is not None and by_name != by_bytes:
            raise MessageError(
                f"{name}: the bytes are {by_bytes} but the name says {suffix} ({by_name}); "
                "the type is decided from the bytes"
            )
        media_type = by_bytes
    elif by_name is not None and kind_of(by_name) != "text":
        raise MessageError(f"{name}: the name says {by_name} but the bytes are not one")
    else:
        media_type = by_name or "text/plain"
    if declared is not None and declared != media_type:
        raise MessageError(
            f"{name}: media_type {declared!r} does not match the bytes ({media_type})"
        )
    limit, key = size_limit(name, data[:HEAD_BYTES], settings)
    if len(data) > limit:
        raise MessageError(f"{name}: {len(data)} bytes is more than {key} ({limit})")
    kind = kind_of(media_type)
    if kind == "image":
        from .images import check_image

        checked = check_image(
            name,
            data,
            media_type,
            max_pixels=settings.max_image_pixels,
            max_edge=settings.max_image_edge,
        )
        return Accepted(name, media_type, data, checked.sent)
    if kind == "pdf":
        if b"%%EOF" not in data[-2048:]:  # a slice: no copy of the whole file
            raise MessageError(f"{name}: not a complete PDF (no %%EOF at its end)")
        pages = pdf_pages(name, data)
        if pages > settings.max_pdf_pages:
            raise MessageError(
                f"{name}: {pages} pages is more than max_pdf_pages ({settings.max_pdf_pages})"
            )
        return Accepted(name, PDF, data)
    _check_text(name, data, media_type)
    return Accepted(name, media_type, data)


def _check_text(name: str, data: bytes, media_type: str) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageError(
            f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            f"send {ACCEPTED}"
        ) from exc
    if "\x00" in text:
        raise MessageError(f"{name}: binary data (a NUL byte); send {ACCEPTED}")
    if media_type == "application/json":
        try:
            json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise MessageError(f"{name}: not valid JSON") from exc
