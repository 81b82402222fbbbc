"""Caps: a conversation's spend never passes its cap, spends most of it, and a cap reached asks.

Each test scripts the fake's usage per rule, so what every request sent cost is known: the
price of the model times the usage the fake reported. The cap is checked against the sum of
those, over every request the fake received.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.config.prices import micros
from smarthole.db.spend import Spend
from smarthole.db.store import Store
from tests.helpers import db, drop, finals, wait_for
from tests.spending import budget_items, looping, spent, write_capped

CAP = 0.05


def events_of(home: Path, type: str) -> list:
    rows = db(home).execute("SELECT data FROM events WHERE type = ? ORDER BY id", (type,))
    return [json.loads(row["data"]) for row in rows]


@pytest.fixture
def capped(home):
    return write_capped(home, budget={"per_conversation": CAP})


def test_a_capped_conversation_never_passes_its_cap_and_spends_most_of_it(
    capped, fake, env, live_daemon, capsys
):
    looping(fake)
    drop(capped, "look around, forever", "m1")
    item = wait_for(lambda: budget_items(capped), 30, "the budget question")[0]
    assert item["question"] == "budget" and item["cap"] == "per_conversation"
    assert spent(fake) <= micros(CAP)
    assert spent(fake) >= 0.8 * micros(CAP)
    (row,) = db(capped).execute("SELECT COALESCE(SUM(cost), 0) AS c FROM spend").fetchall()
    assert row["c"] == spent(fake)  # each response's cost, stored as the fake reported it
    assert item["limit"] == "0.05" and item["raise_by"] == "0.05"
    assert "per-conversation budget" in item.text
    # The read API a /usage chat command uses, and status, agree with the fake.
    store = Store.open(capped / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        spend = Spend(store)
        assert spend.of_conversation(item["conversation"]) == spent(fake)
        assert spend.of_day(datetime.now(UTC)) == spend.of_month(datetime.now(UTC)) == spent(fake)
    finally:
        store.close()
    assert main(["status", "--home", str(capped), "--json"]) == 0
    (held,) = json.loads(capsys.readouterr().out)["budget"]["held"]
    assert (held["approval"], held["cap"]) == (item["approval"], "per_conversation")


def test_deny_ends_the_turn_with_a_reply_naming_the_cap(capped, fake, env, live_daemon):
    looping(fake)
    drop(capped, "look around, forever", "m1")
    item = wait_for(lambda: budget_items(capped), 30, "the budget question")[0]
    sent = len(fake.requests)
    drop(capped, "", "a1", deny=item["approval"])
    (final,) = wait_for(lambda: finals(capped), 10, "the final reply")
    assert "per-conversation budget of $0.05 is reached" in final.text
    assert "the person said no" in final.text
    assert len(fake.requests) == sent  # the held call was never sent
    (completed,) = wait_for(lambda: events_of(capped, "turn_completed"), 10, "the event")
    assert completed["cost_micros"] == spent(fake)


def test_approve_raises_the_cap_and_the_same_call_goes_on(capped, fake, env, live_daemon):
    looping(fake)
    drop(capped, "look around, forever", "m1")
    first = wait_for(lambda: budget_items(capped), 30, "the budget question")[0]
    before = fake.requests[-1]
    assert main(["approve", "--home", str(capped), first["approval"]]) == 0  # as from a terminal
    second = wait_for(lambda: budget_items(capped)[1:], 30, "the question at the raised cap")[0]
    # The held call went on where it was: one more tool round than the last call sent.
    after = fake.requests[fake.requests.index(before) + 1]
    assert len(after.messages) == len(before.messages) + 2
    assert second["limit"] == "0.1" and second["spent"] != first["spent"]
    assert 0.8 * micros(2 * CAP) <= spent(fake) <= micros(2 * CAP)
    with db(capped) as connection:
        (raised,) = connection.execute("SELECT cap, amount FROM budget_raises").fetchall()
    assert (raised["cap"], raised["amount"]) == ("per_conversation", micros(CAP))
    drop(capped, "", "a2", deny=second["approval"])
    (final,) = wait_for(lambda: finals(capped), 10, "the final reply")
    assert "budget of $0.10 is reached" in final.text


def test_no_answer_in_time_ends_the_turn(home, fake, env, threads):
    threads(write_capped(home, timeout="1s", budget={"per_conversation": CAP}), env)
    looping(fake)
    drop(home, "look around, forever", "m1")
    (final,) = wait_for(lambda: finals(home), 30, "the final reply after the timeout")
    assert "no answer in time" in final.text
    assert spent(fake) <= micros(CAP)
