"""A received mail's bytes into what the channel needs: who, which thread, the words, the files.

The standard library's ``email`` package reads the MIME (policy ``default``); nothing here
parses protocol text by hand. The bytes are untrusted: :func:`parse_mail` gives a
:class:`Mail` or raises ``MessageError`` with one reason, whatever they hold (a property test
keeps it so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parseaddr, parsedate_to_datetime
from typing import Any

from ...errors import MessageError
from .mailtext import cut_quotes_and_signature, html_to_text

MAX_RECIPIENTS = 100  # To + Cc: more is a mailing, not a person writing to the agent
MAX_SUBJECT = 200
MAX_PARTS = 200
MESSAGE_ID = re.compile(r"<[^<>\s]{1,250}>")
ADDRESS = re.compile(r"[^@\s<>\"(),;:\\\[\]]{1,64}@[A-Za-z0-9.-]{1,253}")
ANGLE_ADDRESS = re.compile(r"<([^<>\s]*)>\s*\Z")
UNSAFE_NAME = re.compile(r"[^\w.@+-]")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # with NEL and Unicode line breaks
AUTO_PRECEDENCE = {"bulk", "junk", "list", "auto_reply"}
MEDIA_SUFFIXES = {
    "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
    "application/pdf": ".pdf", "text/plain": ".txt", "text/csv": ".csv",
}  # fmt: skip


@dataclass(frozen=True)
class Mail:
    """One received mail, as far as the channel needs it."""

    message_id: str | None
    sender: str | None  # the From: address, lowercased; None when unreadable
    subject: str  # one line, no control characters
    in_reply_to: tuple[str, ...]
    references: tuple[str, ...]
    auto: str | None  # why it is an automatic mail (an auto-reply, a list), if it is
    recipients: int
    text: str
    attachments: tuple[tuple[str, bytes], ...] = ()
    authentication: tuple[str, ...] = ()  # Authentication-Results, topmost first
    date: Any = None
    problems: tuple[str, ...] = field(default=())  # why its content cannot be used


def parse_mail(raw: bytes) -> Mail:
    """Read ``raw``; ``MessageError`` when it is not a mail at all."""
    try:
        message = BytesParser(policy=policy.default).parsebytes(raw)
        return _read(message)
    except MessageError:
        raise
    except Exception as exc:  # the parser and its header classes raise many kinds
        raise MessageError(f"the mail cannot be read: {type(exc).__name__}") from exc


def _read(message: EmailMessage) -> Mail:
    if not message.keys():
        raise MessageError("the mail has no headers (malformed MIME)")
    problems: list[str] = []
    text, attachments = _content(message, problems)
    return Mail(
        message_id=message_id(_header(message, "Message-ID")),
        sender=_sender(message),
        subject=one_line(_header(message, "Subject"))[:MAX_SUBJECT],
        in_reply_to=tuple(message_ids(_header(message, "In-Reply-To"))),
        references=tuple(message_ids(_header(message, "References"))),
        auto=_automatic(message),
        recipients=_recipients(message),
        text=text,
        attachments=tuple(attachments),
        authentication=tuple(_all(message, "Authentication-Results")),
        date=_date(message),
        problems=tuple(problems),
    )


def _header(message: Message, name: str) -> str:
    values = _all(message, name)
    return values[0] if values else ""


def _all(message: Message, name: str) -> list[str]:
    """The values of header ``name``; its raw text when the policy refuses to parse it (a
    display name hiding a CR LF in an encoded word: an injection attempt)."""
    try:
        return [str(v) for v in message.get_all(name) or []]
    except Exception:
        return [str(v) for k, v in message.raw_items() if k.lower() == name.lower()]


def one_line(value: str) -> str:
    """A header value safe to show and to write back: no CR, LF or control characters."""
    return CONTROL.sub(" ", value).strip()


def message_id(value: str) -> str | None:
    found = MESSAGE_ID.search(value or "")
    return found.group(0) if found else None


def message_ids(value: str) -> list[str]:
    return MESSAGE_ID.findall(value or "")[:50]


def _sender(message: Message) -> str | None:
    froms = _all(message, "From")
    if len(froms) != 1:
        return None  # none, or two From: headers: who wrote it cannot be told
    angle = ANGLE_ADDRESS.search(froms[0])  # a display name's encoded words cannot hide it
    address = angle.group(1) if angle else parseaddr(froms[0])[1]
    address = address.strip().lower()
    return address if ADDRESS.fullmatch(address) else None


def _recipients(message: Message) -> int:
    values = [v for name in ("To", "Cc") for v in _all(message, name)]
    return len(getaddresses(values))


def _automatic(message: Message) -> str | None:
    auto = _header(message, "Auto-Submitted").strip().lower()
    if auto and auto != "no":
        return f"Auto-Submitted: {one_line(auto)[:40]}"
    precedence = _header(message, "Precedence").strip().lower()
    if precedence in AUTO_PRECEDENCE:
        return f"Precedence: {precedence}"
    for name in ("X-Autoreply", "X-Autorespond", "List-Id", "List-Unsubscribe"):
        if _all(message, name):
            return f"{name} is set"
    return None


def _date(message: Message) -> Any:
    try:
        found = parsedate_to_datetime(_header(message, "Date"))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return found if found.tzinfo is not None else None  # "-0000": no zone known


def _content(message: EmailMessage, problems: list[str]) -> tuple[str, list[tuple[str, bytes]]]:
    """The text (plain preferred, else HTML made text), cut; and the attached files."""
    plain: list[str] = []
    markup: list[str] = []
    files: list[tuple[str, bytes]] = []
    parts = list(message.walk())
    if len(parts) > MAX_PARTS:
        problems.append(f"the mail has {len(parts)} MIME parts (at most {MAX_PARTS})")
        return "", []
    for part in parts:
        if part.is_multipart():
            continue
        kind = part.get_content_type()
        disposition = part.get_content_disposition()
        name = part.get_filename()
        if disposition == "attachment" or (name and kind not in ("text/plain", "text/html")):
            data = _payload(part, problems)
            if data is not None:
                files.append((_file_name(name, kind, len(files) + 1), data))
        elif kind == "text/plain":
            plain.append(_text(part, problems))
        elif kind == "text/html":
            markup.append(_text(part, problems))
        elif kind.startswith(("image/", "application/pdf")):
            data = _payload(part, problems)
            if data is not None:
                files.append((_file_name(name, kind, len(files) + 1), data))
    text = "\n\n".join(plain) if plain else "\n\n".join(html_to_text(m) for m in markup)
    return cut_quotes_and_signature(text), files


def _payload(part: Message, problems: list[str]) -> bytes | None:
    try:
        data = part.get_payload(decode=True)
    except Exception:
        data = None
    if not isinstance(data, bytes):
        problems.append("an attachment cannot be decoded (malformed MIME)")
        return None
    return data


def _text(part: EmailMessage, problems: list[str]) -> str:
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):  # an unknown charset, a bad encoding
        data = part.get_payload(decode=True)
        content = data.decode("utf-8", "replace") if isinstance(data, bytes) else ""
    return content if isinstance(content, str) else ""


def _file_name(name: str | None, kind: str, number: int) -> str:
    """A safe file name for an attachment: its own, made safe, or one from its type."""
    if name:
        safe = UNSAFE_NAME.sub("_", one_line(name)).strip("._")[:100]
        if safe:
            return safe
    return f"attachment-{number}{MEDIA_SUFFIXES.get(kind, '.bin')}"
