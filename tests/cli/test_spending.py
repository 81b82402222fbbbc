"""``smarthole usage`` and the ``budget`` of ``status``: dollars beside tokens, matching the
sum of what the fake reported."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from smarthole.cli import main
from smarthole.config.prices import DEFAULT_PRICES, dollars
from smarthole.db.spend import Spend, SpendPlace
from smarthole.db.store import Store
from smarthole.db.usage import COUNTS
from smarthole.testing import text, tool_use
from tests.helpers import drop, run_once, write_config

PRICE = DEFAULT_PRICES["claude-haiku-4-5"]
FIRST = dict(zip(COUNTS, (1200, 80, 2048, 0), strict=True))
SECOND = dict(zip(COUNTS, (1300, 40, 0, 2048), strict=True))
THIRD = dict(zip(COUNTS, (150, 20, 0, 2048), strict=True))
COSTS = {"default": PRICE.cost(FIRST) + PRICE.cost(SECOND), "work": PRICE.cost(THIRD)}
TOTAL = sum(COSTS.values())


def usd(micros: int) -> str:
    """Micro-dollars as the exact decimal string the JSON carries."""
    return str(Decimal(micros) / 1_000_000)


def cli(home, capsys, *args: str) -> str:
    capsys.readouterr()
    code = main([args[0], "--home", str(home), *args[1:]])
    assert code == (3 if args[0] == "status" else 0)  # status: no daemon is running
    return capsys.readouterr().out


@pytest.fixture
def spent(home, fake, env):
    """A tool loop of two calls in channel default, one call in channel work."""
    write_config(home, budget={"per_day": 1.0})
    fake.add(replace(tool_use("list_files", {}), usage=FIRST))
    fake.add(text("Nothing there.", usage=SECOND))
    fake.add(text("Still nothing.", usage=THIRD))
    drop(home, "look", "m1")
    run_once(home, env)
    drop(home, "look again", "m2", channel="work")
    run_once(home, env)
    return home


def test_usage_json_totals_match_the_fakes_usage(spent, capsys):
    report = json.loads(cli(spent, capsys, "usage", "--json"))
    assert report["period"] == "all"
    total = report["total"]
    assert total["requests"] == 3
    assert total["input_tokens"] == 1200 + 1300 + 150
    assert total["cost_micros"] == TOTAL
    assert total["cost"] == usd(TOTAL) and total["unpriced"] == 0


@pytest.mark.parametrize("period", [["--day"], ["--month"], []])
def test_today_this_month_and_all_time_are_the_same_on_the_first_day(spent, capsys, period):
    report = json.loads(cli(spent, capsys, "usage", *period, "--json"))
    assert report["total"]["cost_micros"] == TOTAL


def test_another_day_spent_nothing(spent, capsys):
    report = json.loads(cli(spent, capsys, "usage", "--day", "2020-01-01", "--json"))
    assert (report["period"], report["total"]["requests"]) == ("2020-01-01", 0)
    assert "No model usage recorded." in cli(spent, capsys, "usage", "--month", "2020-01")


def test_usage_by_channel(spent, capsys):
    report = json.loads(cli(spent, capsys, "usage", "--by", "channel", "--json"))
    by = {g["channel"]: g["cost_micros"] for g in report["groups"]}
    assert by == COSTS


def test_usage_by_model_as_a_table(spent, capsys):
    out = cli(spent, capsys, "usage", "--by", "model").splitlines()
    assert out[0] == "Usage, all time, by model"
    assert out[2].split() == [
        "model",
        "requests",
        "input",
        "output",
        "cache",
        "write",
        "cache",
        "read",
        "cost",
    ]
    assert out[3].split()[0] == "claude-haiku-4-5" and out[3].endswith(dollars(TOTAL))
    assert out[4].startswith("total")


def test_usage_by_conversation_counts_each(spent, capsys):
    report = json.loads(cli(spent, capsys, "usage", "--by", "conversation", "--json"))
    assert sorted(g["cost_micros"] for g in report["groups"]) == sorted(COSTS.values())


def test_status_shows_todays_spend_and_what_the_day_cap_has_left(spent, capsys):
    budget = json.loads(cli(spent, capsys, "status", "--json"))["budget"]
    today = budget["today"]
    assert today["period"] == datetime.now(UTC).date().isoformat()
    assert today["spent"] == usd(TOTAL)
    assert today["cap"] == "1" and today["remaining"] == usd(1_000_000 - TOTAL)
    assert budget["month"]["cap"] is None and budget["held"] == [] and budget["reserved"] == []
    lines = cli(spent, capsys, "status").splitlines()
    assert (
        f"spend today (UTC): {dollars(TOTAL)} of $1.0000 ({dollars(1_000_000 - TOTAL)} left)"
        in lines
    )


def test_a_reservation_with_no_response_counts_and_is_shown(spent, capsys):
    store = Store.open(spent / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        place = SpendPlace("turn", conversation_id="c1", turn=1)
        Spend(store).reserve(place, model="claude-haiku-4-5", bound=1000, request_bytes=1, caps=[])
    finally:
        store.close()
    budget = json.loads(cli(spent, capsys, "status", "--json"))["budget"]
    assert budget["today"]["spent"] == usd(TOTAL + 1000)
    assert [r["bound"] for r in budget["reserved"]] == ["0.001"]
    assert "reserved by calls with no response yet: 1 ($0.0010, counted as spent)" in cli(
        spent, capsys, "status"
    )


def test_the_price_table_lists_the_built_in_prices_and_configs(home, capsys):
    write_config(home)
    with open(home / "config.toml", "a") as config:
        config.write('\n[prices."my-model"]\ninput = 0.5\noutput = 2.0\n')
    table = json.loads(cli(home, capsys, "usage", "--prices", "--json"))
    assert table["prices"]["my-model"] == {
        "input": "0.5",
        "output": "2",
        "cache_write": "0.625",
        "cache_read": "0.05",
    }
    assert table["prices"]["claude-haiku-4-5"]["output"] == "5" and table["taken"]
