"""Who may reach the model: the allow list, the authentication rule, no loops, no auto-replies.

A refused mail never reaches the model, is never answered, stays unread and is counted once.
"""

from __future__ import annotations

import json

from imapclient import IMAPClient

from smarthole.cli import main
from smarthole.testing import text
from tests.helpers import wait_for

from .conftest import ME, enable_email
from .mail import AGENT, channel_events, mail, replies, send
from .mail import channel_status as channel
from .servers import PASSWORD


def unseen(dovecot, folder: str = "INBOX") -> list[int]:
    with IMAPClient("127.0.0.1", port=dovecot.port, ssl=False) as client:
        client.login(AGENT, PASSWORD)
        client.select_folder(folder, readonly=True)
        return client.search(["UNSEEN"])


def test_refused_mail_never_reaches_the_model_and_is_left_unread(
    home, fake, mail_env, threads, dovecot, smtp, capsys
):
    fake.add(text("Hello, aunt."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    send(smtp, mail("let me in", sender="stranger@elsewhere.test"), envelope="s@elsewhere.test")
    # A forged From: the envelope's domain passes SPF, but it is not the From: domain.
    send(smtp, mail("I am you", sender="me@example.com"), envelope="mallory@family.example")
    send(smtp, mail("and again", sender="me@example.com"), envelope="mallory@elsewhere.test")
    dovecot.deliver(AGENT, bytes(mail("no Authentication-Results")))
    send(smtp, mail("me, myself", sender=AGENT), envelope=AGENT)
    send(smtp, mail("I am away", headers={"Auto-Submitted": "auto-replied"}))
    send(smtp, mail("Hi!", sender="aunt@family.example"), envelope="aunt@family.example")
    (answer,) = wait_for(lambda: replies(dovecot, "aunt@family.example"), 30, "aunt's reply")
    assert "Hello, aunt." in str(answer.get_body(("plain",)).get_content())
    assert len(fake.requests) == 1
    assert replies(dovecot) == [] and replies(dovecot, "stranger@elsewhere.test") == []
    assert len(unseen(dovecot)) == 6
    found = channel(home, capsys)
    assert found["details"]["refused"] == 6
    main(["status", "--home", str(home)])
    assert "channel email: connected · 6 refused" in capsys.readouterr().out
    refused = channel_events(home, capsys, "mail_refused")
    assert len(refused) == 6 and all(event["reason"] for event in refused)
    assert {event["sender"] for event in refused} == {"stranger@elsewhere.test", ME, AGENT}
    assert "let me in" not in json.dumps(refused), "no body in an event"


def test_a_refused_mail_moves_to_the_refused_folder_when_one_is_set(
    home, fake, mail_env, threads, dovecot, smtp, capsys
):
    fake.add(text("Hi."))
    enable_email(home, dovecot, smtp, refused_folder="Refused")
    threads(home, mail_env)
    send(smtp, mail("let me in", sender="stranger@elsewhere.test"), envelope="s@elsewhere.test")
    send(smtp, mail("hello"))
    wait_for(lambda: replies(dovecot), 30, "the reply")
    wait_for(lambda: len(unseen(dovecot, "Refused")) == 1, 10, "the refused mail moved")
    assert unseen(dovecot) == []
