"""Messages and tool calls: each appended as one row the moment it exists."""

from __future__ import annotations

import itertools
import json
import sqlite3
from typing import Any

from ..formats import parse_time
from .connection import Database
from .records import StoredMessage


class MessageTables(Database):
    """The ``messages`` and ``tool_calls`` tables (a part of :class:`~smarthole.db.store.Store`)."""

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
        with self.transaction() as connection:  # joins the caller's, if any
            assert db in (None, connection)
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
        self.write(
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
