"""The ledger of inbox messages: what arrived, with which content, and where it stands.

Every claimed message has one row, keyed by message id, with the hash of its file's bytes. An
id that comes again is the same message if its text is the same (its file may differ: another
timestamp, a desktop message written again after a crash), and a conflict if not. A
message moves ``queued`` → ``in_progress`` → ``done``; a failed attempt makes it ``deferred``
until ``next_attempt_at``; too many attempts (or an error no retry can fix) make it ``dead``.
``smarthole retry`` turns a dead message into ``redrive``: its file is back in the inbox, and
claiming it again requeues it with its attempts reset. (``states.MessageStatus``; the moves of a
turn's message are ``pipeline.lifecycle``'s.)
"""

from __future__ import annotations

import enum
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..formats import iso, parse_time
from ..fsutil import stored_path
from .records import Message, like_prefix
from .states import UNFINISHED_MESSAGES, MessageStatus, sql_values
from .store import Store

UNFINISHED = f"status IN ({sql_values(*UNFINISHED_MESSAGES)})"  # SQL: not done
CHANNELS_WITH_WORK = f"SELECT DISTINCT channel FROM inbox WHERE {UNFINISHED}"


class Admission(enum.Enum):
    """What claiming a message's id meant."""

    NEW = "new"
    REDRIVE = "redrive"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class LedgerEntry:
    message: Message
    channel: str
    status: MessageStatus
    attempts: int
    generation: int
    claimed_path: Path | None
    conversation_id: str | None
    turn: int | None
    next_attempt_at: datetime | None
    last_error: str | None
    received_at: datetime
    updated_at: datetime
    failed_path: Path | None

    @property
    def id(self) -> str:
        return self.message.id

    def waits(self, now: datetime) -> bool:
        """Deferred, with its next attempt still to come at ``now``."""
        return (
            self.status is MessageStatus.DEFERRED
            and self.next_attempt_at is not None
            and self.next_attempt_at > now
        )

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> LedgerEntry:
        return cls(
            message=Message.from_json(row["payload"]),
            channel=row["channel"],
            status=MessageStatus(row["status"]),
            attempts=row["attempts"],
            generation=row["generation"],
            claimed_path=stored_path(row["claimed_path"]) if row["claimed_path"] else None,
            conversation_id=row["conversation_id"],
            turn=row["turn"],
            next_attempt_at=parse_time(row["next_attempt_at"]) if row["next_attempt_at"] else None,
            last_error=row["last_error"],
            received_at=parse_time(row["received_at"]),
            updated_at=parse_time(row["updated_at"]),
            failed_path=stored_path(row["failed_path"]) if row["failed_path"] else None,
        )


class Ledger:
    """Reads and writes the ``inbox`` table of a :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # The heads last read, by message id, with the row each was made from: the loop asks
        # for the heads after every claim, and a head that waits is the same row each time.
        self._heads: dict[str, tuple[tuple[Any, ...], LedgerEntry]] = {}

    def admit(self, message: Message, *, channel: str, claimed_path: Path | None) -> Admission:
        """Record a claimed message, or say why it must not be processed again.

        A message made in the daemon (a schedule's) has no file: ``claimed_path`` is None.
        """
        now = self.store.now()
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT status, payload FROM inbox WHERE message_id = ?", (message.id,)
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO inbox (message_id, content_hash, source_name, claimed_path, "
                    "payload, channel, status, sort_at, received_at, updated_at) "
                    f"VALUES (?, ?, ?, ?, ?, ?, {MessageStatus.QUEUED.sql}, ?, ?, ?)",
                    (
                        message.id,
                        message.content_hash,
                        message.source_name,
                        str(claimed_path) if claimed_path else None,
                        message.with_channel(channel).to_json(),
                        channel,
                        iso(message.timestamp),
                        now,
                        now,
                    ),
                )
                return Admission.NEW
            # `smarthole retry` marks a dead message 'redrive' and puts its file back; that
            # file may have been re-created from the ledger, so its bytes may differ.
            redrive = row["status"] == MessageStatus.REDRIVE
            if not redrive and json.loads(row["payload"]).get("text") != message.text:
                return Admission.CONFLICT
            if redrive or row["status"] == MessageStatus.DEAD:
                db.execute(
                    f"UPDATE inbox SET status = {MessageStatus.QUEUED.sql}, attempts = 0, "
                    "generation = generation + 1, next_attempt_at = NULL, last_error = NULL, "
                    "claimed_path = ?, failed_path = NULL, updated_at = ? WHERE message_id = ?",
                    (str(claimed_path) if claimed_path else None, now, message.id),
                )
                return Admission.REDRIVE
            db.execute(
                "UPDATE inbox SET duplicates = duplicates + 1 WHERE message_id = ?", (message.id,)
            )
            return Admission.DUPLICATE

    def get(self, message_id: str) -> LedgerEntry | None:
        row = self.store.query_one("SELECT * FROM inbox WHERE message_id = ?", (message_id,))
        return LedgerEntry.from_row(row) if row else None

    def with_prefix(self, prefix: str) -> list[LedgerEntry]:
        pattern = like_prefix(prefix)
        rows = self.store.query(
            "SELECT * FROM inbox WHERE message_id LIKE ? ESCAPE '\\' LIMIT 10", (pattern,)
        )
        return [LedgerEntry.from_row(r) for r in rows]

    def by_status(self, *statuses: MessageStatus) -> list[LedgerEntry]:
        marks = ", ".join("?" for _ in statuses)
        rows = self.store.query(
            f"SELECT * FROM inbox WHERE status IN ({marks}) ORDER BY channel, sort_at, rowid",
            statuses,
        )
        return [LedgerEntry.from_row(r) for r in rows]

    def channels_with_work(self) -> set[str]:
        """The channels with an unfinished message: a walk of the status index, no rows read.

        Housekeeping asks this every pass; with ten thousand messages waiting, reading their
        rows (and parsing each payload) only to keep their channels made megabytes of
        short-lived objects each time, and the memory they left fragmented stayed with the
        daemon after the backlog had drained.
        """
        return {row[0] for row in self.store.query(CHANNELS_WITH_WORK)}

    def channel_heads(self) -> list[LedgerEntry]:
        """The first unfinished message of every channel, in channel order.

        Messages of a channel run strictly in order, so only a channel's head may run.
        """
        rows = self.store.query(
            "SELECT * FROM inbox WHERE rowid IN (SELECT (SELECT rowid FROM inbox AS i "
            f"WHERE i.channel = c.channel AND i.{UNFINISHED} "
            f"ORDER BY i.sort_at, i.rowid LIMIT 1) FROM ({CHANNELS_WITH_WORK}) AS c)"
        )
        heads: dict[str, tuple[tuple[Any, ...], LedgerEntry]] = {}
        known = self._heads
        for row in rows:
            values = tuple(row)
            seen = known.get(row["message_id"])
            entry = seen[1] if seen is not None and seen[0] == values else LedgerEntry.from_row(row)
            heads[entry.id] = (values, entry)
        self._heads = heads
        return sorted((entry for _, entry in heads.values()), key=lambda e: e.channel)

    def channel_head(self, channel: str) -> LedgerEntry | None:
        """The first unfinished message of ``channel``, if any (see :meth:`channel_heads`)."""
        row = self.store.query_one(
            f"SELECT * FROM inbox WHERE channel = ? AND {UNFINISHED} "
            "ORDER BY sort_at, rowid LIMIT 1",
            (channel,),
        )
        return LedgerEntry.from_row(row) if row else None

    def next_due(self) -> datetime | None:
        row = self.store.query_one(
            "SELECT MIN(next_attempt_at) AS due FROM inbox "
            f"WHERE status = {MessageStatus.DEFERRED.sql}"
        )
        return parse_time(row["due"]) if row and row["due"] else None

    def set_status(
        self,
        message_id: str,
        status: MessageStatus,
        *,
        db: sqlite3.Connection | None = None,
        **values: object,
    ) -> None:
        allowed = {
            "conversation_id",
            "turn",
            "last_error",
            "next_attempt_at",
            "attempts",
            "failed_path",
            "claimed_path",
        }
        assert set(values) <= allowed, values
        assignments = "".join(f", {key} = ?" for key in values)
        sql = f"UPDATE inbox SET status = ?, updated_at = ?{assignments} WHERE message_id = ?"
        params = (status, self.store.now(), *values.values(), message_id)
        if db is not None:
            db.execute(sql, params)
        else:
            with self.store.transaction() as connection:
                connection.execute(sql, params)

    def followers(
        self, channel: str, *, after: str, limit: int, slashed: bool = False
    ) -> list[LedgerEntry]:
        """The queued messages of ``channel`` behind message ``after``, in order; ``slashed``:
        only those whose text starts with a slash (a command's candidates, found in SQL)."""
        trimmed = "ltrim(json_extract(payload, '$.text'), ' ' || char(9, 10, 13))"
        slash = f" AND {trimmed} LIKE '/%'" if slashed else ""
        rows = self.store.query(
            f"SELECT * FROM inbox WHERE status = {MessageStatus.QUEUED.sql} AND channel = ? "
            f"AND message_id != ?{slash} ORDER BY sort_at, rowid LIMIT ?",
            (channel, after, limit),
        )
        return [LedgerEntry.from_row(r) for r in rows]

    def join(
        self, message_id: str, conversation_id: str, turn: int, *, db: sqlite3.Connection
    ) -> bool:
        """A queued message is answered by this turn (``collect``, ``steer``); False if it was
        no longer queued."""
        cursor = db.execute(
            f"UPDATE inbox SET status = {MessageStatus.JOINED.sql}, conversation_id = ?, turn = ?, "
            f"updated_at = ? WHERE message_id = ? AND status = {MessageStatus.QUEUED.sql}",
            (conversation_id, turn, self.store.now(), message_id),
        )
        return cursor.rowcount == 1

    def joined(self, conversation_id: str, turn: int) -> list[LedgerEntry]:
        """The messages a turn answers besides its own, in the order they joined it."""
        rows = self.store.query(
            "SELECT * FROM inbox WHERE conversation_id = ? AND turn = ? "
            f"AND status = {MessageStatus.JOINED.sql} ORDER BY updated_at, rowid",
            (conversation_id, turn),
        )
        return [LedgerEntry.from_row(r) for r in rows]

    def answered_by(self, conversation_id: str) -> dict[int, list[str]]:
        """Per turn, every message it answered (its own first): for ``show``."""
        rows = self.store.query(
            "SELECT i.turn, i.message_id FROM inbox AS i LEFT JOIN turns AS t "
            "ON t.conversation_id = i.conversation_id AND t.number = i.turn "
            "AND t.message_id = i.message_id WHERE i.conversation_id = ? "
            "ORDER BY i.turn, t.message_id IS NULL, i.updated_at, i.rowid",
            (conversation_id,),
        )
        answered: dict[int, list[str]] = {}
        for row in rows:
            if row["turn"] is not None:
                answered.setdefault(row["turn"], []).append(row["message_id"])
        return answered

    def end_joined(
        self,
        conversation_id: str,
        turn: int,
        status: MessageStatus,
        *,
        db: sqlite3.Connection,
        last_error: str | None = None,
    ) -> None:
        """The messages joined to a turn end with it (done, or dead)."""
        db.execute(
            "UPDATE inbox SET status = ?, last_error = ?, updated_at = ?, "
            "claimed_path = CASE WHEN ? = 'done' THEN NULL ELSE claimed_path END "
            f"WHERE conversation_id = ? AND turn = ? AND status = {MessageStatus.JOINED.sql}",
            (status, last_error, self.store.now(), status, conversation_id, turn),
        )

    def record_failure(self, message_id: str, error: str) -> int:
        """Count a failed attempt; returns the number of attempts so far."""
        with self.store.transaction() as db:
            db.execute(
                "UPDATE inbox SET attempts = attempts + 1, last_error = ?, updated_at = ? "
                "WHERE message_id = ?",
                (error, self.store.now(), message_id),
            )
            (attempts,) = db.execute(
                "SELECT attempts FROM inbox WHERE message_id = ?", (message_id,)
            ).fetchone()
        return int(attempts)

    def requeue_in_progress(self) -> int:
        """After a stop, messages that were being processed are queued again."""
        return self.store.write(
            f"UPDATE inbox SET status = {MessageStatus.QUEUED.sql}, updated_at = ? "
            f"WHERE status = {MessageStatus.IN_PROGRESS.sql}",
            (self.store.now(),),
        )

    def make_due(self, message_ids: Iterable[str] | None) -> int:
        """Deferred messages become due now, with their attempts reset."""
        now = self.store.now()
        with self.store.transaction() as db:
            if message_ids is None:
                cursor = db.execute(
                    "UPDATE inbox SET next_attempt_at = ?, attempts = 0, "
                    f"updated_at = ? WHERE status = {MessageStatus.DEFERRED.sql}",
                    (now, now),
                )
                return cursor.rowcount
            count = 0
            for message_id in message_ids:
                count += db.execute(
                    "UPDATE inbox SET next_attempt_at = ?, attempts = 0, updated_at = ? "
                    f"WHERE status = {MessageStatus.DEFERRED.sql} AND message_id = ?",
                    (now, now, message_id),
                ).rowcount
            return count

    def wake(self, message_id: str, *, db: sqlite3.Connection) -> None:
        """A message that waits (deferred) is due now: what it waited for has come."""
        now = self.store.now()
        db.execute(
            "UPDATE inbox SET next_attempt_at = ?, updated_at = ? "
            f"WHERE message_id = ? AND status = {MessageStatus.DEFERRED.sql}",
            (now, now, message_id),
        )

    def duplicates_skipped(self) -> int:
        """Files skipped because they repeated a message already taken, over all time."""
        row = self.store.query_one("SELECT COALESCE(SUM(duplicates), 0) AS n FROM inbox")
        return int(row["n"]) if row else 0

    def counts(self) -> dict[str, int]:
        """How many messages are in each status (for the service manager's status line)."""
        rows = self.store.query("SELECT status, COUNT(*) AS n FROM inbox GROUP BY status")
        return {row["status"]: int(row["n"]) for row in rows}

    def set_aside(self, message_id: str, failed: Path) -> None:
        """A dead message's file is in ``failed/`` now, no longer claimed."""
        self.store.write(
            "UPDATE inbox SET failed_path = ?, claimed_path = NULL WHERE message_id = ?",
            (str(failed), message_id),
        )

    def clear_claim(self, message_id: str) -> None:
        """The claimed file of an answered message is gone."""
        with self.store.transaction() as db:
            db.execute("UPDATE inbox SET claimed_path = NULL WHERE message_id = ?", (message_id,))

    def claimed_paths(self) -> set[str]:
        rows = self.store.query("SELECT claimed_path FROM inbox WHERE claimed_path IS NOT NULL")
        return {row["claimed_path"] for row in rows}

    def answered_with_claims(self) -> list[LedgerEntry]:
        """Answered messages whose claimed file a crash left behind."""
        rows = self.store.query(
            f"SELECT * FROM inbox WHERE status = {MessageStatus.DONE.sql} "
            "AND claimed_path IS NOT NULL"
        )
        return [LedgerEntry.from_row(r) for r in rows]

    def dead_with_claims(self) -> list[LedgerEntry]:
        """Dead messages whose claimed file a stop kept from moving to failed/."""
        rows = self.store.query(
            f"SELECT * FROM inbox WHERE status = {MessageStatus.DEAD.sql} "
            "AND claimed_path IS NOT NULL"
        )
        return [LedgerEntry.from_row(r) for r in rows]
