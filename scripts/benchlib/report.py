"""The benchmark's output: one row per metric, printed as a table and saved as JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Row:
    """One metric beside its baseline from the same run.

    ``goal`` is checked by :meth:`met`: ``max_value`` bounds the figure itself, ``max_ratio``
    bounds figure / baseline, ``min_value`` is a floor (for fractions); a row without any is
    information only. ``value`` None means the figure could not be measured.
    """

    metric: str
    value: float | None
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    goal: str = ""
    max_value: float | None = None
    max_ratio: float | None = None
    min_value: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    def met(self) -> bool | None:
        """True/False against the goal; None when there is no goal or no figure."""
        if self.value is None:
            return None if not self.goal else False
        checks = []
        if self.max_value is not None:
            checks.append(self.value <= self.max_value)
        if self.min_value is not None:
            checks.append(self.value >= self.min_value)
        if self.max_ratio is not None:
            checks.append(self.ratio is not None and self.ratio <= self.max_ratio)
        return all(checks) if checks else None


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile: the smallest sample with at least ``q`` of them at or below."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def number(value: float | None, unit: str = "") -> str:
    """A figure with 3 significant digits (a few more for big ones) and its unit."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if unit == "%":
        return f"{value * 100:.1f}%"
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{text} {unit}".strip()


def cells(row: Row, *, no: str) -> tuple[str, str, str, str, str, str]:
    """A row as the tables show it: metric, smarthole, baseline, ratio, goal, met?"""
    baseline = number(row.baseline, row.unit) if row.baseline is not None else "-"
    if row.baseline_name and row.baseline is not None:
        baseline += f" ({row.baseline_name})"
    ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
    met = {True: "yes", False: no, None: "-"}[row.met()]
    return (row.metric, number(row.value, row.unit), baseline, ratio, row.goal, met)


def table(rows: list[Row]) -> str:
    """A plain text table: metric, smarthole, baseline, ratio, goal, met?"""
    header = ("metric", "smarthole", "baseline", "ratio", "goal", "met?")
    lines = [header, *(cells(row, no="NO") for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def markdown(rows: list[Row]) -> str:
    """The same table in Markdown, for notes."""
    out = ["| metric | smarthole | baseline | ratio | goal | met? |", "|---|---|---|---|---|---|"]
    out.extend("| " + " | ".join(cells(row, no="**no**")) + " |" for row in rows)
    return "\n".join(out)


def to_json(rows: list[Row], meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "meta": meta,
        "rows": [{**asdict(row), "ratio": row.ratio, "met": row.met()} for row in rows],
    }


def save_json(path: Path, rows: list[Row], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(rows, meta), indent=1, default=str) + "\n")
