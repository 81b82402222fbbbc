"""Helpers of the budget tests: calls whose usage is scripted, so what each cost is known."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from smarthole.config.prices import DEFAULT_PRICES
from smarthole.testing import FakeMessagesAPI, tool_use
from tests.helpers import read_outbox, write_config

MODEL = "claude-haiku-4-5"
PRICE = DEFAULT_PRICES[MODEL]
USAGE = {
    "input_tokens": 900,
    "output_tokens": 120,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 2000,
}
CALL = PRICE.cost(USAGE)  # 900 + 600 + 375 + 200 micro-dollars


def looping(fake: FakeMessagesAPI, times: int = 400, **rule: Any) -> None:
    """Requests answered with a tool call that costs ``CALL``: a turn that never ends."""
    fake.add(replace(tool_use("list_files", {}), usage=USAGE), times=times, **rule)


def spent(fake: FakeMessagesAPI) -> int:
    """What every request the fake received cost, at the usage it reported."""
    return CALL * len(fake.requests)


def budget_items(home: Path) -> list:
    return [f for f in read_outbox(home) if f["kind"] == "approval"]


def capped_sections(timeout: str = "1h") -> dict[str, dict[str, Any]]:
    """Config sections whose turns loop on tools for as long as a cap lets them."""
    return {
        "model": {"name": MODEL, "max_tokens": 512},
        "conversation": {"max_tool_iterations": 500},
        "approvals": {"timeout": timeout},
    }


def write_capped(home: Path, *, timeout: str = "1h", **sections: Any) -> Path:
    write_config(home, **capped_sections(timeout), **sections)
    return home
