"""Threads are conversations; an approval is answered by replying to its mail."""

from __future__ import annotations

from smarthole.testing import text, tool_use
from tests.helpers import TEST_PLUGINS, db, tool_runs, wait_for

from .conftest import enable_email
from .mail import mail, plain, replies, send


def conversations(home) -> list[tuple[str, str]]:
    rows = db(home).execute("SELECT id, title FROM conversations ORDER BY created_at")
    return [(row["id"], row["title"]) for row in rows]


def test_a_reply_continues_the_conversation_and_a_new_subject_starts_one(
    home, fake, mail_env, threads, dovecot, smtp
):
    fake.add(text("Which size?"))
    fake.add(text("Large it is."))
    fake.add(text("Hello again."))
    enable_email(home, dovecot, smtp)
    threads(home, mail_env)
    send(smtp, mail("Order a pizza", subject="Dinner"))
    (first,) = wait_for(lambda: replies(dovecot), 30, "the first reply")
    send(smtp, mail("Large, please.\n\nOn Sat, Me wrote:\n> Order a pizza", in_reply_to=first))
    wait_for(lambda: len(replies(dovecot)) == 2, 30, "the second reply")
    second = replies(dovecot)[1]
    assert second["Subject"] == "Re: Dinner" and plain(second).strip() == "Large it is."
    assert first["Message-ID"] in second["References"]
    history = fake.requests[1].messages
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[-1]["content"][-1]["text"].endswith("Large, please."), "the quote was cut"
    assert conversations(home)[0][1] == "Dinner", "the subject is the title"
    send(smtp, mail("Hi", subject="Something else"))
    wait_for(lambda: len(replies(dovecot)) == 3, 30, "the third reply")
    assert [title for _, title in conversations(home)] == ["Dinner", "Something else"]
    assert len(fake.requests[2].messages) == 1, "a new subject is a new conversation"


def enable_email_asking(home, dovecot, smtp) -> None:
    """Email on, with the test plugin's non-idempotent ``record`` tool asking for approval."""
    plugins = {"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]}
    enable_email(
        home, dovecot, smtp, sections={"plugins": plugins, "approvals": {"tools": ["record"]}}
    )


def test_an_approval_is_answered_by_replying_approve(home, fake, mail_env, threads, dovecot, smtp):
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(text("Recorded."))
    enable_email_asking(home, dovecot, smtp)
    threads(home, mail_env)
    send(smtp, mail("record once", subject="Log it"))
    (asking,) = wait_for(lambda: replies(dovecot), 30, "the approval item")
    assert "approve always" in plain(asking) and "record" in plain(asking)
    assert tool_runs(home) == []
    send(smtp, mail("Approve\n\n> record once", in_reply_to=asking))
    wait_for(lambda: len(replies(dovecot)) == 2, 30, "the final reply")
    assert plain(replies(dovecot)[1]).strip() == "Recorded."
    assert tool_runs(home) == ["record once"]


def test_deny_with_a_reason_reaches_the_model(home, fake, mail_env, threads, dovecot, smtp):
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(text("I will not."))
    enable_email_asking(home, dovecot, smtp)
    threads(home, mail_env)
    send(smtp, mail("record once"))
    (asking,) = wait_for(lambda: replies(dovecot), 30, "the approval item")
    send(smtp, mail("deny not today", in_reply_to=asking))
    wait_for(lambda: len(replies(dovecot)) == 2, 30, "the final reply")
    (result,) = fake.requests[-1].tool_results
    assert result["content"] == "Error: denied by the person: not today"
    assert tool_runs(home) == []
