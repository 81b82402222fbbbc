"""Prices: the cost of a response from each usage count, by model, in integer micro-dollars."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smarthole.cli import main
from smarthole.config import parse_config
from smarthole.config.prices import DEFAULT_PRICES, Price, PriceTable, dollars, micros
from smarthole.errors import ConfigError
from smarthole.testing import text
from tests.helpers import db, drop, write_config

MILLION = 1_000_000


@pytest.mark.parametrize(
    ("model", "key", "dollars_per_million"),
    [
        ("claude-haiku-4-5", "input_tokens", "1"),
        ("claude-haiku-4-5", "output_tokens", "5"),
        ("claude-haiku-4-5", "cache_creation_input_tokens", "1.25"),
        ("claude-haiku-4-5", "cache_read_input_tokens", "0.10"),
        ("claude-sonnet-4-5", "input_tokens", "3"),
        ("claude-sonnet-4-5", "output_tokens", "15"),
        ("claude-sonnet-4-5", "cache_creation_input_tokens", "3.75"),
        ("claude-sonnet-4-5", "cache_read_input_tokens", "0.30"),
        ("claude-opus-4-1", "output_tokens", "75"),
        ("claude-opus-5-5", "cache_read_input_tokens", "0.20"),
    ],
)
def test_a_million_tokens_of_one_kind_cost_its_published_rate(model, key, dollars_per_million):
    price = PriceTable().get(model)
    assert price is not None
    assert price.cost({key: MILLION}) == micros(dollars_per_million)


def test_a_cost_is_the_sum_of_its_counts_rounded_up_to_a_micro_dollar():
    price = DEFAULT_PRICES["claude-haiku-4-5"]
    usage = {
        "input_tokens": 3,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1,
    }
    # 3 x 1 + 1 x 5 + 1 x 0.1 = 8.1 micro-dollars: 9, never less than was spent.
    assert price.cost(usage) == 9
    assert price.cost({}) == 0
    assert price.cost({"input_tokens": None, "output_tokens": True}) == 0


@given(
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**6),
    st.sampled_from(sorted(DEFAULT_PRICES)),
)
def test_the_bound_of_a_call_is_never_below_its_cost(fresh, written, read, output, model):
    price = DEFAULT_PRICES[model]
    usage = {
        "input_tokens": fresh,
        "output_tokens": output,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
    }
    assert price.cost(usage) <= price.bound(fresh + written + read, output)


@pytest.mark.parametrize(
    ("model", "found"),
    [
        ("claude-haiku-4-5", "claude-haiku-4-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-haiku-4", None),
        ("gpt-4", None),
    ],
)
def test_a_dated_model_finds_the_price_of_its_family(model, found):
    table = PriceTable()
    assert table.get(model) == (DEFAULT_PRICES[found] if found else None)


def test_config_overrides_and_extends_the_table():
    config = parse_config(
        {
            "prices": {
                "claude-haiku-4-5": {"input": 2.0, "output": 10.0},
                "my-model": {"input": 0.5, "output": 1.5, "cache_write": 0.6, "cache_read": 0},
            }
        }
    )
    table = PriceTable(config.prices)
    assert table.get("claude-haiku-4-5") == Price(2_000_000, 10_000_000, 2_500_000, 200_000)
    assert table.get("my-model") == Price(500_000, 1_500_000, 600_000, 0)
    assert table.get("claude-sonnet-4-5") == DEFAULT_PRICES["claude-sonnet-4-5"]


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"m": {"input": 1.0}}, '[prices."m"] needs output'),
        ({"m": {"input": -1.0, "output": 1.0}}, "cannot be negative"),
        ({"m": {"input": 1.0, "output": 1.0, "cached": 1.0}}, "unknown key 'cached'"),
        ({"m": 3}, '[prices."m"] must be a table'),
    ],
)
def test_a_bad_price_table_is_a_config_error(table, said):
    with pytest.raises(ConfigError, match=said.replace("[", r"\[").replace("]", r"\]")):
        parse_config({"prices": table})


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0, "$0.0000"),
        (1, "$0.0000"),
        (50, "$0.0001"),
        (1_234_567, "$1.2346"),
        (None, "price unknown"),
    ],
)
def test_micro_dollars_are_shown_as_dollars(amount, shown):
    assert dollars(amount) == shown


def test_dollars_become_micro_dollars_without_float_drift():
    assert micros(0.1) + micros(0.2) == micros(0.3) == 300_000
    assert micros("2.00") == 2_000_000


def test_the_daemon_refuses_to_start_with_a_cap_and_a_model_of_unknown_price(home, environ, capsys):
    write_config(home, model={"name": "claude-unknown-9"}, budget={"per_day": 5.0})
    assert main(["run", "--home", str(home), "--once"]) == 2
    err = capsys.readouterr().err
    assert "claude-unknown-9" in err and '[prices."claude-unknown-9"]' in err


def test_without_a_cap_a_model_of_unknown_price_runs_and_its_cost_is_unknown(home, environ, fake):
    write_config(home, model={"name": "claude-unknown-9"})
    fake.add(text("hi"))
    drop(home, "hello", "m1")
    assert main(["run", "--home", str(home), "--once"]) == 0
    (row,) = db(home).execute("SELECT state, cost FROM spend").fetchall()
    assert (row["state"], row["cost"]) == ("spent", None)
