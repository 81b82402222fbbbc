"""Replies as mail: in the thread of the mail they answer, with a Message-ID of their own that
a resend keeps (so mail clients show one message), text and a simple HTML part."""

from __future__ import annotations

import html
import mimetypes
import re
from email.message import EmailMessage
from email.utils import format_datetime
from typing import TYPE_CHECKING, Any

from ...formats import parse_time
from .mailparse import one_line

if TYPE_CHECKING:
    from ...channels import Delivery

UNSAFE_IN_ID = re.compile(r"[^A-Za-z0-9.-]")
MAX_REFERENCES = 20
APPROVAL_HELP = (
    "Answer by replying to this mail with one of these as the first line:\n"
    "  approve\n  approve always\n  deny <reason>"
)


def reply_message_id(reply_id: str, address: str) -> str:
    """The Message-ID of reply ``reply_id``: derived from it, so every resend has the same."""
    domain = address.rpartition("@")[2] or "smarthole.invalid"
    return f"<smarthole.{UNSAFE_IN_ID.sub('_', reply_id)}@{domain}>"


def reply_subject(subject: str) -> str:
    subject = one_line(subject) or "(no subject)"
    return subject if subject.lower().startswith("re:") else f"Re: {subject}"


def body_of(delivery: Delivery) -> str:
    if delivery.kind == "approval":
        return f"{delivery.text.rstrip()}\n\n{APPROVAL_HELP}\n"
    if delivery.kind == "error":
        return f"smarthole could not answer this:\n\n{delivery.text.rstrip()}\n"
    return delivery.text.rstrip() + "\n"


def compose(
    delivery: Delivery, address: str, attachments: list[tuple[str, bytes]] | None = None
) -> EmailMessage:
    """The mail for ``delivery``, to the sender of the mail it answers."""
    origin: dict[str, Any] = delivery.origin
    message = EmailMessage()
    message["From"] = address
    message["To"] = origin["from"]
    message["Subject"] = reply_subject(str(origin.get("subject", "")))
    message["Message-ID"] = reply_message_id(delivery.outbox_id, address)
    message["Date"] = format_datetime(parse_time(delivery.created_at))
    answered = origin.get("message_id")
    if isinstance(answered, str):
        references = [r for r in origin.get("references", []) if isinstance(r, str)]
        message["In-Reply-To"] = answered
        message["References"] = " ".join([*references[-MAX_REFERENCES:], answered])
    # RFC 3834: an automatic answer. Auto-responders do not answer it back (no loops).
    message["Auto-Submitted"] = "auto-replied"
    body = body_of(delivery)
    message.set_content(body)
    message.add_alternative(_html(body), subtype="html")
    for name, data in attachments or []:
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        main, _, sub = kind.partition("/")
        message.add_attachment(data, maintype=main, subtype=sub, filename=name)
    return message


def _html(text: str) -> str:
    paragraphs = [p for p in re.split(r"\n{2,}", text.strip()) if p.strip()]
    inner = "\n".join("<p>" + html.escape(p).replace("\n", "<br>\n") + "</p>" for p in paragraphs)
    return f"<!DOCTYPE html>\n<html><body>\n{inner}\n</body></html>\n"
