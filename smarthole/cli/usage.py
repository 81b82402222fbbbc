"""What the model cost: ``smarthole show ID --usage`` and the ``usage`` key of ``status``.

Every figure is a sum of the usage the API reported for each response (see
``smarthole.db.usage``); nothing is estimated. Dollars beside them are each response's cost at
its model's price (``smarthole.db.spendreports``), or "price unknown".
"""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import TYPE_CHECKING, Any

from ..errors import ExitCode
from .common import title_line
from .output import print_json

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime
    from ..db.records import Conversation
    from ..db.spendreports import CostTotals
    from ..db.usage import UsageGroup

COLUMNS = (
    ("requests", "requests"),
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("cache_creation_input_tokens", "cache write"),
    ("cache_read_input_tokens", "cache read"),
)


def show_usage(root: Runtime, wanted: str, *, as_json: bool) -> int:
    """Print a conversation's usage (``wanted``: an id or a unique prefix)."""
    conversation = root.conversations.get(wanted)
    report = conversation_usage(
        conversation,
        root.usage.for_conversation(conversation.id),
        root.spend_reports.conversation_costs(conversation.id),
    )
    if as_json:
        print_json(report)
    else:
        print(usage_text(report))
    return ExitCode.OK


def conversation_usage(
    conversation: Conversation,
    groups: list[UsageGroup],
    costs: dict[tuple[str, int | None], CostTotals] | None = None,
) -> dict[str, Any]:
    """Per human turn (team agents included), titles and summaries, and the total."""
    from ..db.usage import UsageTotals

    costs = costs or {}
    total = UsageTotals()
    for group in groups:
        total += group.totals
    priced = [costs.get((g.what, g.turn)) for g in groups]
    return {
        "conversation": conversation.id,
        "title": conversation.title,
        "turns": [
            {"turn": g.turn, **g.totals.as_dict(), **cost_fields(c)}
            for g, c in zip(groups, priced, strict=True)
            if g.what == "turn"
        ],
        "titles_and_summaries": [
            {"purpose": g.what, **g.totals.as_dict(), **cost_fields(c)}
            for g, c in zip(groups, priced, strict=True)
            if g.what != "turn"
        ],
        "total": {
            **total.as_dict(),
            **cost_fields(
                None
                if not priced
                else _summed([c for c in priced if c is not None], total.requests)
            ),
        },
    }


def cost_fields(totals: CostTotals | None) -> dict[str, Any]:
    """``cost`` (exact dollars as a string; None when any response's price is unknown) and
    ``cost_micros`` (an integer)."""
    from ..config.prices import as_dollars

    if totals is None or totals.unpriced:
        return {"cost": None, "cost_micros": None}
    return {"cost": as_dollars(totals.cost), "cost_micros": totals.cost}


def _summed(parts: list[CostTotals], requests: int) -> CostTotals:
    from ..db.spendreports import CostTotals
    from ..db.usage import UsageTotals

    covered = sum(p.tokens.requests for p in parts)
    unpriced = sum(p.unpriced for p in parts) + requests - covered
    return CostTotals(UsageTotals(), sum(p.cost for p in parts), unpriced)


def usage_text(report: dict[str, Any]) -> str:
    """An aligned table: one line per turn, then titles, summaries and the total."""
    title = title_line(report["title"])
    head = f'Usage of "{title}" ({report["conversation"]})'
    if not report["total"]["requests"]:
        return f"{head}\nNo model usage recorded."
    rows = [["turn", *(label for _, label in COLUMNS), "cost"]]
    rows += [[str(t["turn"]), *_figures(t)] for t in report["turns"]]
    rows += [[o["purpose"], *_figures(o)] for o in report["titles_and_summaries"]]
    rows.append(["total", *_figures(report["total"])])
    lines = aligned(rows)
    rate = report["total"]["cache_hit_rate"]
    hit = "no input" if rate is None else f"{rate:.0%} of input tokens read from the cache"
    return "\n".join([head, "", *lines, "", f"cache hit rate: {hit}"])


def aligned(rows: list[list[str]]) -> list[str]:
    """A table's rows as lines: the first column to the left, the figures to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            [
                row[0].ljust(widths[0]),
                *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)),
            ]
        )
        for row in rows
    ]


def _figures(totals: dict[str, Any]) -> list[str]:
    return [f"{totals[key]:,}" for key, _ in COLUMNS] + [money(totals.get("cost_micros"))]


def money(micros: int | None) -> str:
    from ..config.prices import dollars

    return dollars(micros)


def usage_today(root: Runtime) -> dict[str, Any]:
    """``status``'s ``usage``: today's (UTC day) totals, cache hit rate and cost."""
    from ..db.spendreports import Period

    day = root.store.clock().astimezone(UTC).date()
    start = datetime.combine(day, time(), UTC)
    totals = root.usage.since(start)
    costs = root.spend_reports.totals(Period.day(start))
    return {"day": day.isoformat(), **totals.as_dict(), **cost_fields(costs)}


def usage_line(usage: dict[str, Any]) -> str:
    """``usage today (UTC): 12 requests · 3,456 input · ... · cache hit rate 81%``."""
    if not usage["requests"]:
        return "usage today (UTC): no model requests"
    parts = [f"{usage[key]:,} {label}" for key, label in COLUMNS]
    rate = usage["cache_hit_rate"]
    parts.append("cache hit rate " + ("n/a" if rate is None else f"{rate:.0%}"))
    if "cost" in usage:
        parts.append(money(usage["cost_micros"]))
    return "usage today (UTC): " + " · ".join(parts)
