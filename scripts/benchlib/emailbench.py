"""Row 14: email (issue 46) — a mail's arrival in the agent's folder until its reply is sent.

A real daemon (``python -m smarthole run``) with ``[email]`` on a real Dovecot and an aiosmtpd
server (the test suite's, ``tests/email/servers.py``: an unprivileged Dovecot of its own on
127.0.0.1). Each round a mail is submitted over SMTP and delivered into the folder by
dovecot-lda; the figure is from the end of that delivery to the moment the reply's SMTP DATA
reaches the server: IDLE's wake-up, the fetch, the claim, the turn (the fake answers at
once), the outbox, the sender thread's SMTP hand-over. The baseline is the same turn from a
file renamed into inbox/ of the same daemon until its reply file is in outbox/.
"""

from __future__ import annotations

import os
import smtplib
import sys
import time
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from smarthole.pipeline.message import render_message_file
from smarthole.testing import FakeMessagesAPI

from .procs import daemon, make_home, poll_until, wait_ready
from .report import Row, percentile

REPO = Path(__file__).resolve().parents[2]
AGENT, ME = "agent@example.com", "me@example.com"


def _mail(n: int) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"] = ME, AGENT
    message["Subject"] = f"round {n}"
    message["Message-ID"] = f"<bench-{n}-{time.time_ns()}@client.test>"
    message.set_content(f"hello {n}")
    return message


def email_rows(root: Path, fake: FakeMessagesAPI, rounds: int) -> list[Row]:
    sys.path.insert(0, str(REPO))
    from tests.email.servers import DOVECOT, PASSWORD, Dovecot, MailServer

    if not DOVECOT.exists():
        return [Row("email: mail arrival -> reply sent, p50", None, "ms",
                    detail={"skipped": "Dovecot is not installed"})]  # fmt: skip
    dovecot = Dovecot([AGENT, ME]).start()
    smtp = MailServer(dovecot)
    try:
        return _measure(root, fake, rounds, dovecot, smtp, PASSWORD)
    finally:
        smtp.stop()
        dovecot.close()


def _measure(
    root: Path, fake: FakeMessagesAPI, rounds: int, dovecot: Any, smtp: Any, password: str
) -> list[Row]:
    home = make_home(
        root / "email",
        email={
            "enabled": True, "address": AGENT, "imap_host": "127.0.0.1",
            "imap_port": dovecot.port, "imap_tls": "none", "smtp_host": "127.0.0.1",
            "smtp_port": smtp.port, "smtp_tls": "none", "allow": [ME],
        },
    )  # fmt: skip
    os.environ["SMARTHOLE_MAIL_PASSWORD"] = password  # the daemon's env is os.environ's
    by_mail: list[float] = []
    by_file: list[float] = []
    staging = home.root / ".staging"
    with daemon(home, fake.url) as process:
        wait_ready(home, process)
        for n in range(rounds + 1):  # round 0 warms up (lazy imports, the first connection)
            sent_before = sum(1 for r in smtp.received if r[0] == AGENT)
            with smtplib.SMTP("127.0.0.1", smtp.port, timeout=30) as client:
                client.send_message(_mail(n), from_addr=ME, to_addrs=[AGENT])
            arrived = time.perf_counter()  # the 250 comes after dovecot-lda delivered it
            poll_until(lambda k=sent_before: _replies(smtp) > k, 60, interval=0.0005)
            if n:
                by_mail.append(_last_reply_at(smtp) - arrived)
            replies_before = len(list(home.outbox.glob("*.md")))
            name = f"f{n:04d}.md"
            (staging / name).write_bytes(render_message_file(f"hello {n}", id=f"f{n:04d}"))
            dropped = time.perf_counter()
            os.rename(staging / name, home.inbox / name)
            poll_until(
                lambda k=replies_before: len(list(home.outbox.glob("*.md"))) > k,
                60,
                interval=0.0005,
            )
            if n:
                by_file.append(time.perf_counter() - dropped)
    ms = 1000
    detail = {"rounds": len(by_mail), "max_ms": max(by_mail) * ms}
    return [
        Row("email: mail arrival -> reply sent, p50", percentile(by_mail, 0.5) * ms, "ms",
            baseline=percentile(by_file, 0.5) * ms, baseline_name="file -> reply file",
            detail=detail),
        Row("email: mail arrival -> reply sent, p95", percentile(by_mail, 0.95) * ms, "ms",
            baseline=percentile(by_file, 0.95) * ms, baseline_name="file -> reply file"),
    ]  # fmt: skip


def _replies(smtp: Any) -> int:
    return sum(1 for r in smtp.received if r[0] == AGENT)


def _last_reply_at(smtp: Any) -> float:
    return float(
        next(t for r, t in zip(reversed(smtp.received), reversed(smtp.received_at), strict=True)
             if r[0] == AGENT)
    )  # fmt: skip
