"""When a schedule's slots fall: a cron expression, an interval or one moment, in a time zone.

Cron expressions are read by ``cronsim`` (imported here only, when first needed). It was
chosen over ``croniter`` for how it treats daylight saving time, which is cron's own (Debian's
and Vixie cron's): a daily slot inside the hour a spring-forward skips fires once, at the first
moment after the gap (02:30 becomes 03:00), and a daily slot inside the hour a fall-back
repeats fires once, at its first occurrence (croniter 7 fires it twice). It has no dependencies.

Slots are timezone-aware UTC ``datetime`` values outside this module. An interval
(``every``) is counted from an anchor (when the schedule was first seen) in real time, so
DST does not move it; one moment (``at``) is a local time in the schedule's zone, and a local
time a spring-forward skips is taken as the moment after the gap.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

Kind = Literal["cron", "every", "at"]
KINDS: tuple[Kind, ...] = ("cron", "every", "at")
EVERY_PATTERN = re.compile(r"\s*(\d{1,9})\s*([smhd])\s*")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_EXPRESSION = 200
MAX_INTERVAL = timedelta(days=3660)


class TimingError(ValueError):
    """A schedule's expression or zone that cannot be used; the message says why."""


def parse_every(text: str) -> timedelta:
    """``"30m"`` → 30 minutes; units s, m, h, d; at least one second."""
    match = EVERY_PATTERN.fullmatch(text)
    if match is None:
        raise TimingError(f"every {text[:40]!r} is not a number and a unit (s, m, h or d), as 30m")
    interval = timedelta(seconds=int(match[1]) * UNITS[match[2]])
    if interval < timedelta(seconds=1):
        raise TimingError("every must be at least 1s")
    if interval > MAX_INTERVAL:
        raise TimingError("every must be at most 3660d")
    return interval


def system_zone() -> str:
    """The system's time zone name (``TZ``, else ``/etc/localtime``'s target), else UTC."""
    candidates = [os.environ.get("TZ", "").removeprefix(":")]
    try:
        target = str(Path("/etc/localtime").resolve())
        candidates.append(target.split("/zoneinfo/", 1)[1] if "/zoneinfo/" in target else "")
    except OSError:
        pass
    for name in candidates:
        if name and _zone(name) is not None:
            return name
    return "UTC"


def _zone(name: str) -> ZoneInfo | None:
    if not name or len(name) > 64 or name.startswith("/") or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


@dataclass(frozen=True)
class Timing:
    """A schedule's ``kind`` (cron, every, at), its expression and its zone's name."""

    kind: Kind
    expression: str
    zone_name: str

    @classmethod
    def of(cls, kind: str, expression: str, zone_name: str = "") -> Timing:
        """A checked timing; ``TimingError`` says what is wrong with it."""
        if kind not in KINDS:
            raise TimingError(f"a schedule is one of cron, every or at, not {kind!r}")
        if not isinstance(expression, str) or not expression.strip():
            raise TimingError(f"{kind} is empty")
        if len(expression) > MAX_EXPRESSION:
            raise TimingError(f"{kind} is over {MAX_EXPRESSION} characters")
        timing = cls(kind, expression.strip(), zone_name or system_zone())
        if _zone(timing.zone_name) is None:
            raise TimingError(f"unknown time zone {timing.zone_name[:64]!r}")
        timing.check()
        return timing

    @cached_property
    def zone(self) -> ZoneInfo:
        zone = _zone(self.zone_name)
        if zone is None:
            raise TimingError(f"unknown time zone {self.zone_name[:64]!r}")
        return zone

    def check(self) -> None:
        if self.kind == "every":
            parse_every(self.expression)
        elif self.kind == "at":
            self.moment()
        else:
            self._cron(datetime(2000, 1, 1, tzinfo=self.zone))

    # -- slots ------------------------------------------------------------------------------

    def moment(self) -> datetime:
        """An ``at`` timing's one slot, in UTC."""
        try:
            local = datetime.fromisoformat(self.expression)
        except ValueError as exc:
            raise TimingError(
                f"at {self.expression[:40]!r} is not a date and time, as 2026-12-01T09:00"
            ) from exc
        if local.tzinfo is not None:
            return local.astimezone(UTC)
        return _resolve_local(local, self.zone)

    def slots_after(self, after: datetime, anchor: datetime) -> Iterator[datetime]:
        """Every slot later than ``after`` (UTC), in order; ``anchor`` starts an interval."""
        if self.kind == "at":
            moment = self.moment()
            if moment > after:
                yield moment
        elif self.kind == "every":
            step = parse_every(self.expression)
            passed = max(0, (after - anchor) // step + 1)
            slot = anchor + step * passed
            while True:
                yield slot
                slot += step
        else:
            for local in self._cron(after.astimezone(self.zone)):
                yield local.astimezone(UTC)

    def next_after(self, after: datetime, anchor: datetime) -> datetime | None:
        return next(iter(self.slots_after(after, anchor)), None)

    def count_between(
        self, after: datetime, until: datetime, anchor: datetime, *, keep: int
    ) -> tuple[int, list[datetime]]:
        """How many slots fall in ``(after, until]``, and the last ``keep`` of them.

        An interval is counted by arithmetic, so a week of downtime of a 1 s schedule costs
        nothing; cron slots are walked (at most a minute apart: a year is half a million).
        """
        if self.kind == "every" and until > after:
            step = parse_every(self.expression)
            first = self.next_after(after, anchor)
            assert first is not None
            if first > until:
                return 0, []
            count = (until - first) // step + 1
            last = first + step * (count - 1)
            kept = [last - step * i for i in range(min(keep, count) - 1, -1, -1)]
            return count, kept
        count, kept = 0, []
        for slot in self.slots_after(after, anchor):
            if slot > until:
                break
            count += 1
            kept.append(slot)
            if len(kept) > keep:
                del kept[0]
        return count, kept

    def _cron(self, start: datetime) -> Iterator[datetime]:
        from cronsim import CronSim, CronSimError

        try:
            return iter(CronSim(self.expression.upper(), start))
        except CronSimError as exc:
            raise TimingError(f"cron {self.expression[:60]!r}: {exc}") from exc
        except Exception as exc:  # anything else the parser trips on is the expression's fault
            raise TimingError(f"cron {self.expression[:60]!r} cannot be read") from exc


def _resolve_local(local: datetime, zone: ZoneInfo) -> datetime:
    """A wall-clock time in ``zone`` as UTC: a repeated one is its first occurrence, a skipped
    one the first moment after the gap."""
    first = local.replace(tzinfo=zone, fold=0)
    utc = first.astimezone(UTC)
    if utc.astimezone(zone).replace(tzinfo=None) == local:
        return utc
    # In a gap: the gap ends at the first whole minute whose local reading is past ``local``
    # (the two folds read ``local`` with the offsets before and after it: the end is between).
    moment = min(utc, local.replace(tzinfo=zone, fold=1).astimezone(UTC))
    while moment.astimezone(zone).replace(tzinfo=None) < local:
        moment += timedelta(minutes=1)
    return moment
