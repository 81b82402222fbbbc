"""Messages and tool calls: each appended as one row the moment it exists."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..attachments.kinds import budget_chars as counted_chars
from ..formats import compact_json, iso, micros, parse_time
from .connection import Database
from .records import (
    ASSISTANT,
    CONVERSATION_KEY,
    KIND_CODES,
    ROLES,
    TOOL_RESULT,
    USER,
    StoredMessage,
    stored_text,
)

# The rows of the Messages API history, with only the columns that building it needs.
_HISTORY = (
    "SELECT id, turn, kind, coalesce(text, content), text IS NULL, created_at FROM message_rows "
    f"WHERE conversation = ({CONVERSATION_KEY}) AND kind IN ({USER}, {ASSISTANT}, {TOOL_RESULT})"
)


# One message of the API history as stored: (id, turn, kind code (records.KINDS), body, whether
# the body is content JSON (else it is the text of one text block), created_at microseconds).
# Plain tuples, not a named type: a reload reads thousands of them.
HistoryRow = tuple[int, int, int, str, int, int]


class MessageTables(Database):
    """The ``messages`` and ``tool_calls`` tables (a part of :class:`~smarthole.db.store.Store`)."""

    # -- messages ----------------------------------------------------------------------------

    def append_message(
        self,
        conversation_id: str,
        turn: int,
        kind: str,
        content: list[dict[str, Any]],
        *,
        tool_use_id: str | None = None,
        db: sqlite3.Connection | None = None,
    ) -> StoredMessage:
        """Append one message row and commit (or join the caller's transaction); the kind
        decides the role (records.ROLES)."""
        moment = self.clock()
        now = iso(moment)
        text = stored_text(content)
        with self.transaction() as connection:  # joins the caller's, if any
            assert db in (None, connection)
            cursor = connection.execute(
                "INSERT INTO message_rows (conversation, turn, kind, text, content, tool_use_id, "
                f"created_at) VALUES (({CONVERSATION_KEY}), ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    turn,
                    KIND_CODES[kind],
                    text,
                    compact_json(content) if text is None else None,
                    tool_use_id,
                    micros(moment),
                ),
            )
            connection.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
            )
        return StoredMessage(
            id=int(cursor.lastrowid or 0),
            conversation_id=conversation_id,
            turn=turn,
            role=ROLES[kind],
            kind=kind,
            content=content,
            created_at=parse_time(now),
            tool_use_id=tool_use_id,
        )

    def messages(self, conversation_id: str, *, turn: int | None = None) -> list[StoredMessage]:
        sql = f"SELECT * FROM message_rows WHERE conversation = ({CONVERSATION_KEY})"
        params: list[Any] = [conversation_id]
        if turn is not None:
            sql += " AND turn = ?"
            params.append(turn)
        rows = self.query(sql + " ORDER BY id", params)
        return [StoredMessage.from_row(r, conversation_id) for r in rows]

    def has_tool_message(self, conversation_id: str, tool_use_id: str, kind: str) -> bool:
        """Whether a message of ``kind`` was stored for tool call ``tool_use_id`` of this
        conversation (the model's ids are unique only within one)."""
        row = self.query_one(
            "SELECT 1 FROM messages WHERE conversation_id = ? AND tool_use_id = ? AND kind = ?",
            (conversation_id, tool_use_id, kind),
        )
        return row is not None

    def history_rows(self, conversation_id: str, *, after_id: int) -> list[HistoryRow]:
        """The API-history rows stored after row ``after_id``, oldest first."""
        with self._lock:
            cursor = self._db.cursor()
            cursor.row_factory = None  # plain tuples: this is read on every model call
            cursor.execute(f"{_HISTORY} AND id > ? ORDER BY id", (conversation_id, after_id))
            return cursor.fetchall()

    def history_tail(
        self, conversation_id: str, *, current_turn: int, budget_chars: int
    ) -> tuple[list[HistoryRow], bool]:
        """Whole turns up to ``current_turn``, newest first while ``budget_chars`` lasts (the
        current turn always), and the first turn that does not fit; returned oldest first,
        with whether older turns remain.

        Reads backwards, so the cost follows the budget, not the conversation's length.
        """
        kept: list[HistoryRow] = []
        spent = size = 0
        turn = None
        older = False
        with self._lock:
            cursor = self._db.cursor()
            cursor.row_factory = None
            cursor.execute(
                f"{_HISTORY} AND turn <= ? ORDER BY turn DESC, id DESC",
                (conversation_id, current_turn),
            )
            for row in cursor:  # a plain loop: this runs over thousands of rows on a reload
                if row[1] != turn:
                    if turn is not None:
                        full = turn != current_turn and spent + size > budget_chars
                        spent += size
                        if full:  # that turn was the last to read
                            older = True
                            break
                    turn, size = row[1], 0
                size += counted_chars(row[3])  # the text, or the JSON (and attachments)
                kept.append(row)
            cursor.close()
        kept.reverse()
        return kept, older

    # -- tool calls --------------------------------------------------------------------------

    def record_tool_start(
        self, tool_use_id: str, conversation_id: str, turn: int, name: str
    ) -> None:
        """The intent row: written before a tool runs, so a crash leaves it 'in doubt'."""
        self.write(
            "INSERT INTO tool_calls (tool_use_id, conversation_id, turn, name, started_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, tool_use_id) "
            "DO UPDATE SET runs = runs + 1",
            (tool_use_id, conversation_id, turn, name, self.now()),
        )

    def started_tool_calls(self, conversation_id: str, turn: int) -> dict[str, int]:
        """Tool calls of a turn that were started, with how many times each was run."""
        rows = self.query(
            "SELECT tool_use_id, runs FROM tool_calls WHERE conversation_id = ? AND turn = ?",
            (conversation_id, turn),
        )
        return {row["tool_use_id"]: row["runs"] for row in rows}
