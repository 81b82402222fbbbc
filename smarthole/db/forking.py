"""Forks and replays: a conversation copied from turns 1..N of another, in one commit.

A fork holds copies of the original's rows (its messages, turns and tool calls), so it is a
conversation of its own: forgetting the original leaves it whole. Attachments are named by
their blob's hash in the copied rows, as in the original's: no blob is copied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..formats import new_id
from .connection import Database
from .records import ASSISTANT, CONVERSATION_KEY, Conversation, from_row
from .states import TitleState, TurnStatus, sql_values

# The statuses of a turn that is over: only those are copied (a running turn is not history).
FINISHED = (TurnStatus.COMPLETED, TurnStatus.FAILED)


@dataclass(frozen=True)
class Fork:
    """Where a conversation was forked from: ``forked_from`` at ``turn`` (its last copied
    turn); a replay's ``replay_plan`` says how it is replayed."""

    conversation_id: str
    forked_from: str
    turn: int
    note: str | None
    replay_key: str | None
    replay_plan: dict[str, Any] | None
    created_at: datetime

    @property
    def replay_of(self) -> str | None:
        return self.forked_from if self.replay_plan is not None else None

    def as_dict(self) -> dict[str, Any]:
        """``forked_from`` as ``show``, ``ls --json`` and the web view give it."""
        return {"conversation": self.forked_from, "turn": self.turn}

    @classmethod
    def from_row(cls, row: Any) -> Fork:
        plan = row["replay_plan"]
        return from_row(
            cls,
            row,
            times=("created_at",),
            replay_plan=json.loads(plan) if plan else None,
        )


@dataclass(frozen=True)
class ForkSpec:
    """What a fork copies and how the new conversation starts."""

    original: str
    turn: int  # copy turns 1..turn
    channel: str
    title: str
    ended: str | None = None  # the end reason, if it starts ended (not current)
    note: str | None = None
    replay_key: str | None = None
    replay_plan: dict[str, Any] | None = None


class ForkTables(Database):
    """The ``forks`` table, and the copy a fork makes (a part of the store)."""

    def copy_conversation(self, spec: ForkSpec, *, db: Any = None) -> Conversation:
        """A new conversation holding turns 1..``spec.turn`` of ``spec.original``, in one
        commit (or in the caller's transaction); the original is not changed."""
        conversation_id = new_id()
        now = self.now()
        with self.transaction() as connection:
            assert db in (None, connection)
            (original_key,) = connection.execute(CONVERSATION_KEY, (spec.original,)).fetchone()
            (key,) = connection.execute(
                "INSERT INTO conversations (id, channel, title, title_state, turns, created_at, "
                "updated_at, ended_at, end_reason, key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "(SELECT coalesce(max(key), 0) + 1 FROM conversations)) RETURNING key",
                (
                    conversation_id,
                    spec.channel,
                    spec.title,
                    TitleState.DONE,
                    spec.turn,
                    now,
                    now,
                    now if spec.ended else None,
                    spec.ended,
                ),
            ).fetchone()
            connection.execute(
                "INSERT INTO message_rows (conversation, turn, kind, text, content, tool_use_id, "
                "created_at) SELECT ?, turn, kind, text, content, tool_use_id, created_at "
                "FROM message_rows WHERE conversation = ? AND turn <= ? ORDER BY id",
                (key, original_key, spec.turn),
            )
            # A turn's message id is unique in the store: a copied turn gets its own.
            connection.execute(
                "INSERT INTO turn_rows (conversation, number, message_id, status, started_at, "
                "finished_at, error, note) SELECT ?, number, 'fork:' || ? || ':' || number, "
                "status, started_at, finished_at, error, note FROM turn_rows "
                "WHERE conversation = ? AND number <= ?",
                (key, conversation_id, original_key, spec.turn),
            )
            connection.execute(
                "INSERT INTO tool_calls (tool_use_id, conversation_id, turn, name, started_at, "
                "runs) SELECT tool_use_id, ?, turn, name, started_at, runs FROM tool_calls "
                "WHERE conversation_id = ? AND turn <= ?",
                (conversation_id, spec.original, spec.turn),
            )
            plan = json.dumps(spec.replay_plan) if spec.replay_plan is not None else None
            connection.execute(
                "INSERT INTO forks (conversation_id, forked_from, turn, note, replay_key, "
                "replay_plan, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, spec.original, spec.turn, spec.note, spec.replay_key, plan, now),
            )
            row = connection.execute(
                "SELECT * FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        return Conversation.from_row(row)

    def unfinished_turns(self, conversation_id: str, upto: int) -> list[int]:
        """The turns 1..``upto`` of a conversation that are not over (running, deferred...)."""
        rows = self.query(
            f"SELECT number FROM turn_rows WHERE conversation = ({CONVERSATION_KEY}) "
            f"AND number <= ? AND status NOT IN ({sql_values(*FINISHED)}) ORDER BY number",
            (conversation_id, upto),
        )
        return [row[0] for row in rows]

    def fork_of(self, conversation_id: str) -> Fork | None:
        row = self.query_one("SELECT * FROM forks WHERE conversation_id = ?", (conversation_id,))
        return Fork.from_row(row) if row else None

    def forks_of(self, conversation_ids: list[str] | None = None) -> dict[str, Fork]:
        """The forks among ``conversation_ids`` (every fork if None), by conversation id."""
        if conversation_ids is None:
            rows = self.query("SELECT * FROM forks")
        else:
            marks = ", ".join("?" * len(conversation_ids))
            rows = self.query(
                f"SELECT * FROM forks WHERE conversation_id IN ({marks})", conversation_ids
            )
        return {row["conversation_id"]: Fork.from_row(row) for row in rows}

    def fork_note(self, conversation_id: str) -> tuple[int, str] | None:
        """The turn that says what the original did after the fork point, and what: the
        fork's first own turn; None for a conversation that is no fork or has no such note."""
        row = self.query_one(
            "SELECT turn, note FROM forks WHERE conversation_id = ? AND note IS NOT NULL",
            (conversation_id,),
        )
        return (row[0] + 1, row[1]) if row else None

    def runs_after(self, conversation_id: str, turn: int) -> list[tuple[int, str, Any]]:
        """``(turn, tool, input)`` of each tool call that ran (its intent row is stored) in the
        conversation's turns after ``turn``, in the order they were asked for."""
        started = {
            row[0]
            for row in self.query(
                "SELECT tool_use_id FROM tool_calls WHERE conversation_id = ? AND turn > ?",
                (conversation_id, turn),
            )
        }
        if not started:
            return []
        rows = self.query(
            f"SELECT turn, content FROM message_rows WHERE conversation = ({CONVERSATION_KEY}) "
            f"AND turn > ? AND kind = {ASSISTANT} AND content IS NOT NULL ORDER BY id",
            (conversation_id, turn),
        )
        runs = []
        for row in rows:
            for block in json.loads(row["content"]):
                if block.get("type") == "tool_use" and block.get("id") in started:
                    runs.append((row["turn"], block.get("name", ""), block.get("input")))
        return runs

    def tool_runs(self, conversation_id: str, *, after_turn: int = 0) -> dict[str, int]:
        """The tool calls that ran in a conversation's turns after ``after_turn`` (their
        intent rows), with how many times each ran."""
        rows = self.query(
            "SELECT tool_use_id, runs FROM tool_calls WHERE conversation_id = ? AND turn > ?",
            (conversation_id, after_turn),
        )
        return {row[0]: row[1] for row in rows}

    def replays_with_key(self, replay_key: str) -> list[Fork]:
        rows = self.query(
            "SELECT * FROM forks WHERE replay_key = ? ORDER BY created_at", (replay_key,)
        )
        return [Fork.from_row(row) for row in rows]
