"""What the model cost, summed for people: tokens (``usage``) beside dollars (``spend``).

Every response has a ``usage`` row; its ``spend`` row (``usage_id``) holds its cost. A
response with no cost (stored before costs were, or of a model with no known price) is
counted as ``unpriced``, never as free.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .connection import Database
from .usage import COUNTS, UsageTotals

GROUPS = {
    "conversation": "u.conversation_id",
    "channel": "COALESCE(s.channel, c.channel)",
    "model": "u.model",
    "schedule": "s.schedule",
}
"""What ``smarthole usage --by`` groups by, as the column that says it."""
_SUMS = (
    "COUNT(*) AS requests, "
    + ", ".join(f"COALESCE(SUM(u.{c}), 0) AS {c}" for c in COUNTS)
    + ", COALESCE(SUM(s.cost), 0) AS cost, COUNT(*) - COUNT(s.cost) AS unpriced"
)
_FROM = (
    "FROM usage u LEFT JOIN spend s ON s.usage_id = u.id "
    "LEFT JOIN conversations c ON c.id = u.conversation_id"
)


@dataclass(frozen=True)
class CostTotals:
    """Token counts and what they cost, over ``tokens.requests`` responses."""

    tokens: UsageTotals
    cost: int  # micro-dollars, over the priced responses
    unpriced: int  # responses whose cost is unknown

    @classmethod
    def from_row(cls, row: Any) -> CostTotals:
        return cls(UsageTotals.from_row(row), int(row["cost"]), int(row["unpriced"]))


@dataclass(frozen=True)
class Period:
    """A UTC day or month (or all time), as bounds on a response's time."""

    name: str  # "2026-11-28", "2026-11" or "all"
    start: str | None = None
    end: str | None = None

    @classmethod
    def day(cls, day: datetime) -> Period:
        start = day.replace(hour=0, minute=0, second=0, microsecond=0)
        return cls(start.date().isoformat(), _iso(start), _iso(start + timedelta(days=1)))

    @classmethod
    def month(cls, moment: datetime) -> Period:
        start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        after = (start + timedelta(days=32)).replace(day=1)
        return cls(start.date().isoformat()[:7], _iso(start), _iso(after))

    def where(self) -> tuple[str, tuple[str, ...]]:
        if self.start is None or self.end is None:
            return "", ()
        return "WHERE u.at >= ? AND u.at < ?", (self.start, self.end)


def _iso(moment: datetime) -> str:
    from ..formats import iso

    return iso(moment)


class SpendReports:
    """Reads ``usage`` and ``spend`` together; writes nothing."""

    def __init__(self, store: Database) -> None:
        self.store = store

    def totals(self, period: Period) -> CostTotals:
        where, params = period.where()
        row = self.store.query_one(f"SELECT {_SUMS} {_FROM} {where}", params)
        assert row is not None
        return CostTotals.from_row(row)

    def grouped(self, by: str, period: Period) -> list[tuple[str | None, CostTotals]]:
        """Per conversation, channel, model or schedule, dearest first."""
        column = GROUPS[by]
        where, params = period.where()
        rows = self.store.query(
            f"SELECT {column} AS grouped_by, {_SUMS} {_FROM} {where} GROUP BY grouped_by "
            "ORDER BY cost DESC, requests DESC, grouped_by",
            params,
        )
        return [(row["grouped_by"], CostTotals.from_row(row)) for row in rows]

    def conversation_costs(self, conversation_id: str) -> dict[tuple[str, int | None], CostTotals]:
        """A conversation's costs as ``show --usage`` groups them: per human turn (team agents
        included), then per title and summary."""
        rows = self.store.query(
            "SELECT CASE WHEN u.purpose IN ('turn', 'agent_turn') THEN 'turn' ELSE u.purpose END "
            f"AS what, CASE WHEN u.purpose IN ('turn', 'agent_turn') THEN u.turn END AS n, {_SUMS} "
            f"{_FROM} WHERE u.conversation_id = ? GROUP BY what, n",
            (conversation_id,),
        )
        return {(row["what"], row["n"]): CostTotals.from_row(row) for row in rows}
