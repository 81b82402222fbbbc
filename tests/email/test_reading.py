"""Reading a mail without servers: the words, the thread, the screening, the password."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smarthole.builtins.email.compose import compose, reply_message_id
from smarthole.builtins.email.intake import approval_answer
from smarthole.builtins.email.mailparse import parse_mail
from smarthole.builtins.email.mailtext import cut_quotes_and_signature, html_to_text
from smarthole.builtins.email.screening import authenticated, refusal
from smarthole.builtins.email.secret import read_password
from smarthole.channels import Delivery
from smarthole.config import parse_config
from smarthole.errors import ConfigError, MessageError

from .mail import mail


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("Yes please.\n\nOn Sat, 28 Nov 2026, Me <me@example.com> wrote:\n> old", "Yes please."),
        ("Yes.\n\nOn Sat, 28 Nov 2026 at 09:00, Someone\n<a@b.c> wrote:\n> old", "Yes."),
        ("Top.\n-----Original Message-----\nFrom: x", "Top."),
        ("Top.\n\nFrom: Me <me@example.com>\nSent: Saturday\nTo: agent", "Top."),
        ("Hi\n> quoted\nthere", "Hi\nthere"),
        ("Thanks!\n-- \nMe\n+1 555 0100", "Thanks!"),
        ("Thanks!\n\nSent from my iPhone", "Thanks!"),
        ("From: the shop, milk and eggs", "From: the shop, milk and eggs"),
    ],
)
def test_quoted_replies_and_signatures_are_cut(written, kept):
    assert cut_quotes_and_signature(written) == kept


def test_an_html_only_mail_becomes_text():
    markup = (
        "<html><head><style>p{color:red}</style></head><body><p>Buy <b>milk</b></p>"
        "<ul><li>eggs</li><li>bread &amp; butter</li></ul><script>x()</script>"
        "<blockquote>the earlier mail</blockquote></body></html>"
    )
    assert html_to_text(markup) == "Buy milk\n\n- eggs\n\n- bread & butter"
    html_mail = mail("ignored")
    html_mail.set_content(markup, subtype="html")
    assert parse_mail(bytes(html_mail)).text.startswith("Buy milk")


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("approve", ("approve", False, "")),
        ("Approve always\n> the question", ("approve", True, "")),
        ("deny not today", ("deny", False, "not today")),
        ("Deny: too risky\nreally", ("deny", False, "too risky\nreally")),
        ("approved by whom?", None),
        ("I approve", None),
    ],
)
def test_an_approval_is_answered_by_the_first_line(text, answer):
    assert approval_answer(text) == answer


SETTINGS = parse_config(
    {"email": {"address": "agent@example.com", "allow": ["me@example.com", "*@family.example"]}}
).email


@pytest.mark.parametrize(
    ("results", "sender", "passed"),
    [
        (["mx.test; spf=pass smtp.mailfrom=me@example.com"], "me@example.com", True),
        (["mx.test; dkim=pass header.d=example.com; spf=fail"], "me@example.com", True),
        (["mx.test; dkim=pass header.d=mail.example.com"], "me@example.com", True),
        (["mx.test; spf=pass smtp.mailfrom=x@evil.test"], "me@example.com", False),
        (["mx.test; spf=fail; dkim=none"], "me@example.com", False),
        (["mx.test; spf=none", "evil; dkim=pass header.d=example.com"], "me@example.com", False),
        ([], "me@example.com", False),
    ],
    ids=["spf", "dkim", "subdomain", "unaligned", "fail", "forged below", "none"],
)
def test_the_topmost_authentication_results_must_pass_for_the_from_domain(results, sender, passed):
    message = mail("hi", sender=sender)
    for value in results:
        message["Authentication-Results"] = value
    assert authenticated(parse_mail(bytes(message)))[0] is passed


@pytest.mark.parametrize(
    ("sender", "headers", "reason"),
    [
        ("stranger@elsewhere.test", {}, "not in [email] allow"),
        ("agent@example.com", {}, "a loop"),
        ("me@example.com", {"Auto-Submitted": "auto-replied"}, "an automatic mail"),
        ("me@example.com", {"Precedence": "bulk"}, "an automatic mail"),
        ("me@example.com", {}, "not authenticated"),
    ],
)
def test_refusals(sender, headers, reason):
    parsed = parse_mail(bytes(mail("hi", sender=sender, headers=headers)))
    assert reason in (refusal(parsed, SETTINGS) or "")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_give_a_mail_or_the_documented_error(data):
    try:
        parsed = parse_mail(data)
    except MessageError as exc:
        assert str(exc)
    else:
        assert isinstance(parsed.text, str) and "\n" not in parsed.subject


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=100))
def test_any_subject_makes_a_reply_with_one_line_headers(subject, text):
    delivery = Delivery(
        "r1", "m1", "c1", "response", text or "x", "2026-11-28T09:00:00Z",
        origin={"from": "me@example.com", "subject": subject, "message_id": "<a@b>"},
    )  # fmt: skip
    reply = compose(delivery, "agent@example.com")
    assert reply["Message-ID"] == reply_message_id("r1", "agent@example.com")
    for _, value in reply.items():
        assert "\n" not in str(value) and "\r" not in str(value)


def test_the_password_comes_from_the_environment_or_a_private_file(tmp_path):
    assert read_password("MAIL_PW", "", {"MAIL_PW": "s3cret"}, tmp_path) == "s3cret"
    with pytest.raises(ConfigError, match="MAIL_PW is not set"):
        read_password("MAIL_PW", "", {}, tmp_path)
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    secret.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600") as caught:
        read_password("MAIL_PW", "pw", {}, tmp_path)
    assert "s3cret" not in str(caught.value)
    secret.chmod(0o600)
    assert read_password("MAIL_PW", "pw", {}, tmp_path) == "s3cret"


@pytest.mark.parametrize(
    ("settings_", "rule"),
    [
        ({"imap_tls": "none", "imap_host": "imap.example.com"}, "only for 127.0.0.1"),
        ({"smtp_tls": "ssl"}, "smtp_tls must be one of"),
        ({"allow": ["me"]}, "must be an address or *@domain"),
        ({"channel": "per-thread"}, 'channel must be "email" or "per-sender"'),
        ({"enabled": True, "imap_host": "i", "smtp_host": "s", "address": "a@b"}, "allow is"),
    ],
)
def test_a_bad_email_setting_is_a_config_error(settings_, rule):
    with pytest.raises(ConfigError) as caught:
        parse_config({"email": settings_})
    assert "[email]" in str(caught.value) and rule in str(caught.value)


@pytest.mark.parametrize(
    ("mode", "sender", "channel"),
    [
        ("email", "me@example.com", "email"),
        ("per-sender", "me@example.com", "email.me@example.com"),
    ],
)
def test_the_channel_of_a_mail(tmp_path, mode, sender, channel):
    from smarthole.builtins.email.intake import MailIntake
    from smarthole.channels import ChannelHost, ChannelRecords
    from smarthole.db.store import Store
    from smarthole.formats import utc_now

    store = Store.open(tmp_path / "db", clock=utc_now)
    try:
        host = ChannelHost("email", ChannelRecords(store, "email"), tmp_path / "inbox", 4096)
        settings = parse_config(
            {"email": {"channel": mode, "allow": ["*@example.com"], "address": "a@example.com"}}
        ).email
        assert MailIntake(host, settings).channel_for(sender) == channel
    finally:
        store.close()
