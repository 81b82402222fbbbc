"""Bad input from an allowed person: one clear reason each, nothing lost, no reply storm."""

from __future__ import annotations

import os

import pytest

from smarthole.testing import text
from tests.helpers import wait_for

from .conftest import enable_email
from .mail import AGENT, ME, mail, plain, replies, send

PASSED = f"Authentication-Results: mx.test; spf=pass smtp.mailfrom={ME}\r\n".encode()


def raw_mail(headers: str, body: bytes = b"hello\r\n") -> bytes:
    return PASSED + headers.replace("\n", "\r\n").encode() + b"\r\n" + body


def many_recipients(count: int) -> bytes:
    to = ", ".join(f"r{n}@elsewhere.test" for n in range(count))
    return raw_mail(f"From: {ME}\nTo: {AGENT}, {to}\nSubject: all\nMessage-ID: <many@c.test>\n")


def broken_mime() -> bytes:
    headers = (
        f"From: {ME}\nTo: {AGENT}\nSubject: broken\nMessage-ID: <broken@c.test>\n"
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="never-there"\n'
    )
    return raw_mail(headers, b"--not-the-boundary\r\n\r\n\x00\xff garbage\r\n")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (many_recipients(10_000), "sent to 10001 recipients (at most 100)"),
        (broken_mime(), "it has no text and no attachments"),
    ],
    ids=["10,000 recipients", "malformed MIME"],
)
def test_an_unusable_mail_is_answered_once_with_the_reason(
    home, fake, mail_env, threads, dovecot, smtp, raw, reason
):
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    dovecot.deliver(AGENT, raw)
    (answer,) = wait_for(lambda: replies(dovecot), 30, "the answer")
    assert reason in plain(answer)
    fake.add(text("Fine."))
    send(smtp, mail("and this one?"))
    wait_for(lambda: len(replies(dovecot)) == 2, 30, "the next reply")
    assert len(fake.requests) == 1, "the unusable mail never reached the model"


def test_a_100_mb_mail_is_refused_without_being_downloaded(
    home, fake, mail_env, threads, dovecot, smtp, capsys
):
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    body = (b"x" * 998 + b"\r\n") * (100 * 1024 * 1024 // 1000)
    dovecot.deliver(AGENT, raw_mail(f"From: {ME}\nTo: {AGENT}\nSubject: big\n", body))
    (answer,) = wait_for(lambda: replies(dovecot), 60, "the answer")
    assert "bytes (at most 52428800)" in plain(answer)
    assert fake.requests == []


def test_a_header_injection_in_the_subject_or_name_stays_one_header(
    home, fake, mail_env, threads, dovecot, smtp
):
    fake.add(text("Hello."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    headers = (
        f"From: =?utf-8?q?Me=0D=0ABcc:_victim@elsewhere.test?= <{ME}>\nTo: {AGENT}\n"
        "Subject: =?utf-8?q?Hi=0D=0ABcc:_victim@elsewhere.test?=\nMessage-ID: <inj@c.test>\n"
    )
    dovecot.deliver(AGENT, raw_mail(headers))
    (answer,) = wait_for(lambda: replies(dovecot), 30, "the answer")
    assert "\n" not in str(answer["Subject"]) and "\r" not in str(answer["Subject"])
    assert answer["Bcc"] is None and str(answer["To"]) == ME
    (sent,) = [r for r in smtp.received if r[0] == AGENT]
    assert sent[1] == [ME], "one recipient: the sender"
    assert replies(dovecot, "stranger@elsewhere.test") == []


def test_an_unusable_mail_seen_again_after_a_restart_is_answered_once(
    home, fake, mail_env, threads, dovecot, smtp
):
    enable_email(home, dovecot, smtp)
    daemon = threads(home, mail_env)
    dovecot.deliver(AGENT, many_recipients(200))
    wait_for(lambda: replies(dovecot), 30, "the answer")
    daemon.stop()
    threads(home, mail_env)
    fake.add(text("Fine."))
    send(smtp, mail("still there?"))
    wait_for(lambda: len(replies(dovecot)) == 2, 30, "the next reply")
    assert len(replies(dovecot)) == 2
    assert os.environ.get("SMARTHOLE_MAIL_PASSWORD") is None, "the password stays in mail_env"
