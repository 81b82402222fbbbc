"""What the model cost in dollars: ``smarthole usage`` and the ``budget`` of ``status``.

A report is a sum of each response's usage as the API reported it, beside its cost at its
model's price (``db.spendreports``); the caps' figures count what is spent plus what calls in
flight (or cut short by a crash) reserved (``db.spend``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import ExitCode, UsageError
from .output import print_json
from .usage import COLUMNS, aligned, cost_fields, money

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime
    from ..db.spendreports import CostTotals, Period


def period_of(day: str | None, month: str | None, now: datetime) -> Period:
    """The period ``--day [DATE]`` / ``--month [YYYY-MM]`` name (``"today"``: now's), or all."""
    from ..db.spendreports import Period

    try:
        if day is not None:
            moment = now if day == "today" else datetime.fromisoformat(day).replace(tzinfo=UTC)
            return Period.day(moment.astimezone(UTC))
        if month is not None:
            text = now.astimezone(UTC).strftime("%Y-%m") if month == "this" else month
            return Period.month(datetime.fromisoformat(text + "-01").replace(tzinfo=UTC))
    except ValueError as exc:
        raise UsageError(f"not a day (YYYY-MM-DD) or month (YYYY-MM): {exc}") from exc
    return Period("all")


def print_usage(root: Runtime, period: Period, by: str | None, *, as_json: bool) -> int:
    """Totals for ``period``, grouped ``by`` one of :data:`BY_CHOICES` (or not)."""
    reports = root.spend_reports
    total = reports.totals(period)
    groups = reports.grouped(by, period) if by else []
    report = {
        "period": period.name,
        "by": by,
        "groups": [{by: key, **figures(totals)} for key, totals in groups],
        "total": figures(total),
    }
    if as_json:
        print_json(report)
    else:
        print(usage_table(report))
    return ExitCode.OK


def figures(totals: CostTotals) -> dict[str, Any]:
    return {**totals.tokens.as_dict(), **cost_fields(totals), "unpriced": totals.unpriced}


def usage_table(report: dict[str, Any]) -> str:
    period = "all time" if report["period"] == "all" else f"{report['period']} (UTC)"
    by = report["by"]
    head = f"Usage, {period}" + (f", by {by}" if by else "")
    if not report["total"]["requests"]:
        return f"{head}\nNo model usage recorded."
    rows = [[by or "", *(label for _, label in COLUMNS), "cost"]]
    rows += [[str(g[by] or "-"), *_cells(g)] for g in report["groups"]]
    rows.append(["total", *_cells(report["total"])])
    lines = aligned(rows)
    unpriced = report["total"]["unpriced"]
    note = [f"{unpriced} response(s) of a model with no known price"] if unpriced else []
    return "\n".join([head, "", *lines, *note])


def _cells(figures: dict[str, Any]) -> list[str]:
    cost = figures["cost_micros"]
    if cost is None and figures["unpriced"] < figures["requests"]:
        shown = "price unknown"
    else:
        shown = money(cost)
    return [f"{figures[key]:,}" for key, _ in COLUMNS] + [shown]


def print_prices(root: Runtime, *, as_json: bool) -> int:
    """The price table in use: the built-in one, with config's ``[prices]`` over it."""
    from ..config.prices import PRICES_SOURCE, PRICES_TAKEN, PriceTable

    table = PriceTable(root.config.prices)
    prices = {model: price.as_dict() for model, price in sorted(table.prices.items())}
    if as_json:
        print_json({"taken": PRICES_TAKEN, "source": PRICES_SOURCE, "prices": prices})
        return ExitCode.OK
    print(f"Dollars per million tokens (built-in prices taken {PRICES_TAKEN} from {PRICES_SOURCE})")
    width = max(len(m) for m in prices)
    print(f"{'model'.ljust(width)}  input  output  cache write  cache read")
    for model, rates in prices.items():
        print(
            f"{model.ljust(width)}  {rates['input']:>5}  {rates['output']:>6}  "
            f"{rates['cache_write']:>11}  {rates['cache_read']:>10}"
        )
    return ExitCode.OK


def budget_report(root: Runtime) -> dict[str, Any]:
    """``status``'s ``budget``: spend today and this month, each cap and what it has left,
    the calls a cap holds for the person, and reservations with no response yet."""
    from ..agent.budget import BUDGET, CAP_NAMES
    from ..config.prices import as_dollars, micros
    from ..config.settings import BudgetSettings
    from ..db.spend import Cap, day_of, month_of
    from ..db.states import CapKind
    from ..errors import ConfigError

    now = root.store.clock()
    try:
        budget = root.config.budget
    except ConfigError:  # status must still work; its config_error says why
        budget = BudgetSettings()
    spend = root.spend
    periods = {
        "today": (CapKind.DAY, day_of(now), budget.per_day),
        "month": (CapKind.MONTH, month_of(now), budget.per_month),
    }
    report: dict[str, Any] = {}
    for name, (kind, key, amount) in periods.items():
        use = spend.use(Cap(kind, key, micros(amount)))
        report[name] = {
            "period": key,
            "spent": as_dollars(use.used),
            "cap": as_dollars(use.limit) if amount else None,
            "remaining": as_dollars(use.remaining) if amount else None,
        }
    report["caps"] = {
        kind.value: as_dollars(micros(getattr(budget, kind.value)))
        for kind in (CapKind.CONVERSATION, CapKind.TASK)
        if getattr(budget, kind.value)
    }
    held = [a for a in root.approvals.waiting() if a.question == BUDGET]
    report["held"] = [
        {
            "approval": a.id,
            "cap": a.input.get("cap"),
            "name": CAP_NAMES.get(CapKind(a.input.get("cap")), a.input.get("cap")),
            "conversation": a.conversation_id,
            "spent": as_dollars(a.input.get("spent", 0)),
            "limit": as_dollars(a.input.get("limit", 0)),
            "expires": a.as_dict()["expires"],
        }
        for a in held
    ]
    report["reserved"] = [{**r, "bound": as_dollars(r["bound"])} for r in spend.open_reservations()]
    return report


def budget_lines(report: dict[str, Any]) -> list[str]:
    from decimal import Decimal

    def shown(value: str | None) -> str:
        return "-" if value is None else money(int(Decimal(value) * 1_000_000))

    lines = []
    for name, label in (("today", "spend today (UTC)"), ("month", "spend this month")):
        period = report[name]
        line = f"{label}: {shown(period['spent'])}"
        if period["cap"] is not None:
            line += f" of {shown(period['cap'])} ({shown(period['remaining'])} left)"
        lines.append(line)
    for cap, amount in report["caps"].items():
        lines.append(f"cap {cap}: {shown(amount)}")
    if report["held"]:
        lines.append(f"waiting on a budget cap: {len(report['held'])} (see smarthole approvals)")
        for held in report["held"]:
            lines.append(
                f"  {held['approval']} {held['name']} cap {shown(held['limit'])} "
                f"conv={held['conversation'][:8]} spent {shown(held['spent'])}"
            )
    if report["reserved"]:
        total = sum(Decimal(r["bound"]) for r in report["reserved"])
        lines.append(
            f"reserved by calls with no response yet: {len(report['reserved'])} "
            f"({shown(str(total))}, counted as spent)"
        )
    return lines
