"""``channel = "per-sender"``: each sender a channel of their own, a conversation per thread
within it; their replies, /list and status kept apart."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smarthole.builtins.email.intake import sender_channel
from smarthole.pipeline.message import CHANNEL_PATTERN
from smarthole.testing import text
from tests.helpers import db, wait_for

from .conftest import enable_email
from .mail import channel_status, mail, plain, replies, send

AUNT = "aunt@family.example"


@pytest.mark.parametrize(
    ("sender", "channel"),
    [
        ("me@example.com", "email.me@example.com"),
        ("a.b@x.example", "email.a.b@x.example"),
        ("a_b@x.example", "email.a_b@x.example"),
        ("o'brien@family.example", "email.o_brien_family.example-"),  # then a hash
        ("o_brien@family.example", "email.o_brien@family.example"),
        ('"a@b"@x.example', "email._a_b__x.example-"),
        ("josé@exämple.test", "email.josé@exämple.test"),
        ("x" * 70 + "@long.example", "email." + "x" * 40 + "-"),
    ],
)
def test_a_senders_channel_is_readable_and_valid(sender, channel):
    found = sender_channel(sender)
    assert CHANNEL_PATTERN.fullmatch(found), found
    assert found == channel if channel.count("@") else found.startswith(channel)


def test_addresses_that_differ_only_in_what_a_channel_name_cannot_hold_stay_apart():
    look_alike = ["o'brien@x", "o_brien@x", "o brien@x", "o@brien@x", "o_brien_x", "O'Brien@x"]
    names = {sender_channel(address) for address in look_alike}
    assert len(names) == len(look_alike) - 1, "only the case folds together"


addresses = st.text(min_size=1, max_size=120)


@given(addresses, addresses)
def test_any_address_has_one_valid_channel_and_two_addresses_two(first, second):
    for address in (first, second):
        assert CHANNEL_PATTERN.fullmatch(sender_channel(address))
    if first.lower() != second.lower():
        assert sender_channel(first) != sender_channel(second)


def ledger_channels(home) -> dict[str, set[str]]:
    """Each channel's conversation titles."""
    found: dict[str, set[str]] = {}
    for row in db(home).execute("SELECT channel, title FROM conversations"):
        found.setdefault(row["channel"], set()).add(row["title"])
    return found


def test_two_senders_each_have_their_channel_threads_and_list(
    home, fake, mail_env, threads, dovecot, smtp, capsys
):
    for answer in ("Pizza it is.", "Blue wool.", "Large."):
        fake.add(text(answer))
    enable_email(home, dovecot, smtp, channel="per-sender")
    threads(home, mail_env)
    send(smtp, mail("Order a pizza", subject="Dinner"))
    (mine,) = wait_for(lambda: replies(dovecot), 30, "my reply")
    send(smtp, mail("Knit me a scarf", subject="Scarf", sender=AUNT), envelope=AUNT)
    (hers,) = wait_for(lambda: replies(dovecot, AUNT), 30, "her reply")
    assert plain(mine).strip() == "Pizza it is." and plain(hers).strip() == "Blue wool."
    send(smtp, mail("Large, please.", in_reply_to=mine))
    wait_for(lambda: len(replies(dovecot)) == 2, 30, "my second reply")
    second = replies(dovecot)[1]
    assert second["In-Reply-To"] and mine["Message-ID"] in second["References"]
    assert len(fake.requests[2].messages) == 3, "my thread went on in my conversation"
    assert ledger_channels(home) == {
        "email.me@example.com": {"Dinner"},
        "email.aunt@family.example": {"Scarf"},
    }
    send(smtp, mail("/list", subject="list"))
    send(smtp, mail("/list", subject="list", sender=AUNT), envelope=AUNT)
    my_list = wait_for(lambda: replies(dovecot)[2:], 30, "my /list")[0]
    her_list = wait_for(lambda: replies(dovecot, AUNT)[1:], 30, "her /list")[0]
    assert "Dinner" in plain(my_list) and "Scarf" not in plain(my_list)
    assert "Scarf" in plain(her_list) and "Dinner" not in plain(her_list)
    assert len(fake.requests) == 3, "/list never reached the model"
    details = channel_status(home, capsys)["details"]
    assert details["mode"] == "per-sender"
    assert set(details["senders"]) == {"email.me@example.com", "email.aunt@family.example"}


def test_the_status_line_says_the_channel_is_per_sender():
    from smarthole.cli.channellines import channel_line

    report = {
        "name": "email", "state": "connected", "last_error": None, "waiting": 0, "failing": 0,
        "last_send_error": None,
        "details": {"mode": "per-sender", "senders": ["email.aunt@family.example\x1b[2J"]},
    }  # fmt: skip
    line = channel_line(report)
    assert line == "channel email: connected · per sender, latest email.aunt@family.example^[[2J"
