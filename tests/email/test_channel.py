"""The email channel against real servers: mail in by IMAP IDLE, replies out by SMTP, in thread."""

from __future__ import annotations

import json

from smarthole.cli import main
from smarthole.testing import text
from tests.helpers import wait_for

from .conftest import enable_email
from .mail import AGENT, distinct, mail, plain, replies, send


def test_a_mail_is_answered_in_its_thread(home, fake, mail_env, threads, dovecot, smtp, capsys):
    fake.add(text("Added oat milk."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    sent = mail("Add oat milk\n\n-- \nMe, on my phone", subject="Shopping")
    message_id = send(smtp, sent)
    (reply,) = wait_for(lambda: replies(dovecot), 30, "the reply")
    assert reply["Subject"] == "Re: Shopping" and reply["From"] == AGENT
    assert reply["In-Reply-To"] == message_id and message_id in reply["References"]
    assert plain(reply).strip() == "Added oat milk."
    assert reply.get_body(("html",)) is not None
    assert reply["Auto-Submitted"] == "auto-replied"
    assert fake.requests[0].messages[-1]["content"][-1]["text"].endswith("Add oat milk")
    assert main(["status", "--json", "--home", str(home)]) == 0
    (channel,) = json.loads(capsys.readouterr().out)["channels"]
    assert channel["name"] == "email" and channel["state"] == "connected"
    assert len(distinct(replies(dovecot))) == 1
