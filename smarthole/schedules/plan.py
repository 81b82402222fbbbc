"""What to do with the slots that came due since a schedule's last look: the ``missed`` policy.

A slot fires on time when it is the only one due and at most ``LATE_AFTER`` old. Otherwise the
daemon was down, asleep, or the clock jumped, and the policy decides: ``once`` fires one
catch-up for the newest slot, noting how many were missed; ``skip`` fires none; ``all`` fires
each, the newest ``MAX_CATCH_UP`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from .timing import Timing

LATE_AFTER = timedelta(seconds=60)
MAX_CATCH_UP = 100


class MissedPolicy(StrEnum):
    ONCE = "once"
    SKIP = "skip"
    ALL = "all"


@dataclass(frozen=True)
class Due:
    """The slots to fire now, as ``(slot, missed_slots)``, and what became of the rest."""

    fire: list[tuple[datetime, int]] = field(default_factory=list)
    missed: int = 0  # slots that came due late (the downtime's count); 0: on time
    skipped: int = 0  # of those, how many will never fire
    last_slot: datetime | None = None  # the newest slot now handled: the next look's start

    @property
    def nothing(self) -> bool:
        return self.last_slot is None


def plan_due(
    timing: Timing, *, after: datetime, now: datetime, anchor: datetime, missed: MissedPolicy
) -> Due:
    """The slots in ``(after, now]`` (UTC), and what ``missed`` makes of them."""
    count, kept = timing.count_between(after, now, anchor, keep=MAX_CATCH_UP)
    if count == 0:
        return Due()
    last = kept[-1]
    if count == 1 and now - last <= LATE_AFTER:
        return Due(fire=[(last, 0)], last_slot=last)
    if missed is MissedPolicy.ONCE:
        return Due(fire=[(last, count)], missed=count, skipped=count - 1, last_slot=last)
    if missed is MissedPolicy.SKIP:
        return Due(missed=count, skipped=count, last_slot=last)
    return Due(
        fire=[(slot, 0) for slot in kept], missed=count, skipped=count - len(kept), last_slot=last
    )
