"""The ``spend`` and ``budget_raises`` tables: what each model call may cost, and did.

Before a call is sent its row is stored ``open`` at an upper bound of its cost, in the same
transaction that checks every cap the call is held to: so two workers (or processes) can never
both take the last of a cap. The response replaces the bound by its real cost (``spent``), in
the transaction that stores the reply; a call that was never answered (the daemon was killed,
the stream broke) keeps counting at its bound. Money is integer micro-dollars. A cap a person
raised by approving has a ``budget_raises`` row, keyed by the approval, so it is raised once.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..formats import iso
from .connection import Database
from .states import CapKind, SpendState

KEYS = "conversation_id, task_id, message_id, schedule, day, month"
"""The columns of a spend row that say which caps' totals it counts in."""


def day_of(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def month_of(moment: datetime) -> str:
    return day_of(moment)[:7]


@dataclass(frozen=True)
class SpendPlace:
    """Where a model call's spend belongs, and why the model was called."""

    purpose: str
    conversation_id: str | None = None
    channel: str | None = None
    turn: int | None = None
    message_id: str | None = None
    task_id: str | None = None
    agent: str | None = None
    schedule: str | None = None


@dataclass(frozen=True)
class Cap:
    """One cap a call is held to: which, for what (its key), and its configured amount."""

    kind: CapKind
    key: str  # the conversation's id, the task's, the schedule run's message id, a day, a month
    amount: int  # micro-dollars, before any raise


@dataclass(frozen=True)
class CapUse:
    """A cap as it stands: its amount with the raises approved, and what counts against it."""

    cap: Cap
    raised: int
    used: int

    @property
    def limit(self) -> int:
        return self.cap.amount + self.raised

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


@dataclass(frozen=True)
class Reserved:
    """The outcome of :meth:`Spend.reserve`: the stored row's id, or the cap that holds."""

    spend_id: int | None
    held: CapUse | None = None


class Spend:
    """Writes and sums the ``spend`` and ``budget_raises`` tables."""

    def __init__(self, store: Database) -> None:
        self.store = store

    # -- a call ----------------------------------------------------------------------------

    def reserve(
        self,
        place: SpendPlace,
        *,
        model: str,
        bound: int,
        request_bytes: int,
        caps: list[Cap],
        shape: str | None = None,
    ) -> Reserved:
        """Store an open reservation of ``bound``, unless a cap would pass: then nothing is
        stored and the first such cap is returned. Check and store are one transaction."""
        # Not waiting for the disk: a kill -9 keeps the row (a power cut may lose it).
        with self.store.transaction(durable=False) as db:
            for use in self.uses(caps, db=db):
                if use.used + bound > use.limit:
                    return Reserved(None, held=use)
            spend_id = self._insert(
                db, place, model, SpendState.OPEN, bound, request_bytes=request_bytes, shape=shape
            )
            return Reserved(spend_id)

    def _counted(self, db: sqlite3.Connection, spend_id: int, state: SpendState) -> Any:
        """The row of ``spend_id`` if it is in ``state``, with the caps' keys it counts in."""
        return db.execute(
            f"SELECT {KEYS}, bound FROM spend WHERE id = ? AND state = ?", (spend_id, state)
        ).fetchone()

    def _add(self, db: sqlite3.Connection, row: Any, amount: int) -> None:
        """Add ``amount`` to the running total of every cap a row counts in."""
        if not amount:
            return
        keys = [
            (CapKind.CONVERSATION, row["conversation_id"]),
            (CapKind.TASK, row["task_id"]),
            (CapKind.SCHEDULE, row["message_id"] if row["schedule"] else None),
            (CapKind.DAY, row["day"]),
            (CapKind.MONTH, row["month"]),
        ]
        db.executemany(
            "INSERT INTO spend_totals (cap, key, used) VALUES (?, ?, ?) "
            "ON CONFLICT (cap, key) DO UPDATE SET used = used + excluded.used",
            [(kind, key, amount) for kind, key in keys if key is not None],
        )

    def settle(
        self,
        spend_id: int,
        *,
        cost: int | None,
        usage_id: int | None,
        prompt_tokens: int,
        db: sqlite3.Connection,
    ) -> None:
        """The response came: its real cost replaces the bound (in the reply's transaction).
        Unknown (no price): it keeps counting at its bound."""
        row = self._counted(db, spend_id, SpendState.OPEN)
        if row is None:
            return
        db.execute(
            "UPDATE spend SET state = ?, cost = ?, usage_id = ?, prompt_tokens = ? WHERE id = ?",
            (SpendState.SPENT, cost, usage_id, prompt_tokens, spend_id),
        )
        if cost is not None:
            self._add(db, row, cost - row["bound"])

    def last_answered(self, place: SpendPlace, shape: str) -> tuple[int, int] | None:
        """The request size and reported prompt tokens of the last answered call at ``place``
        with the same ``shape`` (what, besides appended messages, makes its prompt)."""
        row = self.store.query_one(
            "SELECT request_bytes, prompt_tokens FROM spend WHERE message_id IS ? "
            "AND conversation_id IS ? AND turn IS ? AND task_id IS ? AND agent IS ? "
            f"AND shape = ? AND state = {SpendState.SPENT.sql} AND prompt_tokens IS NOT NULL "
            "ORDER BY id DESC LIMIT 1",
            (
                place.message_id,
                place.conversation_id,
                place.turn,
                place.task_id,
                place.agent,
                shape,
            ),
        )
        return None if row is None else (int(row["request_bytes"]), int(row["prompt_tokens"]))

    def record(
        self,
        place: SpendPlace,
        *,
        model: str,
        cost: int | None,
        usage_id: int | None,
        db: sqlite3.Connection,
        request_bytes: int = 0,
        shape: str | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        """A response no reservation was made for (no cap applied): spent at once."""
        self._insert(
            db,
            place,
            model,
            SpendState.SPENT,
            cost or 0,
            cost=cost,
            usage_id=usage_id,
            request_bytes=request_bytes,
            shape=shape,
            prompt_tokens=prompt_tokens,
        )

    def _insert(
        self,
        db: sqlite3.Connection,
        place: SpendPlace,
        model: str,
        state: SpendState,
        bound: int,
        *,
        cost: int | None = None,
        usage_id: int | None = None,
        request_bytes: int = 0,
        shape: str | None = None,
        prompt_tokens: int | None = None,
    ) -> int | None:
        now = self.store.clock()
        cursor = db.execute(
            "INSERT INTO spend (at, day, month, conversation_id, channel, turn, message_id, "
            "task_id, agent, schedule, purpose, model, state, bound, cost, usage_id, "
            "request_bytes, shape, prompt_tokens) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                iso(now),
                day_of(now),
                month_of(now),
                place.conversation_id,
                place.channel,
                place.turn,
                place.message_id,
                place.task_id,
                place.agent,
                place.schedule,
                place.purpose,
                model,
                state,
                bound,
                cost,
                usage_id,
                request_bytes,
                shape,
                prompt_tokens,
            ),
        )
        keys = dict(
            conversation_id=place.conversation_id,
            task_id=place.task_id,
            message_id=place.message_id,
            schedule=place.schedule,
            day=day_of(now),
            month=month_of(now),
        )
        self._add(db, keys, bound)
        return cursor.lastrowid

    def release(self, spend_id: int) -> None:
        """Nothing was sent, or the API refused it: the reservation counts nothing."""
        with self.store.transaction(durable=False) as db:
            row = self._counted(db, spend_id, SpendState.OPEN)
            if row is None:
                return
            db.execute("UPDATE spend SET state = ? WHERE id = ?", (SpendState.RELEASED, spend_id))
            self._add(db, row, -row["bound"])

    # -- caps ------------------------------------------------------------------------------

    def use(self, cap: Cap, *, db: sqlite3.Connection | None = None) -> CapUse:
        """What counts against ``cap`` now (spent, and reserved by calls not answered), and
        what approvals raised it by: its running total."""
        sql = "SELECT used, raised FROM spend_totals WHERE cap = ? AND key = ?"
        params = (cap.kind, cap.key)
        row = db.execute(sql, params).fetchone() if db else self.store.query_one(sql, params)
        return CapUse(cap, 0, 0) if row is None else CapUse(cap, int(row[1]), int(row[0]))

    def uses(self, caps: list[Cap], *, db: sqlite3.Connection) -> list[CapUse]:
        """:meth:`use` of several caps, in their order, with one query."""
        if not caps:
            return []
        pairs = ", ".join("(?, ?)" for _ in caps)
        rows = db.execute(
            f"SELECT cap, key, used, raised FROM spend_totals WHERE (cap, key) IN (VALUES {pairs})",
            [value for cap in caps for value in (cap.kind, cap.key)],
        ).fetchall()
        found = {(row[0], row[1]): (int(row[3]), int(row[2])) for row in rows}
        return [CapUse(cap, *found.get((cap.kind.value, cap.key), (0, 0))) for cap in caps]

    def raise_cap(self, approval_id: str, cap: Cap, amount: int) -> bool:
        """Raise ``cap`` by ``amount`` for the approval that said so; False if it did already."""
        with self.store.transaction() as db:
            cursor = db.execute(
                "INSERT INTO budget_raises (approval_id, cap, key, amount, at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (approval_id) DO NOTHING",
                (approval_id, cap.kind, cap.key, amount, self.store.now()),
            )
            if cursor.rowcount != 1:
                return False
            db.execute(
                "INSERT INTO spend_totals (cap, key, raised) VALUES (?, ?, ?) "
                "ON CONFLICT (cap, key) DO UPDATE SET raised = raised + excluded.raised",
                (cap.kind, cap.key, amount),
            )
            return True

    # -- reading ---------------------------------------------------------------------------

    def of_conversation(self, conversation_id: str) -> int:
        """Micro-dollars a conversation spent, with what its calls in flight reserved (its
        titles and team tasks included): what its cap counts."""
        return self.use(Cap(CapKind.CONVERSATION, conversation_id, 0)).used

    def of_day(self, moment: datetime) -> int:
        """Micro-dollars the home spent (and reserved) in the UTC day of ``moment``."""
        return self.use(Cap(CapKind.DAY, day_of(moment), 0)).used

    def of_month(self, moment: datetime) -> int:
        """Micro-dollars the home spent (and reserved) in the UTC month of ``moment``."""
        return self.use(Cap(CapKind.MONTH, month_of(moment), 0)).used

    def turn_cost(
        self, conversation_id: str, turn: int, *, db: sqlite3.Connection | None = None
    ) -> int | None:
        """What a human turn's responses cost (team agents included); None: a price unknown."""
        sql = (
            "SELECT COALESCE(SUM(cost), 0) AS cost, COUNT(*) - COUNT(cost) AS unknown FROM spend "
            f"WHERE conversation_id = ? AND turn = ? AND state = {SpendState.SPENT.sql}"
        )
        params = (conversation_id, turn)
        row = db.execute(sql, params).fetchone() if db else self.store.query_one(sql, params)
        return None if row is None or row["unknown"] else int(row["cost"])

    def schedule_of(self, message_id: str) -> str | None:
        """The schedule whose run a message's calls were charged to, if any."""
        row = self.store.query_one(
            "SELECT schedule FROM spend WHERE message_id = ? AND schedule IS NOT NULL LIMIT 1",
            (message_id,),
        )
        return None if row is None else str(row["schedule"])

    def open_reservations(self) -> list[dict[str, Any]]:
        """Calls reserved and not answered (in flight, or cut short by a crash)."""
        rows = self.store.query(
            "SELECT id, at, conversation_id, task_id, model, bound FROM spend "
            f"WHERE state = {SpendState.OPEN.sql} ORDER BY id"
        )
        return [dict(row) for row in rows]
