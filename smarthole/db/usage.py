"""The ``usage`` table: what each model response cost, as the API counted it.

One row per response: the four token counts of the API's ``usage`` (a missing one is 0; nothing
is ever estimated), where the response belongs (conversation, human turn, team task and agent)
and why the model was called (``PURPOSES``). A reply that is stored records its usage in the
same transaction as the reply, so the two commit together or not at all.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..formats import iso
from .connection import Database

PURPOSES = ("turn", "agent_turn", "title", "summary")
"""The entry agent's calls in a human turn, a team agent's, a title's and a summary's."""
COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
_SUMS = "COUNT(*) AS requests, " + ", ".join(f"COALESCE(SUM({c}), 0) AS {c}" for c in COUNTS)


@dataclass(frozen=True)
class UsageTotals:
    """Token counts summed over ``requests`` responses."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def cache_hit_rate(self) -> float | None:
        """The share of prompt tokens read from the cache; None when nothing was sent."""
        prompt = self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
        return self.cache_read_input_tokens / prompt if prompt else None

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.requests + other.requests,
            *(getattr(self, count) + getattr(other, count) for count in COUNTS),
        )

    def as_dict(self) -> dict[str, Any]:
        rate = self.cache_hit_rate
        return {
            "requests": self.requests,
            **{count: getattr(self, count) for count in COUNTS},
            "cache_hit_rate": None if rate is None else round(rate, 4),
        }

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> UsageTotals:
        return cls(int(row["requests"]), *(int(row[count]) for count in COUNTS))


@dataclass(frozen=True)
class UsageGroup:
    """A conversation's usage for one human turn (``what="turn"``, the entry agent and any
    team agents together), or for its titles or its summaries (``what`` is the purpose)."""

    what: str
    turn: int | None
    totals: UsageTotals


class UsageLog:
    """Writes and sums the ``usage`` table."""

    def __init__(self, store: Database) -> None:
        self.store = store

    def record(
        self,
        usage: Mapping[str, Any],
        *,
        purpose: str,
        model: str,
        conversation_id: str | None,
        turn: int | None,
        task_id: str | None = None,
        agent: str | None = None,
        db: sqlite3.Connection | None = None,
    ) -> int | None:
        """Store one response's usage; commits, or joins the caller's transaction. Its row id."""
        if purpose not in PURPOSES:
            raise ValueError(f"unknown usage purpose {purpose!r}")
        with contextlib.ExitStack() as stack:
            connection = db or stack.enter_context(self.store.transaction())
            cursor = connection.execute(
                "INSERT INTO usage (at, conversation_id, turn, task_id, agent, purpose, model, "
                f"{', '.join(COUNTS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.store.now(),
                    conversation_id,
                    turn,
                    task_id,
                    agent,
                    purpose,
                    model,
                    *(_count(usage, count) for count in COUNTS),
                ),
            )
            return cursor.lastrowid

    def for_conversation(self, conversation_id: str) -> list[UsageGroup]:
        """Per human turn in turn order, then titles, then summaries."""
        rows = self.store.query(
            "SELECT CASE WHEN purpose IN ('turn', 'agent_turn') THEN 'turn' ELSE purpose END "
            f"AS what, turn, {_SUMS} FROM usage WHERE conversation_id = ? GROUP BY what, "
            "CASE WHEN purpose IN ('turn', 'agent_turn') THEN turn END "
            "ORDER BY what != 'turn', what, turn",
            (conversation_id,),
        )
        return [
            UsageGroup(
                row["what"],
                row["turn"] if row["what"] == "turn" else None,
                UsageTotals.from_row(row),
            )
            for row in rows
        ]

    def since(self, moment: datetime) -> UsageTotals:
        """Every response at or after ``moment``, summed."""
        row = self.store.query_one(f"SELECT {_SUMS} FROM usage WHERE at >= ?", (iso(moment),))
        return UsageTotals() if row is None else UsageTotals.from_row(row)


def _count(usage: Mapping[str, Any], key: str) -> int:
    """One count of the API's usage; missing (or not a count, e.g. null) is 0."""
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
