"""What a model call costs: a price per model, and money as integer micro-dollars.

A price is four rates in micro-dollars per million tokens (input, output, 5-minute cache write,
cache read), so a cost is integer arithmetic: the tokens of each kind times their rate, summed,
divided by a million and rounded up. Money is never a float here; config gives dollars, and
:func:`micros` turns them into micro-dollars once.

The built-in table holds Anthropic's published prices for the current Claude models, as taken
on :data:`PRICES_TAKEN`; ``[prices."<model>"]`` in config overrides or extends it. A model name
finds its price exactly, else by the longest entry it starts with followed by ``-`` (so the
dated ``claude-haiku-4-5-20251001`` is priced as ``claude-haiku-4-5``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

MICROS = 1_000_000  # micro-dollars in a dollar
MILLION = 1_000_000  # tokens in the unit a rate is given for
USAGE_RATES = (
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("cache_creation_input_tokens", "cache_write"),
    ("cache_read_input_tokens", "cache_read"),
)
"""Each count of the API's ``usage`` and the rate that prices it."""

PRICES_TAKEN = "2026-11-28"
PRICES_SOURCE = "platform.claude.com/docs/en/about-claude/pricing and each model's overview page"


def micros(dollars: float | int | str) -> int:
    """Dollars (as config writes them) in micro-dollars, rounded to the nearest."""
    try:
        value = Decimal(str(dollars))
    except InvalidOperation as exc:
        raise ValueError(f"{dollars!r} is not an amount of dollars") from exc
    if not value.is_finite():
        raise ValueError(f"{dollars!r} is not an amount of dollars")
    return int((value * MICROS).to_integral_value(rounding=ROUND_HALF_UP))


def dollars(amount: int | None, *, places: int = 4) -> str:
    """Micro-dollars as ``$0.0123`` (``price unknown`` for None); exact, no float."""
    if amount is None:
        return "price unknown"
    sign = "-" if amount < 0 else ""
    shown = (Decimal(abs(amount)) / MICROS).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
    return f"{sign}${shown:,}"


def as_dollars(amount: int | None) -> str | None:
    """Micro-dollars as an exact decimal string for JSON (``"0.012345"``); None stays None."""
    if amount is None:
        return None
    return str(Decimal(amount) / MICROS)


@dataclass(frozen=True)
class Price:
    """Rates of one model, in micro-dollars per million tokens."""

    input: int
    output: int
    cache_write: int
    cache_read: int

    @classmethod
    def of_dollars(
        cls,
        input: float | str,
        output: float | str,
        cache_write: float | str | None = None,
        cache_read: float | str | None = None,
    ) -> Price:
        """Dollars per million tokens; cache write defaults to 1.25 x input, read to 0.1 x."""
        rate = micros(input)
        return cls(
            input=rate,
            output=micros(output),
            cache_write=micros(cache_write) if cache_write is not None else rate * 5 // 4,
            cache_read=micros(cache_read) if cache_read is not None else rate // 10,
        )

    @property
    def prompt_rate(self) -> int:
        """The dearest rate a prompt token can cost (uncached, cache write or cache read)."""
        return max(self.input, self.cache_write, self.cache_read)

    def cost(self, usage: Mapping[str, Any]) -> int:
        """What a response cost, from the usage the API reported (a missing count is 0)."""
        total = sum(_count(usage, key) * getattr(self, rate) for key, rate in USAGE_RATES)
        return -(-total // MILLION)

    def bound(self, prompt_tokens: int, output_tokens: int) -> int:
        """The most a call can cost with at most these prompt and output tokens."""
        total = prompt_tokens * self.prompt_rate + output_tokens * self.output
        return -(-total // MILLION)

    def as_dict(self) -> dict[str, str]:
        return {name: str(Decimal(getattr(self, name)) / MICROS) for _, name in USAGE_RATES}


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _price(input: str, output: str, write: str, read: str) -> Price:
    return Price(micros(input), micros(output), micros(write), micros(read))


# Dollars per million tokens: input, output, 5-minute cache write, cache read. Taken on
# PRICES_TAKEN from PRICES_SOURCE. Left out on purpose: models priced by tiers this table
# cannot say (Claude Haiku 5.5 costs more per token past a 100k-token prompt) and ones whose
# API name could not be confirmed; give those a [prices."<model>"] table.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-5-5": _price("4", "20", "5", "0.20"),
    "claude-opus-5": _price("5", "25", "6.25", "0.50"),
    "claude-sonnet-5-5": _price("2", "10", "2.50", "0.20"),
    "claude-sonnet-5": _price("2", "10", "2.50", "0.20"),
    "claude-opus-4-8": _price("5", "25", "6.25", "0.50"),
    "claude-opus-4-7": _price("5", "25", "6.25", "0.50"),
    "claude-opus-4-6": _price("5", "25", "6.25", "0.50"),
    "claude-opus-4-5": _price("5", "25", "6.25", "0.50"),
    "claude-opus-4-1": _price("15", "75", "18.75", "1.50"),
    "claude-opus-4": _price("15", "75", "18.75", "1.50"),
    "claude-sonnet-4-6": _price("3", "15", "3.75", "0.30"),
    "claude-sonnet-4-5": _price("3", "15", "3.75", "0.30"),
    "claude-sonnet-4": _price("3", "15", "3.75", "0.30"),
    "claude-3-7-sonnet": _price("3", "15", "3.75", "0.30"),
    "claude-haiku-4-5": _price("1", "5", "1.25", "0.10"),
    "claude-3-5-haiku": _price("0.80", "4", "1", "0.08"),
    "claude-3-haiku": _price("0.25", "1.25", "0.30", "0.03"),
}


class PriceTable:
    """The built-in prices, with config's ``[prices."<model>"]`` over them."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self.prices = {**DEFAULT_PRICES, **(overrides or {})}
        self._found: dict[str, Price | None] = {}

    def get(self, model: str) -> Price | None:
        """The price of ``model``: exact, else the longest entry it starts with plus ``-``."""
        if model in self._found:
            return self._found[model]
        found = self.prices.get(model)
        if found is None:
            keys = [k for k in self.prices if model.startswith(k + "-")]
            found = self.prices[max(keys, key=len)] if keys else None
        if len(self._found) < 256:
            self._found[model] = found
        return found

    def cost(self, model: str, usage: Mapping[str, Any]) -> int | None:
        """What a response of ``model`` cost; None when its price is unknown."""
        price = self.get(model)
        return None if price is None else price.cost(usage)


@dataclass(frozen=True)
class PriceSettings:
    """One ``[prices."<model>"]`` table: dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_write: float = -1.0  # absent: 1.25 x input
    cache_read: float = -1.0  # absent: 0.1 x input


def parse_prices(table: dict[str, Any], errors: list[str]) -> dict[str, Price]:
    """The ``[prices]`` table: one sub-table per model, ``input`` and ``output`` required."""
    from .fields import build_settings

    prices: dict[str, Price] = {}
    for model, value in table.items():
        where = f'[prices."{model}"]'
        if not isinstance(value, dict):
            errors.append(f"{where} must be a table")
            continue
        missing = [key for key in ("input", "output") if key not in value]
        if missing:
            errors.append(f"{where} needs {' and '.join(missing)} (dollars per million tokens)")
            continue
        given = build_settings(PriceSettings, value, where, errors)
        rates = (given.input, given.output, given.cache_write, given.cache_read)
        if any(r < 0 for r in rates[:2]) or any(r < 0 and r != -1.0 for r in rates[2:]):
            errors.append(f"{where} a price cannot be negative")
            continue
        prices[model] = Price.of_dollars(
            repr(given.input),
            repr(given.output),
            None if "cache_write" not in value else repr(given.cache_write),
            None if "cache_read" not in value else repr(given.cache_read),
        )
    return prices
