"""``[attachments]``: the photos, screenshots, PDFs and text files a message may carry."""

from __future__ import annotations

from dataclasses import dataclass

from .fields import setting

MIB = 1024 * 1024


@dataclass(frozen=True)
class AttachmentSettings:
    max_count: int = setting(20, "Attachments one message may carry.", minimum=0)
    max_image_bytes: int = setting(10 * MIB, "Largest image (JPEG, PNG, GIF, WebP).", minimum=1)
    max_pdf_bytes: int = setting(32 * MIB, "Largest PDF.", minimum=1)
    max_pdf_pages: int = setting(100, "Most pages a PDF may have.", minimum=1)
    max_text_bytes: int = setting(
        2 * MIB, "Largest text attachment (plain text, Markdown, CSV, JSON).", minimum=1
    )
    max_message_bytes: int = setting(
        64 * MIB, "Largest total of one message's attachments.", minimum=1
    )
    max_image_edge: int = setting(
        1568, "An image is scaled down to this long edge, in pixels, before it is sent.", minimum=1
    )
    max_image_pixels: int = setting(
        50_000_000,
        "An image with more pixels is refused before it is decoded (a decompression bomb).",
        minimum=1,
    )
    history_turns: int = setting(
        0,
        "Later turns resend attachments of at most this many turns back; older ones become a "
        "one-line note (name, type, when sent). 0 means all.",
        minimum=0,
    )
