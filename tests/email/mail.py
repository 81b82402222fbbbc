"""Mail as a person's client sends it, and what came back, for the email channel's tests."""

from __future__ import annotations

import json
import smtplib
import uuid
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

import pytest

from smarthole.cli import main

from .servers import Dovecot, MailServer

AGENT = "agent@example.com"
ME = "me@example.com"


def mail(
    text: str,
    *,
    subject: str | None = None,  # "Hello"; a reply's: the subject of the mail it answers
    sender: str = ME,
    in_reply_to: EmailMessage | None = None,
    attachments: tuple[tuple[str, str, bytes], ...] = (),
    headers: dict[str, str] | None = None,
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = f"Me <{sender}>"
    message["To"] = AGENT
    if subject is None:
        subject = str(in_reply_to["Subject"]) if in_reply_to is not None else "Hello"
    message["Subject"] = subject
    message["Date"] = format_datetime(datetime.now(UTC))
    message["Message-ID"] = make_msgid(idstring=uuid.uuid4().hex[:8], domain="client.test")
    if in_reply_to is not None:
        answered = in_reply_to["Message-ID"]
        message["In-Reply-To"] = answered
        message["References"] = f"{in_reply_to.get('References', '')} {answered}".strip()
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content(text)
    for name, kind, data in attachments:
        main, _, sub = kind.partition("/")
        message.add_attachment(data, maintype=main, subtype=sub, filename=name)
    return message


def send(smtp: MailServer, message: EmailMessage, *, envelope: str | None = None) -> str:
    """Submit ``message`` to the agent through the SMTP server (the MX), as a client would."""
    with smtplib.SMTP("127.0.0.1", smtp.port, timeout=30) as client:
        client.send_message(message, from_addr=envelope or ME, to_addrs=[AGENT])
    return str(message["Message-ID"])


def send_directly(dovecot: Dovecot, message: EmailMessage) -> None:
    """Into the agent's folder past the SMTP server, stamped as the MX stamps it."""
    sender = message["From"].addresses[0].addr_spec
    stamp = f"Authentication-Results: mx.test; spf=pass smtp.mailfrom={sender}\r\n"
    dovecot.deliver(AGENT, stamp.encode() + bytes(message))


def replies(dovecot: Dovecot, user: str = ME) -> list[EmailMessage]:
    """The agent's replies in ``user``'s Maildir, in the order they were sent."""
    return dovecot.mails(user)


def distinct(found: list[EmailMessage]) -> set[str]:
    return {str(m["Message-ID"]) for m in found}


def plain(message: EmailMessage) -> str:
    body = message.get_body(("plain",))
    assert body is not None
    return str(body.get_content())


def channel_status(home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The email channel's entry of ``smarthole status --json``."""
    assert main(["status", "--json", "--home", str(home)]) == 0
    (found,) = json.loads(capsys.readouterr().out)["channels"]
    return dict(found)


def channel_events(
    home: Path, capsys: pytest.CaptureFixture[str], type: str
) -> list[dict[str, Any]]:
    """The email channel's events of ``type``, as ``smarthole events --json`` prints them."""
    assert main(["events", "--json", "--limit", "1000", "--home", str(home)]) == 0
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [event for event in found if event["type"] == type and event["channel"] == "email"]
