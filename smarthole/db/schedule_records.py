"""A schedule and a fire as values, made from their rows (``db.schedules`` owns the tables)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from ..formats import iso, parse_time
from ..schedules import Timing
from .states import FireState, ScheduleState

SOURCES = ("config", "tool", "cli")
SPEC_COLUMNS = (
    "name",
    "kind",
    "expression",
    "timezone",
    "text",
    "channel",
    "conversation_mode",
    "conversation_id",
    "agents",
    "missed",
    "deliver",
)
TIMING_COLUMNS = ("kind", "expression", "timezone")


@dataclass(frozen=True)
class ScheduleSpec:
    """What a schedule is, as its source gave it (its timing already checked)."""

    name: str | None
    kind: str
    expression: str
    timezone: str
    text: str
    channel: str
    conversation_mode: str = "new"
    conversation_id: str | None = None
    agents: tuple[str, ...] | None = None
    missed: str = "once"
    deliver: bool = True

    def columns(self) -> dict[str, Any]:
        values = {k: getattr(self, k) for k in SPEC_COLUMNS}
        values["agents"] = json.dumps(list(self.agents)) if self.agents else None
        values["deliver"] = int(self.deliver)
        return values


@dataclass(frozen=True)
class Schedule:
    id: str
    source: str
    spec: ScheduleSpec
    state: ScheduleState
    first_seen_at: datetime
    last_slot_at: datetime | None
    next_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @property
    def label(self) -> str:
        return self.spec.name or self.id

    @property
    def timing(self) -> Timing:
        return Timing(self.spec.kind, self.spec.expression, self.spec.timezone)  # type: ignore[arg-type]

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Schedule:
        spec = {k: row[k] for k in SPEC_COLUMNS}
        spec["agents"] = tuple(json.loads(row["agents"])) if row["agents"] else None
        spec["deliver"] = bool(row["deliver"])
        return cls(
            id=row["id"],
            source=row["source"],
            spec=ScheduleSpec(**spec),
            state=ScheduleState(row["state"]),
            first_seen_at=parse_time(row["first_seen_at"]),
            last_slot_at=parse_optional_time(row["last_slot_at"]),
            next_at=parse_optional_time(row["next_at"]),
            created_at=parse_time(row["created_at"]),
            updated_at=parse_time(row["updated_at"]),
        )


@dataclass(frozen=True)
class Fire:
    schedule_id: str
    slot_at: datetime
    message_id: str
    reason: str  # "slot", "catch_up" or "manual"
    missed_slots: int
    state: FireState
    fired_at: datetime
    outcome: str | None = None  # its message's status in the ledger, when read with it

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Fire:
        keys = row.keys()
        return cls(
            schedule_id=row["schedule_id"],
            slot_at=parse_time(row["slot_at"]),
            message_id=row["message_id"],
            reason=row["reason"],
            missed_slots=row["missed_slots"],
            state=FireState(row["state"]),
            fired_at=parse_time(row["fired_at"]),
            outcome=row["outcome"] if "outcome" in keys else None,
        )


def parse_optional_time(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def fire_message_id(schedule_id: str, slot: datetime) -> str:
    """The id of a slot's message: the same for the same slot, so the ledger keeps it once."""
    stamp = iso(slot).replace("-", "").replace(":", "")
    return f"schedule-{schedule_id}-{stamp}"


def local_time(moment: datetime | None, zone: str) -> str:
    """``moment`` as a wall-clock time in ``zone``, with the zone's abbreviation."""
    if moment is None:
        return "-"
    try:
        return moment.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")
    except (ValueError, OSError, KeyError):
        return iso(moment)


def describe(schedule: Schedule, last: Fire | None) -> dict[str, Any]:
    """A schedule as ``smarthole schedules --json`` and the web view show it."""
    spec = schedule.spec
    return {
        "id": schedule.id,
        "name": spec.name,
        "source": schedule.source,
        "state": schedule.state.value,
        spec.kind: spec.expression,
        "timing": f"{spec.kind} {spec.expression}",
        "timezone": spec.timezone,
        "text": spec.text,
        "channel": spec.channel,
        "conversation": spec.conversation_id or spec.conversation_mode,
        "agents": list(spec.agents or ()),
        "missed": spec.missed,
        "deliver": spec.deliver,
        "next_at": iso(schedule.next_at) if schedule.next_at else None,
        "next_local": local_time(schedule.next_at, spec.timezone)
        if schedule.state is ScheduleState.ACTIVE
        else None,
        "first_seen_at": iso(schedule.first_seen_at),
        "last_run": None
        if last is None
        else {
            "slot": iso(last.slot_at),
            "fired_at": iso(last.fired_at),
            "reason": last.reason,
            "missed_slots": last.missed_slots,
            "message_id": last.message_id,
            "outcome": last.outcome or "waiting",
        },
    }
