"""The SQLite store: conversations, turns, messages, tool calls, plugin data.

One database file per home (``.smarthole/smarthole.db``) in WAL mode. Every message of a
conversation is one appended row, committed the moment it exists, so storing a message costs
the same however long the conversation is. The ledger of inbox messages, the outbox record and
the event log live in the same file (see ``ledger``, ``outbox`` and ``events``).

A database SQLite cannot read is moved aside as ``smarthole.db.corrupt-<UTC time>`` (when the
caller may recover, i.e. the daemon) and a fresh one is created, with a loud warning.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import CorruptStoreError, StoreError
from ..formats import iso, new_id, parse_time
from .plugindata import PluginData
from .records import Conversation, StoredMessage, Turn
from .schema import connect

__all__ = ["Conversation", "PluginData", "Store", "StoredMessage", "Turn", "new_id"]

logger = logging.getLogger(__name__)


class Store:
    """The database of one home. Thread-safe: one connection, one lock."""

    def __init__(self, connection: sqlite3.Connection, path: Path, clock: Any) -> None:
        self.path = path
        self.clock = clock
        self._db = connection
        self._lock = threading.RLock()
        self._after_commit: list[Callable[[], None]] = []

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, clock: Any, recover: bool = False) -> Store:
        """Open (creating if needed) the database at ``path``.

        With ``recover``, a database that cannot be read is moved aside and replaced by a
        fresh one; without, ``CorruptStoreError`` is raised.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls(connect(path, check=recover), path, clock)
        except sqlite3.DatabaseError as exc:
            if not recover:
                raise CorruptStoreError(
                    f"{path} is not a readable database ({exc}); start the daemon to move it aside"
                ) from exc
            aside = path.with_name(f"{path.name}.corrupt-{_stamp(clock())}")
            logger.warning(
                "DATABASE %s IS CORRUPT (%s): moved it aside to %s and started a fresh one",
                path,
                exc,
                aside,
            )
            path.replace(aside)
            for suffix in ("-wal", "-shm"):
                sidecar = path.with_name(path.name + suffix)
                if sidecar.exists():
                    sidecar.replace(aside.with_name(aside.name + suffix))
            return cls(connect(path, check=True), path, clock)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write; nested calls join the outer transaction."""
        with self._lock:
            if self._db.in_transaction:
                yield self._db
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                self._after_commit.clear()
                raise
            self._db.execute("COMMIT")
            callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction commits (now, if there is none).

        Hooks are called this way, so a plugin never sees a row that is later rolled back.
        """
        with self._lock:
            if self._db.in_transaction:
                self._after_commit.append(callback)
                return
        callback()

    def query(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: {exc}") from exc

    def query_one(self, sql: str, params: Any = ()) -> sqlite3.Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def now(self) -> str:
        return iso(self.clock())

    # -- conversations -----------------------------------------------------------------------

    def create_conversation(self, channel: str) -> Conversation:
        now = self.now()
        conversation_id = new_id()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO conversations (id, channel, created_at, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (conversation_id, channel, now, now),
            )
        conversation = self.conversation(conversation_id)
        assert conversation is not None
        return conversation

    def conversation(self, conversation_id: str) -> Conversation | None:
        row = self.query_one("SELECT * FROM conversations WHERE id = ?", (conversation_id,))
        return Conversation.from_row(row) if row else None

    def conversations_with_prefix(self, prefix: str) -> list[Conversation]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.query(
            "SELECT * FROM conversations WHERE id LIKE ? ESCAPE '\\' LIMIT 10", (pattern,)
        )
        return [Conversation.from_row(r) for r in rows]

    def active_conversation(self, channel: str) -> Conversation | None:
        row = self.query_one(
            "SELECT * FROM conversations WHERE channel = ? AND ended_at IS NULL "
            "ORDER BY updated_at DESC LIMIT 1",
            (channel,),
        )
        return Conversation.from_row(row) if row else None

    def recent_conversations(
        self, *, channel: str | None = None, ended_only: bool = False, limit: int | None = None
    ) -> list[Conversation]:
        clauses: list[str] = []
        params: list[Any] = []
        if channel is not None:
            clauses.append("channel = ?")
            params.append(channel)
        if ended_only:
            clauses.append("ended_at IS NOT NULL")
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        order = "ended_at DESC" if ended_only else "updated_at DESC"
        sql = f"SELECT * FROM conversations {where} ORDER BY {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [Conversation.from_row(r) for r in self.query(sql, params)]

    def open_conversations(self) -> list[Conversation]:
        rows = self.query("SELECT * FROM conversations WHERE ended_at IS NULL")
        return [Conversation.from_row(r) for r in rows]

    def end_conversation(self, conversation_id: str, reason: str) -> bool:
        """Mark a conversation ended (its summary becomes due). False if it already was."""
        now = self.now()
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE conversations SET ended_at = ?, end_reason = ?, summary_state = "
                "CASE WHEN turns > 0 THEN 'pending' ELSE 'none' END "
                "WHERE id = ? AND ended_at IS NULL",
                (now, reason, conversation_id),
            )
        return cursor.rowcount > 0

    def reopen_conversation(self, conversation_id: str) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE conversations SET ended_at = NULL, end_reason = NULL, "
                "updated_at = ? WHERE id = ?",
                (self.now(), conversation_id),
            )

    def set_title(
        self, conversation_id: str, title: str | None, *, pinned: bool = False, state: str = "done"
    ) -> bool:
        """Set the title; a pinned (user-set) title is only replaced by another pinned one."""
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE conversations SET title = ?, title_state = ?, "
                "title_pinned = MAX(title_pinned, ?) WHERE id = ? AND (title_pinned = 0 OR ?)",
                (title, state, int(pinned), conversation_id, int(pinned)),
            )
        return cursor.rowcount > 0

    def set_summary(self, conversation_id: str, summary: str | None, *, state: str) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE conversations SET summary = ?, summary_state = ? WHERE id = ?",
                (summary, state, conversation_id),
            )

    def conversations_needing(self, what: str, limit: int = 20) -> list[Conversation]:
        """Conversations whose ``title`` or ``summary`` is due (state ``pending``)."""
        column = {"title": "title_state", "summary": "summary_state"}[what]
        rows = self.query(
            f"SELECT * FROM conversations WHERE {column} = 'pending' ORDER BY updated_at LIMIT ?",
            (limit,),
        )
        return [Conversation.from_row(r) for r in rows]

    def delete_conversation(self, conversation_id: str) -> None:
        with self.transaction() as db:
            for table, column in (
                ("messages", "conversation_id"),
                ("turns", "conversation_id"),
                ("tool_calls", "conversation_id"),
                ("events", "conversation_id"),
            ):
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (conversation_id,))
            db.execute(
                "DELETE FROM plugin_data WHERE plugin = 'smarthole' AND key = ?", (conversation_id,)
            )
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- turns -------------------------------------------------------------------------------

    def start_turn(self, db: sqlite3.Connection, conversation_id: str, message_id: str) -> int:
        """Number and insert the next turn; call inside a transaction."""
        now = self.now()
        db.execute(
            "UPDATE conversations SET turns = turns + 1, updated_at = ? WHERE id = ?",
            (now, conversation_id),
        )
        (number,) = db.execute(
            "SELECT turns FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        db.execute(
            "INSERT INTO turns (conversation_id, number, message_id, status, started_at) "
            "VALUES (?, ?, ?, 'running', ?)",
            (conversation_id, number, message_id, now),
        )
        return int(number)

    def turn(self, conversation_id: str, number: int) -> Turn | None:
        row = self.query_one(
            "SELECT * FROM turns WHERE conversation_id = ? AND number = ?",
            (conversation_id, number),
        )
        return Turn.from_row(row) if row else None

    def turn_for_message(self, message_id: str) -> Turn | None:
        row = self.query_one("SELECT * FROM turns WHERE message_id = ?", (message_id,))
        return Turn.from_row(row) if row else None

    def turns(self, conversation_id: str) -> list[Turn]:
        rows = self.query(
            "SELECT * FROM turns WHERE conversation_id = ? ORDER BY number", (conversation_id,)
        )
        return [Turn.from_row(r) for r in rows]

    def update_turn(self, conversation_id: str, number: int, **values: Any) -> None:
        allowed = {"status", "finished_at", "error", "note", "end_requested"}
        assert set(values) <= allowed, values
        assignments = ", ".join(f"{key} = ?" for key in values)
        with self.transaction() as db:
            db.execute(
                f"UPDATE turns SET {assignments} WHERE conversation_id = ? AND number = ?",
                (*values.values(), conversation_id, number),
            )

    def interrupt_running_turns(self) -> list[Turn]:
        """Mark every turn left ``running`` by a stopped daemon as ``interrupted``."""
        with self.transaction() as db:
            rows = db.execute("SELECT * FROM turns WHERE status = 'running'").fetchall()
            db.execute("UPDATE turns SET status = 'interrupted' WHERE status = 'running'")
        return [Turn.from_row(r) for r in rows]

    # -- messages ----------------------------------------------------------------------------

    def append_message(
        self,
        conversation_id: str,
        turn: int,
        role: str,
        kind: str,
        content: list[dict[str, Any]],
        *,
        tool_use_id: str | None = None,
        db: sqlite3.Connection | None = None,
    ) -> StoredMessage:
        """Append one message row and commit (or join the caller's transaction)."""
        now = self.now()
        with contextlib.ExitStack() as stack:
            connection = db or stack.enter_context(self.transaction())
            cursor = connection.execute(
                "INSERT INTO messages (conversation_id, turn, role, kind, content, tool_use_id, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    turn,
                    role,
                    kind,
                    json.dumps(content, ensure_ascii=False),
                    tool_use_id,
                    now,
                ),
            )
            connection.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
            )
        return StoredMessage(
            id=int(cursor.lastrowid or 0),
            conversation_id=conversation_id,
            turn=turn,
            role=role,
            kind=kind,
            content=content,
            created_at=parse_time(now),
            tool_use_id=tool_use_id,
        )

    def messages(self, conversation_id: str, *, turn: int | None = None) -> list[StoredMessage]:
        sql = "SELECT * FROM messages WHERE conversation_id = ?"
        params: list[Any] = [conversation_id]
        if turn is not None:
            sql += " AND turn = ?"
            params.append(turn)
        return [StoredMessage.from_row(r) for r in self.query(sql + " ORDER BY id", params)]

    def recent_history(
        self, conversation_id: str, *, current_turn: int, budget_chars: int
    ) -> list[StoredMessage]:
        """The API-history messages of the current turn plus whole earlier turns, newest first
        until ``budget_chars`` is spent; returned oldest first.

        Reads backwards, so the cost follows the budget, not the conversation's length.
        """
        kept: list[StoredMessage] = []
        spent = 0
        with self._lock:
            cursor = self._db.execute(
                "SELECT * FROM messages WHERE conversation_id = ? AND turn <= ? AND kind IN "
                "('user', 'assistant', 'tool_result') ORDER BY turn DESC, id DESC",
                (conversation_id, current_turn),
            )
            for turn, rows in itertools.groupby(cursor, key=lambda row: row["turn"]):
                batch = list(rows)
                size = sum(len(row["content"]) for row in batch)
                if turn != current_turn and spent + size > budget_chars:
                    break
                spent += size
                kept.extend(StoredMessage.from_row(row) for row in batch)
            cursor.close()
        kept.reverse()
        return kept

    # -- tool calls --------------------------------------------------------------------------

    def record_tool_start(
        self, tool_use_id: str, conversation_id: str, turn: int, name: str
    ) -> None:
        """The intent row: written before a tool runs, so a crash leaves it 'in doubt'."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO tool_calls (tool_use_id, conversation_id, turn, name, started_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tool_use_id) DO UPDATE SET runs = runs + 1",
                (tool_use_id, conversation_id, turn, name, self.now()),
            )

    def started_tool_calls(self, conversation_id: str, turn: int) -> dict[str, int]:
        """Tool calls of a turn that were started, with how many times each was run."""
        rows = self.query(
            "SELECT tool_use_id, runs FROM tool_calls WHERE conversation_id = ? AND turn = ?",
            (conversation_id, turn),
        )
        return {row["tool_use_id"]: row["runs"] for row in rows}

    # -- plugin data -------------------------------------------------------------------------

    def plugin_data(self, plugin: str) -> PluginData:
        return PluginData(self, plugin)


def _stamp(moment: datetime) -> str:
    return iso(moment).replace(":", "").replace("-", "")[:15] + "Z"
