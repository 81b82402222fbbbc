"""The email channel against real servers: mail in by IMAP IDLE, replies out by SMTP, in thread."""

from __future__ import annotations

import json

from smarthole.cli import main
from smarthole.testing import text, tool_use
from tests.helpers import image_bytes, pdf_bytes, wait_for

from .conftest import enable_email
from .mail import AGENT, channel_events, distinct, mail, plain, replies, send, send_directly
from .mail import channel_status as channel


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
    (connected,) = channel_events(home, capsys, "channel_connected")
    assert connected["folder"] == "INBOX" and connected["tls"] == "none"
    (sent_event,) = channel_events(home, capsys, "delivery_sent")
    assert sent_event["mail_id"] == reply["Message-ID"] and sent_event["attempt"] == 1
    assert sent_event["conversation"] and sent_event["kind"] == "response"


def test_dovecot_restarted_while_idle_misses_nothing(
    home, fake, mail_env, threads, dovecot, smtp, capsys
):
    fake.add(text("First."))
    fake.add(text("Second."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    send(smtp, mail("one"))
    wait_for(lambda: replies(dovecot), 30, "the first reply")
    dovecot.stop()  # while the channel idles
    wait_for(lambda: channel(home, capsys)["state"] == "error", 30, "the loss seen")
    send_directly(dovecot, mail("two"))  # delivered while IMAP is down
    dovecot.start()
    wait_for(lambda: len(replies(dovecot)) == 2, 60, "the second reply")
    assert [plain(r).strip() for r in replies(dovecot)] == ["First.", "Second."]
    wait_for(lambda: channel(home, capsys)["state"] == "connected", 30, "connected again")
    (lost,) = channel_events(home, capsys, "channel_disconnected")
    assert lost["reason"].startswith("the IMAP connection ended")
    assert len(channel_events(home, capsys, "channel_connected")) == 2


def test_an_smtp_failure_is_retried_with_the_same_message_id_and_shown_meanwhile(
    home, fake, mail_env, threads, dovecot, smtp, capsys
):
    fake.add(text("Sent at last."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    smtp.refuse_with = "451 4.3.0 try again later"
    send_directly(dovecot, mail("hello"))
    found = wait_for(lambda: (c := channel(home, capsys))["failing"] and c, 30, "a failure")
    assert found["waiting"] == 1 and "451" in found["last_send_error"]
    main(["status", "--home", str(home)])
    assert "1 delivery waiting (1 failing: 451" in capsys.readouterr().out
    smtp.refuse_with = None
    (reply,) = wait_for(lambda: replies(dovecot), 30, "the reply after the retry")
    assert plain(reply).strip() == "Sent at last."
    assert channel(home, capsys)["waiting"] == 0
    failed = channel_events(home, capsys, "delivery_failed")
    assert failed and failed[0]["attempt"] == 1 and failed[0]["error"].startswith("451")
    (sent_event,) = channel_events(home, capsys, "delivery_sent")
    assert sent_event["attempt"] == len(failed) + 1


def test_attachments_become_the_messages_attachments(home, fake, mail_env, threads, dovecot, smtp):
    fake.add(text("A red square and a PDF."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    files = (
        ("square.png", "image/png", image_bytes()),
        ("doc.pdf", "application/pdf", pdf_bytes()),
    )
    send(smtp, mail("What are these?", attachments=files))
    wait_for(lambda: replies(dovecot), 30, "the reply")
    content = fake.requests[0].messages[-1]["content"]
    assert [block["type"] for block in content][1:] == ["image", "document", "text"]
    assert content[-1]["text"].endswith("What are these?")


def test_a_refused_attachment_is_answered_with_the_rule(
    home, fake, mail_env, threads, dovecot, smtp
):
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    send(smtp, mail("run this", attachments=(("tool.exe", "application/octet-stream", b"MZ"),)))
    (answer,) = wait_for(lambda: replies(dovecot), 30, "the answer")
    assert "tool.exe" in plain(answer) and fake.requests == []


def test_files_the_agent_wrote_go_with_its_reply(home, fake, mail_env, threads, dovecot, smtp):
    fake.add(tool_use("write_file", {"path": "notes/list.md", "content": "- milk\n- eggs\n"}))
    fake.add(text("Here is the list."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    send(smtp, mail("Write my shopping list to a file and send it"))
    (reply,) = wait_for(lambda: replies(dovecot), 30, "the reply")
    (attached,) = list(reply.iter_attachments())
    assert attached.get_filename() == "list.md"
    assert attached.get_content() == "- milk\n- eggs\n"
    assert plain(reply).strip() == "Here is the list."


def test_a_mail_that_comes_while_another_is_taken_is_taken_at_once(
    home, fake, mail_env, threads, dovecot, smtp, monkeypatch
):
    """Its arrival is told in the answer to a command of the first mail's intake, which the
    IMAP client drops; the IDLE after would not hear of it, so the check searches again."""
    from smarthole.builtins.email import intake

    fake.add(text("First."))
    fake.add(text("Second."))
    enable_email(home, dovecot, smtp, check_seconds=600.0)  # no periodic check to rescue it
    original = intake.MailIntake.one
    arrived: list[int] = []

    def one(self, box, uid):
        if not arrived:
            arrived.append(uid)
            send_directly(dovecot, mail("the second one", subject="Two"))
        return original(self, box, uid)

    monkeypatch.setattr(intake.MailIntake, "one", one)
    threads(home, mail_env)
    send(smtp, mail("the first one", subject="One"))
    wait_for(lambda: len(replies(dovecot)) == 2, 20, "both replies")
    assert sorted(r["Subject"] for r in replies(dovecot)) == ["Re: One", "Re: Two"]
