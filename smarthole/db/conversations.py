"""Conversations and their turns: the rows that say who talked when, and how each turn went."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..formats import iso, micros, new_id
from .connection import Database
from .records import CONVERSATION_KEY, Conversation, Turn, like_prefix
from .states import TitleState, TurnStatus, sql_values

# Turn rows with their conversation's id (Turn.from_row's columns).
_TURNS = (
    "SELECT c.id AS conversation_id, t.number, t.message_id, t.status, t.started_at, "
    "t.finished_at, t.error, t.note, t.end_requested "
    "FROM turn_rows t JOIN conversations c ON c.key = t.conversation"
)


class ConversationTables(Database):
    """The ``conversations`` and ``turns`` tables (a part of :class:`~smarthole.db.store.Store`)."""

    _due_marks = 0  # see due_marks()

    # -- conversations -----------------------------------------------------------------------

    def create_conversation(self, channel: str) -> Conversation:
        now = self.now()
        conversation_id = new_id()
        self.write(
            "INSERT INTO conversations (id, channel, created_at, updated_at, key) VALUES "
            "(?, ?, ?, ?, (SELECT coalesce(max(key), 0) + 1 FROM conversations))",
            (conversation_id, channel, now, now),
        )
        conversation = self.conversation(conversation_id)
        assert conversation is not None
        return conversation

    def conversation(self, conversation_id: str) -> Conversation | None:
        row = self.query_one("SELECT * FROM conversations WHERE id = ?", (conversation_id,))
        return Conversation.from_row(row) if row else None

    def conversations_with_prefix(self, prefix: str) -> list[Conversation]:
        pattern = like_prefix(prefix)
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
        ended = (
            self.write(
                "UPDATE conversations SET ended_at = ?, end_reason = ?, summary_state = "
                f"CASE WHEN turns > 0 THEN {TitleState.PENDING.sql} ELSE {TitleState.NONE.sql} END "
                "WHERE id = ? AND ended_at IS NULL",
                (now, reason, conversation_id),
            )
            > 0
        )
        if ended:
            self._due_marks += 1
        return ended

    def reopen_conversation(self, conversation_id: str) -> None:
        self.write(
            "UPDATE conversations SET ended_at = NULL, end_reason = NULL, "
            "updated_at = ? WHERE id = ?",
            (self.now(), conversation_id),
        )

    def set_title(
        self,
        conversation_id: str,
        title: str | None,
        *,
        pinned: bool = False,
        state: TitleState = TitleState.DONE,
    ) -> bool:
        """Set the title; a pinned (user-set) title is only replaced by another pinned one."""
        return (
            self.write(
                "UPDATE conversations SET title = ?, title_state = ?, "
                "title_pinned = MAX(title_pinned, ?) WHERE id = ? AND (title_pinned = 0 OR ?)",
                (title, state, int(pinned), conversation_id, int(pinned)),
            )
            > 0
        )

    def mark_title_due(self, conversation_id: str) -> None:
        """A conversation needs a title, unless it has one or the user chose one."""
        if self.write(
            f"UPDATE conversations SET title_state = {TitleState.PENDING.sql} WHERE id = ? AND "
            f"title IS NULL AND title_pinned = 0 AND title_state = {TitleState.NONE.sql}",
            (conversation_id,),
        ):
            self._due_marks += 1

    def due_marks(self) -> int:
        """A number that changes after each write of this process that made a title or
        summary due (state ``pending``): a sweep that found none due need not look again
        until it changes. Only the writes before it was read are covered, so read it first.
        (Writes of other processes, such as a ``reset`` from the CLI, are not counted.)"""
        return self._due_marks

    def set_title_if_untitled(self, conversation_id: str, title: str) -> None:
        """Give a title to a conversation that has none and is not getting one."""
        self.write(
            f"UPDATE conversations SET title = ?, title_state = {TitleState.DONE.sql} "
            "WHERE id = ? AND title IS NULL "
            f"AND title_state IN ({sql_values(TitleState.NONE, TitleState.FAILED)})",
            (title, conversation_id),
        )

    def set_summary(self, conversation_id: str, summary: str | None, *, state: TitleState) -> None:
        self.write(
            "UPDATE conversations SET summary = ?, summary_state = ? WHERE id = ?",
            (summary, state, conversation_id),
        )

    def conversations_needing(self, what: str, limit: int = 20) -> list[Conversation]:
        """Conversations whose ``title`` or ``summary`` is due (state ``pending``)."""
        column = {"title": "title_state", "summary": "summary_state"}[what]
        rows = self.query(
            f"SELECT * FROM conversations WHERE {column} = {TitleState.PENDING.sql} "
            "ORDER BY updated_at LIMIT ?",
            (limit,),
        )
        return [Conversation.from_row(r) for r in rows]

    def delete_conversation(self, conversation_id: str) -> None:
        with self.transaction() as db:
            for table, column in (
                ("message_rows", "conversation"),
                ("turn_rows", "conversation"),
                ("tool_calls", "conversation_id"),
                ("approvals", "conversation_id"),
                ("events", "conversation_id"),
            ):
                key = f"({CONVERSATION_KEY})" if column == "conversation" else "?"
                db.execute(f"DELETE FROM {table} WHERE {column} = {key}", (conversation_id,))
            db.execute(
                "DELETE FROM plugin_data WHERE plugin = 'smarthole' AND key = ?", (conversation_id,)
            )
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- turns -------------------------------------------------------------------------------

    def start_turn(self, db: sqlite3.Connection, conversation_id: str, message_id: str) -> int:
        """Number and insert the next turn; call inside a transaction."""
        moment = self.clock()
        (key, number) = db.execute(
            "UPDATE conversations SET turns = turns + 1, updated_at = ? WHERE id = ? "
            "RETURNING key, turns",
            (iso(moment), conversation_id),
        ).fetchone()
        db.execute(
            "INSERT INTO turn_rows (conversation, number, message_id, status, started_at) "
            f"VALUES (?, ?, ?, {TurnStatus.RUNNING.sql}, ?)",
            (key, number, message_id, micros(moment)),
        )
        return int(number)

    def turn(self, conversation_id: str, number: int) -> Turn | None:
        row = self.query_one(
            f"{_TURNS} WHERE c.id = ? AND t.number = ?",
            (conversation_id, number),
        )
        return Turn.from_row(row) if row else None

    def turn_for_message(self, message_id: str) -> Turn | None:
        row = self.query_one(f"{_TURNS} WHERE t.message_id = ?", (message_id,))
        return Turn.from_row(row) if row else None

    def turns(self, conversation_id: str) -> list[Turn]:
        rows = self.query(f"{_TURNS} WHERE c.id = ? ORDER BY t.number", (conversation_id,))
        return [Turn.from_row(r) for r in rows]

    def update_turn(
        self,
        conversation_id: str,
        number: int,
        *,
        db: sqlite3.Connection | None = None,
        **values: Any,
    ) -> None:
        """Set a turn's ``status``, ``error``, ``note`` or ``end_requested`` (in ``db``'s
        transaction when given)."""
        allowed = {"status", "error", "note", "end_requested"}
        assert set(values) <= allowed, values
        assignments = ", ".join(f"{key} = ?" for key in values)
        with self.transaction() as connection:  # joins the caller's, if any
            assert db in (None, connection)
            connection.execute(
                f"UPDATE turn_rows SET {assignments} "
                f"WHERE conversation = ({CONVERSATION_KEY}) AND number = ?",
                (*values.values(), conversation_id, number),
            )

    def complete_turn(
        self, db: sqlite3.Connection, conversation_id: str, number: int, *, note: str | None
    ) -> None:
        """Mark a turn completed, inside the caller's transaction (with its ledger change)."""
        db.execute(
            f"UPDATE turn_rows SET status = {TurnStatus.COMPLETED.sql}, finished_at = ?, note = ? "
            f"WHERE conversation = ({CONVERSATION_KEY}) AND number = ?",
            (micros(self.clock()), note, conversation_id, number),
        )

    def interrupt_running_turns(self) -> list[Turn]:
        """Mark every turn left ``running`` by a stopped daemon as ``interrupted``."""
        with self.transaction() as db:
            running = TurnStatus.RUNNING.sql
            rows = db.execute(f"{_TURNS} WHERE t.status = {running}").fetchall()
            db.execute(
                f"UPDATE turn_rows SET status = {TurnStatus.INTERRUPTED.sql} "
                f"WHERE status = {running}"
            )
        return [Turn.from_row(r) for r in rows]
