"""The approvals table: tool calls that wait for (or got) a person's yes.

A call that needs approval is stored here before anything else happens, in state ``waiting``,
with its approval id and its args hash (SHA-256 of the call's canonical JSON): the row is the
call's intent while it waits, and the answer is bound to exactly that call. One row per call,
keyed by its scope (the conversation, or a team task) and its tool-use id, so a turn resumed
after a crash finds the approval it asked for instead of asking again. The decision (and who
made it, and the answer file that carried it) is written once: the first answer decides.
``pipeline.lifecycle`` and ``pipeline.answers`` own the transitions.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..formats import compact_json, iso
from .records import from_row, like_prefix
from .states import ApprovalState
from .store import Store


@dataclass(frozen=True)
class Approval:
    """One tool call that needs (or needed) a person's approval."""

    id: str
    scope: str  # the conversation's id, or the team task's
    tool_use_id: str
    conversation_id: str
    channel: str
    turn: int
    message_id: str  # the inbox message whose turn waits
    task_id: str | None
    agent: str
    tool: str
    input: Any
    args_hash: str
    question: str | None  # "outcome_unknown": a crash left a started call's outcome unknown
    status: ApprovalState
    always: bool
    note: str | None  # the person's text (a reason, a note, a plain message)
    decided_by: str | None
    answer_id: str | None  # the inbox message that carried the answer
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None

    @property
    def waiting(self) -> bool:
        return self.status is ApprovalState.WAITING

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Approval:
        return from_row(
            cls,
            row,
            times=("created_at", "expires_at", "decided_at"),
            input=json.loads(row["input"]),
            status=ApprovalState(row["status"]),
            always=bool(row["always"]),
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``smarthole approvals --json``, the web view)."""
        return {
            "id": self.id,
            "status": self.status.value,
            "tool": self.tool,
            "input": self.input,
            "args_hash": self.args_hash,
            "conversation": self.conversation_id,
            "channel": self.channel,
            "turn": self.turn,
            "message_id": self.message_id,
            "task": self.task_id,
            "agent": self.agent,
            "question": self.question,
            "always": self.always,
            "note": self.note,
            "decided_by": self.decided_by,
            "created_at": iso(self.created_at),
            "expires": iso(self.expires_at),
            "decided_at": iso(self.decided_at) if self.decided_at else None,
        }


class Approvals:
    """Reads and writes the ``approvals`` table of a :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, approval: Approval, *, db: sqlite3.Connection) -> Approval:
        """Store a new waiting approval; the one already stored for the same call if any."""
        db.execute(
            "INSERT INTO approvals (id, scope, tool_use_id, conversation_id, channel, turn, "
            "message_id, task_id, agent, tool, input, args_hash, question, status, created_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (scope, tool_use_id) DO NOTHING",
            (
                approval.id,
                approval.scope,
                approval.tool_use_id,
                approval.conversation_id,
                approval.channel,
                approval.turn,
                approval.message_id,
                approval.task_id,
                approval.agent,
                approval.tool,
                compact_json(approval.input),
                approval.args_hash,
                approval.question,
                approval.status,
                iso(approval.created_at),
                iso(approval.expires_at),
            ),
        )
        row = db.execute(
            "SELECT * FROM approvals WHERE scope = ? AND tool_use_id = ?",
            (approval.scope, approval.tool_use_id),
        ).fetchone()
        return Approval.from_row(row)

    def get(self, approval_id: str, *, db: sqlite3.Connection | None = None) -> Approval | None:
        sql, params = "SELECT * FROM approvals WHERE id = ?", (approval_id,)
        row = db.execute(sql, params).fetchone() if db else self.store.query_one(sql, params)
        return Approval.from_row(row) if row else None

    def with_prefix(self, prefix: str) -> list[Approval]:
        rows = self.store.query(
            "SELECT * FROM approvals WHERE id LIKE ? ESCAPE '\\' LIMIT 10", (like_prefix(prefix),)
        )
        return [Approval.from_row(r) for r in rows]

    def for_call(self, scope: str, tool_use_id: str) -> Approval | None:
        row = self.store.query_one(
            "SELECT * FROM approvals WHERE scope = ? AND tool_use_id = ?", (scope, tool_use_id)
        )
        return Approval.from_row(row) if row else None

    def by_answer(self, answer_id: str) -> Approval | None:
        """The approval an inbox message answered, if it answered one."""
        row = self.store.query_one("SELECT * FROM approvals WHERE answer_id = ?", (answer_id,))
        return Approval.from_row(row) if row else None

    def waiting(self, *, channel: str | None = None) -> list[Approval]:
        """The approvals that wait for an answer (of one channel), oldest first."""
        sql = f"SELECT * FROM approvals WHERE status = {ApprovalState.WAITING.sql}"
        params: tuple[Any, ...] = ()
        if channel is not None:
            sql, params = sql + " AND channel = ?", (channel,)
        rows = self.store.query(sql + " ORDER BY created_at, rowid", params)
        return [Approval.from_row(r) for r in rows]

    def of_conversation(self, conversation_id: str) -> list[Approval]:
        rows = self.store.query(
            "SELECT * FROM approvals WHERE conversation_id = ? ORDER BY created_at, rowid",
            (conversation_id,),
        )
        return [Approval.from_row(r) for r in rows]

    def count_waiting(self) -> int:
        row = self.store.query_one(
            f"SELECT COUNT(*) AS n FROM approvals WHERE status = {ApprovalState.WAITING.sql}"
        )
        return int(row["n"]) if row else 0

    def always_approved(self, conversation_id: str, tool: str) -> bool:
        """Whether the person approved ``tool`` for the rest of this conversation."""
        row = self.store.query_one(
            "SELECT 1 FROM approvals WHERE conversation_id = ? AND tool = ? AND always = 1 "
            f"AND status = {ApprovalState.APPROVED.sql} LIMIT 1",
            (conversation_id, tool),
        )
        return row is not None

    def decide(
        self,
        approval_id: str,
        status: ApprovalState,
        *,
        by: str,
        at: datetime,
        db: sqlite3.Connection,
        note: str | None = None,
        always: bool = False,
        answer_id: str | None = None,
    ) -> bool:
        """Record the decision of a waiting approval; False if it was decided already."""
        cursor = db.execute(
            "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, note = ?, "
            "always = ?, answer_id = ? "
            f"WHERE id = ? AND status = {ApprovalState.WAITING.sql}",
            (status, by, iso(at), note, int(always), answer_id, approval_id),
        )
        return cursor.rowcount == 1
