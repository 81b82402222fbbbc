"""The channel's own records are forgotten once they can no longer matter (turned clock):
a refused mail's record while its UID is still offered, a thread's for 30 days."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from smarthole.builtins.email.imap import Account, Mailbox
from smarthole.builtins.email.intake import REFUSED, SENT, MailIntake
from smarthole.builtins.email.prune import Pruner
from smarthole.channels import ChannelHost, ChannelRecords
from smarthole.config import parse_config
from smarthole.db.store import Store
from smarthole.formats import iso
from tests.helpers import turned_clock

from .conftest import AGENT, ME
from .mail import mail
from .servers import PASSWORD, Dovecot

START = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
DAY, HOUR = timedelta(days=1), timedelta(hours=1)


@pytest.fixture
def clock():
    return turned_clock(START)


@pytest.fixture
def host(tmp_path, clock) -> Iterator[ChannelHost]:
    store = Store.open(tmp_path / "db", clock=clock)
    yield ChannelHost(
        "email", ChannelRecords(store, "email"), tmp_path / "inbox", 4096, clock=clock
    )
    store.close()


@pytest.fixture
def box(dovecot: Dovecot) -> Iterator[Mailbox]:
    found = Mailbox(Account("127.0.0.1", dovecot.port, "none", AGENT, PASSWORD, "INBOX"))
    yield found
    found.close()


def intake(host: ChannelHost) -> MailIntake:
    settings = parse_config({"email": {"allow": [ME], "address": AGENT}}).email
    return MailIntake(host, settings)


def kept(host: ChannelHost, prefix: str) -> list[str]:
    return sorted(key for key, _ in host.records.data.items() if key.startswith(prefix))


def test_a_refused_record_lasts_while_its_mail_is_in_the_folder(host, clock, dovecot, box):
    dovecot.deliver(AGENT, bytes(mail("let me in", sender="stranger@elsewhere.test")))
    box.client.noop()  # the session sees the new mail
    intake(host).check(box)
    (record,) = kept(host, REFUSED)
    data = host.records.data
    data.set(REFUSED + f"INBOX/{box.uidvalidity + 1}/1", {"at": iso(START)})  # renumbered
    data.set(REFUSED + "Old/7/1", {"at": iso(START)})  # a folder no longer read
    clock.moments.append(START + 31 * DAY)
    assert Pruner(host).maybe(box) == 2
    assert kept(host, REFUSED) == [record], "still there, still refused: kept however old"
    intake(host).check(box)
    assert host.records.status()["refused"] == 1, "counted once"
    box.client.delete_messages(box.unseen())
    box.client.expunge()
    clock.moments.append(START + 32 * DAY)
    assert Pruner(host).maybe(box) == 1 and kept(host, REFUSED) == []


def test_a_thread_record_lasts_30_days_and_pruning_runs_once_a_day(host, clock, box):
    data = host.records.data
    data.set(SENT + "<old@agent>", {"conversation": "c1", "at": iso(START - 29 * DAY - HOUR)})
    data.set(SENT + "<new@agent>", {"conversation": "c2", "at": iso(START)})
    pruner = Pruner(host)
    assert pruner.maybe(box) == 0, "29 days old: kept"
    clock.moments.append(START + 2 * HOUR)
    assert pruner.maybe(box) == 0, "30 days old now, but a day has not passed"
    assert kept(host, SENT) == [SENT + "<new@agent>", SENT + "<old@agent>"]
    clock.moments.append(START + DAY)
    assert pruner.maybe(box) == 1
    assert kept(host, SENT) == [SENT + "<new@agent>"]
    clock.moments.append(START + 31 * DAY)
    assert Pruner(host).maybe(box) == 1 and kept(host, SENT) == []
