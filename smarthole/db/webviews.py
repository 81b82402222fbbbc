"""The reads of the web view that no other module needs: pages of rows, bounded by turn.

Read-only. Each query is bounded (a page of conversations, a range of human turns, one
task) so a page of a long conversation costs what it shows, not what the conversation holds.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..attachments import Attachment, attachments_in
from ..formats import from_micros, parse_time
from .connection import Database
from .records import ASSISTANT, CONVERSATION_KEY, USER, Conversation, text_content
from .states import OutboxKind, OutboxState, TurnStatus
from .tasks import Task
from .usage import COUNTS, UsageTotals

IMPORTED = "imported"  # the note of an imported turn (conversations.IMPORTED)
_SUMS = "COUNT(*) AS requests, " + ", ".join(f"COALESCE(SUM({c}), 0) AS {c}" for c in COUNTS)


@dataclass(frozen=True)
class Said:
    """Something said in a human turn: the person's message (``kind`` ``user``), an outbox
    item for them (``message``, ``question``, ``response``, ``error``), or the stored reply of
    a turn that wrote none (``assistant``: an imported turn)."""

    turn: int
    kind: str
    text: str
    created_at: datetime
    waiting_for_reply: bool = False
    attachments: tuple[Attachment, ...] = ()
    shown_time: str | None = None  # how ``text`` says ``created_at`` (a decision's line: 06:53)


@dataclass(frozen=True)
class CommandSaid:
    """A command a person sent in a conversation's channel (``/status``), and its reply."""

    text: str  # the message as sent
    reply: str
    ok: bool
    sent_at: datetime  # when the ledger took the message
    answered_at: datetime


@dataclass(frozen=True)
class TaskStep:
    """One row of a task's tool loop: a model reply or a tool result, with its agent turn."""

    agent_turn: int
    kind: str
    content: list[dict[str, Any]]
    tool_use_id: str | None


class WebViews:
    """Read-only queries of the web view over one store."""

    def __init__(self, store: Database) -> None:
        self.store = store

    def conversation_page(self, *, limit: int, offset: int) -> tuple[list[Conversation], int]:
        """Conversations, most recently updated first, and how many there are in all."""
        rows = self.store.query(
            "SELECT * FROM conversations ORDER BY updated_at DESC, key DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        total = self.store.query_one("SELECT COUNT(*) AS n FROM conversations")
        return [Conversation.from_row(r) for r in rows], int(total["n"]) if total else 0

    def last_turn_statuses(self, conversation_ids: list[str]) -> dict[str, TurnStatus]:
        """The status of each conversation's latest turn (absent: it has none)."""
        if not conversation_ids:
            return {}
        marks = ", ".join("?" * len(conversation_ids))
        rows = self.store.query(
            "SELECT c.id, t.status FROM conversations c JOIN turn_rows t "
            f"ON t.conversation = c.key AND t.number = c.turns WHERE c.id IN ({marks})",
            conversation_ids,
        )
        return {row["id"]: TurnStatus(row["status"]) for row in rows}

    def said(self, conversation_id: str, first_turn: int, last_turn: int) -> list[Said]:
        """What the person and the entry agent said in turns ``first_turn..last_turn``, in
        order: each turn's messages from the person, then its outbox items for them (or, for
        a turn with none that completed, its last stored reply)."""
        people = self.store.query(
            "SELECT turn, kind, text, content, created_at FROM message_rows "
            f"WHERE conversation = ({CONVERSATION_KEY}) AND turn BETWEEN ? AND ? "
            f"AND kind IN ({USER}, {ASSISTANT}) ORDER BY turn, id",
            (conversation_id, first_turn, last_turn),
        )
        items = self.store.query(
            "SELECT turn, kind, text, created_at, waiting_for_reply FROM outbox "
            f"WHERE conversation_id = ? AND turn BETWEEN ? AND ? "
            f"AND state != {OutboxState.PLANNED.sql} ORDER BY created_at, rowid",
            (conversation_id, first_turn, last_turn),
        )
        by_turn: dict[int, list[Said]] = {}
        for row in items:
            by_turn.setdefault(row["turn"], []).append(
                Said(
                    row["turn"],
                    OutboxKind(row["kind"]),
                    row["text"],
                    parse_time(row["created_at"]),
                    bool(row["waiting_for_reply"]),
                )
            )
        found: list[Said] = []
        replies: dict[int, Said] = {}
        for row in people:
            said = _message(row)
            if row["kind"] == USER:
                found.append(said)
            elif said.text.strip():
                replies[said.turn] = said  # the last one of its turn wins
        turns = sorted({s.turn for s in found} | set(by_turn) | set(replies))
        ordered: list[Said] = []
        for turn in turns:
            ordered.extend(s for s in found if s.turn == turn)
            fallback = [replies[turn]] if turn in replies else []
            ordered.extend(
                by_turn.get(turn) or self._imported_only(conversation_id, turn, fallback)
            )
        return ordered

    def commands(self, conversation_id: str, since: datetime | None = None) -> list[CommandSaid]:
        """The commands answered in this conversation (``since`` a time, if given), oldest
        first: they are no turn, so the turns' reads never hold them."""
        rows = self.store.query(
            "SELECT o.text AS reply, o.created_at, o.extra, i.received_at, "
            "json_extract(i.payload, '$.text') AS sent FROM outbox o "
            "JOIN inbox i ON i.message_id = o.in_reply_to "
            f"WHERE o.conversation_id = ? AND o.kind = {OutboxKind.COMMAND.sql} "
            f"AND o.turn IS NULL AND o.state != {OutboxState.PLANNED.sql} ORDER BY o.created_at",
            (conversation_id,),
        )
        found = []
        for row in rows:
            answered_at = parse_time(row["created_at"])
            if since is not None and answered_at < since:
                continue
            extra = json.loads(row["extra"] or "{}")
            found.append(
                CommandSaid(
                    text=str(row["sent"] or ""),
                    reply=row["reply"],
                    ok=extra.get("ok") is not False,
                    sent_at=parse_time(row["received_at"]),
                    answered_at=answered_at,
                )
            )
        return found

    def turn_starts(self, conversation_id: str, first: int, last: int) -> dict[int, datetime]:
        """When each of turns ``first..last`` began: its first message from the person."""
        rows = self.store.query(
            "SELECT turn, MIN(created_at) AS at FROM message_rows "
            f"WHERE conversation = ({CONVERSATION_KEY}) AND turn BETWEEN ? AND ? "
            f"AND kind = {USER} GROUP BY turn",
            (conversation_id, first, last),
        )
        return {row["turn"]: from_micros(row["at"]) for row in rows}

    def _imported_only(self, conversation_id: str, turn: int, fallback: list[Said]) -> list[Said]:
        """The stored reply stands in only for an imported turn (one that wrote no outbox)."""
        if not fallback:
            return []
        row = self.store.query_one(
            f"SELECT note, status FROM turn_rows WHERE conversation = ({CONVERSATION_KEY}) "
            "AND number = ?",
            (conversation_id, turn),
        )
        imported = row is not None and row["note"] == IMPORTED
        return fallback if imported else []

    def turns_with_tasks(self, conversation_id: str) -> list[tuple[int, int]]:
        """``(human turn, how many tasks)`` for each turn of the conversation that has tasks."""
        rows = self.store.query(
            "SELECT turn, COUNT(*) AS n FROM tasks WHERE conversation_id = ? "
            "GROUP BY turn ORDER BY turn",
            (conversation_id,),
        )
        return [(row["turn"], row["n"]) for row in rows]

    def tasks_of_turn(self, conversation_id: str, turn: int) -> list[Task]:
        rows = self.store.query(
            "SELECT * FROM tasks WHERE conversation_id = ? AND turn = ? ORDER BY created_at, rowid",
            (conversation_id, turn),
        )
        return [Task.from_row(row) for row in rows]

    def tasks_between(self, conversation_id: str, first_turn: int, last_turn: int) -> list[Task]:
        rows = self.store.query(
            "SELECT * FROM tasks WHERE conversation_id = ? AND turn BETWEEN ? AND ? "
            "ORDER BY turn, created_at, rowid",
            (conversation_id, first_turn, last_turn),
        )
        return [Task.from_row(row) for row in rows]

    def task_steps(self, task_id: str) -> list[TaskStep]:
        """Every model reply and tool result of a task's agent turns (not their requests)."""
        rows = self.store.query(
            "SELECT agent_turn, kind, content, tool_use_id FROM task_messages "
            "WHERE task_id = ? AND kind IN ('assistant', 'tool_result') ORDER BY agent_turn, id",
            (task_id,),
        )
        return [
            TaskStep(row["agent_turn"], row["kind"], json.loads(row["content"]), row["tool_use_id"])
            for row in rows
        ]

    def turn_usage(self, conversation_id: str, turn: int) -> UsageTotals:
        """The tokens of one human turn: the entry agent's and its team's."""
        row = self.store.query_one(
            f"SELECT {_SUMS} FROM usage WHERE conversation_id = ? AND turn = ? "
            "AND purpose IN ('turn', 'agent_turn')",
            (conversation_id, turn),
        )
        return UsageTotals() if row is None else UsageTotals.from_row(row)


def _message(row: sqlite3.Row) -> Said:
    text = row["text"]
    content = json.loads(row["content"]) if text is None else text_content(text)
    words = "\n".join(b["text"] for b in content if b.get("type") == "text")
    kind = "user" if row["kind"] == USER else "assistant"
    attached = tuple(attachments_in(content)) if text is None else ()
    return Said(row["turn"], kind, words, from_micros(row["created_at"]), attachments=attached)
