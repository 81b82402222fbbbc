"""The ``schedules`` and ``schedule_fires`` tables: what fires when, and each slot taken.

A fire is recorded (``FireState.RECORDED``) in the transaction that moves its schedule past the
slot, before its message exists; the primary key (schedule, slot) means a slot is taken once,
whatever crashes. Its message goes into the ledger (by the id the fire names) in a second
transaction that also marks the fire ``SENT``; a fire still ``RECORDED`` at the next look is
sent then (:meth:`Schedules.unsent`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..errors import LookupFailed
from ..formats import iso, new_id
from ..schedules import Timing, TimingError
from .records import like_prefix
from .schedule_records import (
    SOURCES,
    TIMING_COLUMNS,
    Fire,
    Schedule,
    ScheduleSpec,
    fire_message_id,
    parse_optional_time,
)
from .states import FireState, MessageStatus, ScheduleState, sql_values
from .store import Store

__all__ = ["Fire", "Schedule", "ScheduleSpec", "Schedules", "fire_message_id"]


class Schedules:
    """Reads and writes the schedule tables of a :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- reading ----------------------------------------------------------------------------

    def all(self) -> list[Schedule]:
        rows = self.store.query("SELECT * FROM schedules ORDER BY name IS NULL, name, created_at")
        return [Schedule.from_row(row) for row in rows]

    def get(self, schedule_id: str) -> Schedule | None:
        row = self.store.query_one("SELECT * FROM schedules WHERE id = ?", (schedule_id,))
        return Schedule.from_row(row) if row else None

    def find(self, key: str) -> Schedule:
        """A schedule by name, id, or a unique prefix of either (as conversation ids are
        given); ``LookupFailed`` otherwise."""
        row = self.store.query_one("SELECT * FROM schedules WHERE name = ? OR id = ?", (key, key))
        if row is not None:
            return Schedule.from_row(row)
        rows = self.store.query(
            "SELECT * FROM schedules WHERE id LIKE ? ESCAPE '\\' OR name LIKE ? ESCAPE '\\' "
            "LIMIT 2",
            (like_prefix(key), like_prefix(key)),
        )
        if len(rows) != 1:
            kind = "matches more than one" if rows else "matches no"
            raise LookupFailed(f"{key!r} {kind} schedule (see `smarthole schedules`)")
        return Schedule.from_row(rows[0])

    def of_conversation(self, conversation_id: str) -> list[Schedule]:
        rows = self.store.query(
            "SELECT * FROM schedules WHERE source = 'tool' AND conversation_id = ? "
            "ORDER BY created_at",
            (conversation_id,),
        )
        return [Schedule.from_row(row) for row in rows]

    def last_fires(self) -> dict[str, Fire]:
        """Each schedule's latest fire, with its message's status in the ledger."""
        rows = self.store.query(
            "SELECT f.*, i.status AS outcome FROM schedule_fires AS f "
            "LEFT JOIN inbox AS i ON i.message_id = f.message_id "
            "WHERE f.rowid IN (SELECT (SELECT rowid FROM schedule_fires AS g "
            "WHERE g.schedule_id = s.id ORDER BY g.fired_at DESC, g.slot_at DESC LIMIT 1) "
            "FROM schedules AS s)"
        )
        return {row["schedule_id"]: Fire.from_row(row) for row in rows}

    def fires(self, schedule_id: str | None = None, *, latest: int = -1) -> list[Fire]:
        """Fires (of one schedule), oldest first; with ``latest``, only that many newest."""
        where, params = ("WHERE f.schedule_id = ?", [schedule_id]) if schedule_id else ("", [])
        rows = self.store.query(
            "SELECT * FROM (SELECT f.*, i.status AS outcome FROM schedule_fires AS f "
            f"LEFT JOIN inbox AS i ON i.message_id = f.message_id {where} "
            "ORDER BY f.slot_at DESC LIMIT ?) ORDER BY slot_at",
            (*params, latest),
        )
        return [Fire.from_row(row) for row in rows]

    def unsent(self) -> list[Fire]:
        rows = self.store.query(
            f"SELECT * FROM schedule_fires WHERE state = {FireState.RECORDED.sql} ORDER BY slot_at"
        )
        return [Fire.from_row(row) for row in rows]

    def next_fire(self) -> datetime | None:
        row = self.store.query_one(
            f"SELECT MIN(next_at) AS next FROM schedules WHERE state = {ScheduleState.ACTIVE.sql}"
        )
        return parse_optional_time(row["next"]) if row else None

    # -- writing ----------------------------------------------------------------------------

    def add(
        self, spec: ScheduleSpec, *, source: str, now: datetime, next_at: datetime | None
    ) -> Schedule:
        """A new schedule; ``LookupFailed`` if its name is taken."""
        assert source in SOURCES, source
        schedule_id = new_id()
        with self.store.transaction() as db:
            if (
                spec.name is not None
                and db.execute("SELECT 1 FROM schedules WHERE name = ?", (spec.name,)).fetchone()
            ):
                raise LookupFailed(f"a schedule named {spec.name!r} exists already")
            self._insert(db, schedule_id, spec, source, now, next_at)
        added = self.get(schedule_id)
        assert added is not None
        return added

    def create(
        self,
        *,
        name: str | None,
        kind: str,
        expression: str,
        timezone: str,
        text: str,
        channel: str,
        source: str,
        now: datetime,
        conversation_id: str | None = None,
        conversation_mode: str = "new",
    ) -> Schedule:
        """A new schedule from a person or the model: ``TimingError`` says what is wrong with
        its timing (an ``at`` that has passed too); ``LookupFailed`` that its name is taken."""
        timing = Timing.of(kind, expression, timezone)
        next_at = timing.next_after(now, now)
        if next_at is None:
            raise TimingError(f"at {expression[:40]!r} has passed (it is {iso(now)} now)")
        spec = ScheduleSpec(
            name=name,
            kind=timing.kind,
            expression=timing.expression,
            timezone=timing.zone_name,
            text=text,
            channel=channel,
            conversation_mode=conversation_mode,
            conversation_id=conversation_id,
        )
        return self.add(spec, source=source, now=now, next_at=next_at)

    def _insert(
        self,
        db: sqlite3.Connection,
        schedule_id: str,
        spec: ScheduleSpec,
        source: str,
        now: datetime,
        next_at: datetime | None,
    ) -> None:
        columns = spec.columns()
        names = ", ".join(columns)
        marks = ", ".join("?" for _ in columns)
        db.execute(
            f"INSERT INTO schedules (id, source, state, first_seen_at, next_at, created_at, "
            f"updated_at, {names}) VALUES (?, ?, ?, ?, ?, ?, ?, {marks})",
            (
                schedule_id,
                source,
                ScheduleState.ACTIVE,
                iso(now),
                iso(next_at) if next_at else None,
                iso(now),
                iso(now),
                *columns.values(),
            ),
        )

    def sync_config(
        self, specs: Iterable[tuple[ScheduleSpec, datetime | None]], now: datetime
    ) -> None:
        """Make the ``config`` schedules those of ``specs`` ``(spec, next slot)``, in one commit.

        A new one is first seen ``now``; one whose timing changed starts counting from ``now``
        (no slot of its old timing fires late); one gone from the file is deleted (its fires
        stay). A paused one stays paused.
        """
        with self.store.transaction() as db:
            rows = db.execute("SELECT * FROM schedules WHERE source = 'config'").fetchall()
            known = {row["name"]: row for row in rows}
            wanted = {spec.name: (spec, next_at) for spec, next_at in specs}
            for name, row in known.items():
                if name not in wanted:
                    db.execute("DELETE FROM schedules WHERE id = ?", (row["id"],))
            for name, (spec, next_at) in wanted.items():
                row = known.get(name)
                if row is None:
                    taken = db.execute("SELECT id FROM schedules WHERE name = ?", (name,))
                    clash = taken.fetchone()
                    if clash is not None:  # a `schedule add` of the same name: the file wins
                        db.execute("DELETE FROM schedules WHERE id = ?", (clash["id"],))
                    self._insert(db, new_id(), spec, "config", now, next_at)
                    continue
                columns = spec.columns()
                columns.pop("conversation_id")  # "same": the conversation found so far stays
                if all(row[k] == v for k, v in columns.items()):
                    continue
                retimed = any(row[k] != columns[k] for k in TIMING_COLUMNS)
                sets = ", ".join(f"{k} = ?" for k in columns)
                extra = ", last_slot_at = ?, next_at = ?" if retimed else ""
                params: list[Any] = [*columns.values(), iso(now)]
                if retimed:
                    params += [iso(now), iso(next_at) if next_at else None]
                if retimed and row["state"] == ScheduleState.DONE:
                    extra += f", state = {ScheduleState.ACTIVE.sql}"
                db.execute(
                    f"UPDATE schedules SET {sets}, updated_at = ?{extra} WHERE id = ?",
                    (*params, row["id"]),
                )

    def set_state(self, schedule_id: str, state: ScheduleState, now: datetime) -> None:
        self.store.write(
            "UPDATE schedules SET state = ?, updated_at = ? WHERE id = ?",
            (state, iso(now), schedule_id),
        )

    def resume(self, schedule: Schedule, now: datetime) -> None:
        """Active again, counting from ``now``: the slots it was paused for do not fire."""
        next_at = schedule.timing.next_after(now, schedule.first_seen_at)
        self.store.write(
            f"UPDATE schedules SET state = {ScheduleState.ACTIVE.sql}, last_slot_at = ?, "
            "next_at = ?, updated_at = ? WHERE id = ?",
            (iso(now), iso(next_at) if next_at else None, iso(now), schedule.id),
        )

    def take_now(self, schedule: Schedule, now: datetime) -> Fire:
        """A fire of ``schedule`` now, once, outside its timing (``smarthole schedule run``);
        the daemon sends it at its next look (at once when woken)."""
        with self.store.transaction() as db:
            (fire,) = self.take_slots(
                schedule, [(now, 0, "manual")], last_slot=None, next_at=None, now=now, db=db
            )
        return fire

    def set_next(self, schedule_id: str, next_at: datetime | None) -> None:
        self.store.write(
            "UPDATE schedules SET next_at = ? WHERE id = ?",
            (iso(next_at) if next_at else None, schedule_id),
        )

    def set_conversation(self, schedule_id: str, conversation_id: str) -> None:
        self.store.write(
            "UPDATE schedules SET conversation_id = ? WHERE id = ?", (conversation_id, schedule_id)
        )

    def remove(self, schedule_id: str) -> bool:
        return self.store.write("DELETE FROM schedules WHERE id = ?", (schedule_id,)) > 0

    def take_slots(
        self,
        schedule: Schedule,
        fires: list[tuple[datetime, int, str]],
        *,
        last_slot: datetime | None,
        next_at: datetime | None,
        now: datetime,
        db: sqlite3.Connection,
    ) -> list[Fire]:
        """Record ``fires`` ``(slot, missed_slots, reason)`` and move the schedule past
        ``last_slot``, in the caller's transaction; returns the fires newly taken."""
        taken = []
        for slot, missed_slots, reason in fires:
            message_id = fire_message_id(schedule.id, slot)
            cursor = db.execute(
                "INSERT OR IGNORE INTO schedule_fires (schedule_id, slot_at, message_id, reason, "
                "missed_slots, state, fired_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    schedule.id,
                    iso(slot),
                    message_id,
                    reason,
                    missed_slots,
                    FireState.RECORDED,
                    iso(now),
                ),
            )
            if cursor.rowcount:
                taken.append(
                    Fire(
                        schedule.id, slot, message_id, reason, missed_slots, FireState.RECORDED, now
                    )
                )
        if last_slot is not None:
            done = schedule.spec.kind == "at" and next_at is None
            db.execute(
                "UPDATE schedules SET last_slot_at = ?, next_at = ?, state = ?, updated_at = ? "
                "WHERE id = ?",
                (
                    iso(last_slot),
                    iso(next_at) if next_at else None,
                    ScheduleState.DONE if done else schedule.state,
                    iso(now),
                    schedule.id,
                ),
            )
        return taken

    def prune_fires(self, before: datetime, *, limit: int = 5000) -> int:
        """Delete up to ``limit`` fires taken before ``before`` that nothing needs any more;
        returns how many. Kept whatever their age: a fire not yet sent, one whose message is
        not finished in the ledger (queued, running, deferred, put back), each schedule's
        latest sent fire (``last_fires`` shows it; a "same" schedule finds its conversation
        through it), and any slot the schedule is not yet past (``last_slot_at``: the slots it
        will take are all after it, so the fire's key is its only guard there). The fires of a
        removed schedule go once old."""
        finished = sql_values(MessageStatus.DONE, MessageStatus.DEAD)
        sent = FireState.SENT.sql
        return self.store.write(
            # Each schedule's latest sent fire, found once per statement: none to look for when
            # it has a sent fire whose slot (so its fire too) is not older than ``before``.
            "DELETE FROM schedule_fires WHERE rowid IN (WITH kept AS MATERIALIZED ("
            "SELECT s.id, s.last_slot_at, CASE WHEN EXISTS (SELECT 1 FROM schedule_fires AS g "
            f"WHERE g.schedule_id = s.id AND g.slot_at >= :before AND g.state = {sent}) "
            "THEN NULL ELSE (SELECT g.rowid FROM schedule_fires AS g WHERE g.schedule_id = s.id "
            f"AND g.state = {sent} ORDER BY g.fired_at DESC, g.slot_at DESC LIMIT 1) END "
            "AS latest FROM schedules AS s) "
            "SELECT f.rowid FROM schedule_fires AS f LEFT JOIN kept AS k ON k.id = f.schedule_id "
            f"WHERE f.fired_at < :before AND f.state = {sent} "
            "AND NOT EXISTS (SELECT 1 FROM inbox AS i WHERE i.message_id = f.message_id "
            f"AND i.status NOT IN ({finished})) AND (k.id IS NULL OR "
            "(f.slot_at <= k.last_slot_at AND f.rowid IS NOT k.latest)) LIMIT :limit)",
            {"before": iso(before), "limit": limit},
        )

    def mark_sent(self, message_id: str, *, db: sqlite3.Connection) -> None:
        db.execute(
            f"UPDATE schedule_fires SET state = {FireState.SENT.sql} WHERE message_id = ?",
            (message_id,),
        )
