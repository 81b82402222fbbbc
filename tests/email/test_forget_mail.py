"""``smarthole forget`` erases a mailed conversation from the home: the channel's records of
its mails and replies (with their senders, subjects and texts) go with it."""

from __future__ import annotations

from smarthole.testing import text
from tests.helpers import db, finals, in_process, wait_for
from tests.pipeline.test_forget import found_in

from .conftest import enable_email
from .mail import mail, replies, send

CANARY = b"zqxcanary"


def email_keys(home) -> list[str]:
    rows = db(home).execute("SELECT key FROM plugin_data WHERE plugin = 'email' ORDER BY key")
    return [row["key"] for row in rows]


def test_forget_erases_the_email_channels_records_of_the_conversation(
    home, fake, mail_env, threads, dovecot, smtp, capsys
):
    fake.add(text("Noted, zqxcanary-reply."))
    fake.add(text("Something else."))
    enable_email(home, dovecot, smtp)
    daemon = threads(home, mail_env)
    send(smtp, mail("My word is zqxcanary-text", subject="The zqxcanary talk"))
    wait_for(lambda: replies(dovecot), 30, "the reply")
    send(smtp, mail("Another matter", subject="Other"))
    wait_for(lambda: len(replies(dovecot)) == 2, 30, "the second reply")
    wait_for(lambda: len(finals(home)) == 2, 10, "both replies recorded")
    daemon.stop()
    first = next(f for f in finals(home) if "zqxcanary" in f.text)["conversation"]
    before = email_keys(home)
    assert found_in(home, CANARY), "the canary was stored"
    done = in_process(capsys, "forget", first, "--yes", "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert found_in(home, CANARY) == []
    after = email_keys(home)
    assert len([k for k in after if k.startswith("message:")]) == 1  # the other mail's
    assert len([k for k in after if k.startswith("delivery:")]) == 1
    assert len([k for k in after if k.startswith("sent:")]) == 1
    assert len(after) < len(before)
