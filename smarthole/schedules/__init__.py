"""Schedules: when a schedule's slots fall (``timing``, the only importer of ``cronsim``) and
what to do with the slots that came due (``plan``). Pure values and functions on times: the
store keeps schedules (``db.schedules``) and the daemon fires them (``daemon.scheduler``)."""

from .plan import Due, MissedPolicy, plan_due
from .timing import Timing, TimingError, parse_every, system_zone

__all__ = [
    "Due",
    "MissedPolicy",
    "Timing",
    "TimingError",
    "parse_every",
    "plan_due",
    "system_zone",
]
