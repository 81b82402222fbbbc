"""The ``tasks`` table family: team tasks, their agent turns, and each turn's tool loop.

A task is stored when it starts and belongs to the human turn that started it (through the
entry agent's ``start_task`` call, or an inbox file naming ``agents``). Its agent turns are rows
of their own, each written the moment the turn completes; the messages of the turn in progress
(model replies, tool results) are kept beside them so a crash resumes mid-turn without running
a finished tool again. Nothing here is ever a message of the human conversation.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..formats import compact_json, new_id
from .records import StoredMessage, from_row, like_prefix, unique_match
from .states import RUNNING_TASKS, TaskStatus, sql_values

if TYPE_CHECKING:
    from .store import Store

RUNNING = sql_values(*RUNNING_TASKS)  # in SQL: the tasks whose loop may run


@dataclass(frozen=True)
class Task:
    id: str
    conversation_id: str
    turn: int
    message_id: str
    started_by: str
    task: str
    agents: tuple[str, ...]
    max_turns: int
    status: TaskStatus
    abort_requested: bool
    note: str | None
    result: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.status.finished

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Task:
        return from_row(
            cls,
            row,
            times=("created_at", "updated_at", "finished_at"),
            status=TaskStatus(row["status"]),
            agents=tuple(json.loads(row["agents"])),
            abort_requested=bool(row["abort_requested"]),
        )


@dataclass(frozen=True)
class AgentTurn:
    """One completed agent turn: ``index`` counts from 0; ``tool_calls`` are its tool names."""

    task_id: str
    index: int
    agent: str
    text: str
    tool_calls: tuple[str, ...]
    created_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> AgentTurn:
        return from_row(
            cls,
            row,
            times=("created_at",),
            index=row["idx"],
            tool_calls=tuple(json.loads(row["tool_calls"])),
        )


class Tasks:
    """Reads and writes the task tables of a :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- tasks ------------------------------------------------------------------------------

    def create(
        self,
        *,
        conversation_id: str,
        turn: int,
        message_id: str,
        started_by: str,
        task: str,
        agents: list[str],
        max_turns: int,
        db: sqlite3.Connection | None = None,
    ) -> tuple[Task, bool]:
        """Store a new ``active`` task, or find the one ``started_by`` already started.

        Returns the task and whether it was created now. ``started_by`` (a tool-use id or an
        inbox message id) makes starting idempotent: a resumed turn finds its task again. It is
        stored scoped by its conversation (:func:`starter_key`): a model's ids are unique only
        there, and one reused elsewhere must start that conversation's own task.
        """
        started_by = starter_key(conversation_id, started_by)
        now = self.store.now()
        with self.store.transaction() as connection:  # joins the caller's, if any
            assert db in (None, connection)
            cursor = connection.execute(
                "INSERT INTO tasks (id, conversation_id, turn, message_id, started_by, task, "
                "agents, max_turns, status, created_at, updated_at) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, {TaskStatus.ACTIVE.sql}, ?, ?) "
                "ON CONFLICT (started_by) DO NOTHING",
                (
                    new_id(),
                    conversation_id,
                    turn,
                    message_id,
                    started_by,
                    task,
                    json.dumps(agents),
                    max_turns,
                    now,
                    now,
                ),
            )
            row = connection.execute(
                "SELECT * FROM tasks WHERE started_by = ?", (started_by,)
            ).fetchone()
        return Task.from_row(row), cursor.rowcount == 1

    def get(self, task_id: str) -> Task | None:
        row = self.store.query_one("SELECT * FROM tasks WHERE id = ?", (task_id,))
        return Task.from_row(row) if row else None

    def find(self, wanted: str) -> Task:
        """A task by id or unique id prefix; ``LookupFailed`` otherwise."""
        exact = self.get(wanted)
        rows = (
            []
            if exact
            else self.store.query(
                "SELECT * FROM tasks WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at LIMIT 6",
                (like_prefix(wanted),),
            )
        )
        candidates = [Task.from_row(row) for row in rows]
        return unique_match(wanted, exact, candidates, "task", key=lambda t: t.id)

    def by_starter(self, conversation_id: str, started_by: str) -> Task | None:
        """The task ``started_by`` started in this conversation; a task stored before the key
        was scoped (schema 6 and older) is found by its bare id, in the same conversation."""
        row = self.store.query_one(
            "SELECT * FROM tasks WHERE started_by IN (?, ?) AND conversation_id = ?",
            (starter_key(conversation_id, started_by), started_by, conversation_id),
        )
        return Task.from_row(row) if row else None

    def listing(self, *, everything: bool = False, recent: int = 10) -> list[Task]:
        """Newest first: every task, or the running ones plus the ``recent`` last others."""
        if everything:
            rows = self.store.query("SELECT * FROM tasks ORDER BY created_at DESC, rowid DESC")
        else:
            rows = self.store.query(
                f"SELECT * FROM tasks WHERE status IN ({RUNNING}) UNION "
                f"SELECT * FROM (SELECT * FROM tasks WHERE status NOT IN ({RUNNING}) "
                "ORDER BY created_at DESC, rowid DESC LIMIT ?) ORDER BY created_at DESC",
                (recent,),
            )
        return [Task.from_row(row) for row in rows]

    def running(self) -> list[Task]:
        """Active and interrupted tasks, oldest first."""
        rows = self.store.query(
            f"SELECT * FROM tasks WHERE status IN ({RUNNING}) ORDER BY created_at"
        )
        return [Task.from_row(row) for row in rows]

    def set_status(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        note: str | None = None,
        result: str | None = None,
        db: sqlite3.Connection | None = None,
    ) -> None:
        """Move a task to ``status``; a finished status also records its note and result."""
        now = self.store.now()
        finished_at = now if status.finished else None
        with self.store.transaction() as connection:  # joins the caller's, if any
            assert db in (None, connection)
            connection.execute(
                "UPDATE tasks SET status = ?, note = COALESCE(?, note), "
                "result = COALESCE(?, result), updated_at = ?, finished_at = ? WHERE id = ?",
                (status, note, result, now, finished_at, task_id),
            )

    def request_abort(self, task_id: str) -> None:
        """Ask the task's loop to stop after the model call in flight."""
        self.store.write(
            "UPDATE tasks SET abort_requested = 1, updated_at = ? WHERE id = ?",
            (self.store.now(), task_id),
        )

    def interrupt_active(self) -> int:
        """At start: a task still ``active`` lost its loop in a crash. Returns how many."""
        return self.store.write(
            f"UPDATE tasks SET status = {TaskStatus.INTERRUPTED.sql}, updated_at = ? "
            f"WHERE status = {TaskStatus.ACTIVE.sql}",
            (self.store.now(),),
        )

    def interrupt_for_message(self, message_id: str, *, db: sqlite3.Connection) -> None:
        """The human turn that owns these tasks stopped (to resume): so did their loops."""
        db.execute(
            f"UPDATE tasks SET status = {TaskStatus.INTERRUPTED.sql}, updated_at = ? "
            f"WHERE message_id = ? AND status = {TaskStatus.ACTIVE.sql}",
            (self.store.now(), message_id),
        )

    def fail_for_message(
        self, message_id: str, error: str, *, db: sqlite3.Connection
    ) -> list[Task]:
        """The human turn that owns these tasks is dead: so are its unfinished tasks."""
        unfinished = [
            Task.from_row(row)
            for row in db.execute(
                f"SELECT * FROM tasks WHERE message_id = ? AND status IN ({RUNNING})",
                (message_id,),
            ).fetchall()
        ]
        for task in unfinished:
            self.set_status(task.id, TaskStatus.FAILED, note=f"failed: {error}", db=db)
        return unfinished

    # -- agent turns ------------------------------------------------------------------------

    def turns(self, task_id: str) -> list[AgentTurn]:
        rows = self.store.query(
            "SELECT * FROM task_turns WHERE task_id = ? ORDER BY idx", (task_id,)
        )
        return [AgentTurn.from_row(row) for row in rows]

    def turn_count(self, task_id: str) -> int:
        row = self.store.query_one(
            "SELECT COUNT(*) AS n FROM task_turns WHERE task_id = ?", (task_id,)
        )
        return int(row["n"]) if row else 0

    def add_turn(
        self,
        task_id: str,
        index: int,
        agent: str,
        text: str,
        tool_calls: list[str],
        *,
        db: sqlite3.Connection,
    ) -> None:
        """Store a completed agent turn. A second turn with one index is a bug, and fails."""
        db.execute(
            "INSERT INTO task_turns (task_id, idx, agent, text, tool_calls, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (task_id, index, agent, text, json.dumps(tool_calls), self.store.now()),
        )

    # -- the tool loop of the agent turn in progress ----------------------------------------

    def messages(self, task_id: str, agent_turn: int) -> list[StoredMessage]:
        rows = self.store.query(
            "SELECT * FROM task_messages WHERE task_id = ? AND agent_turn = ? ORDER BY id",
            (task_id, agent_turn),
        )
        return [_as_stored(row) for row in rows]

    def append_message(
        self,
        task_id: str,
        agent_turn: int,
        role: str,
        kind: str,
        content: list[dict[str, Any]],
        *,
        tool_use_id: str | None = None,
        db: sqlite3.Connection | None = None,
    ) -> None:
        with self.store.transaction() as connection:  # joins the caller's, if any
            assert db in (None, connection)
            connection.execute(
                "INSERT INTO task_messages (task_id, agent_turn, role, kind, content, "
                "tool_use_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    task_id,
                    agent_turn,
                    role,
                    kind,
                    compact_json(content),
                    tool_use_id,
                    self.store.now(),
                ),
            )

    def record_tool_start(self, tool_use_id: str, task_id: str, agent_turn: int, name: str) -> None:
        """The intent row: written before a tool runs, so a crash leaves it 'in doubt'."""
        self.store.write(
            "INSERT INTO task_tool_calls (tool_use_id, task_id, agent_turn, name, started_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id, tool_use_id) "
            "DO UPDATE SET runs = runs + 1",
            (tool_use_id, task_id, agent_turn, name, self.store.now()),
        )

    def has_tool_result(self, task_id: str, tool_use_id: str) -> bool:
        """Whether any agent turn of the task stored a result under ``tool_use_id``."""
        row = self.store.query_one(
            "SELECT 1 FROM task_messages WHERE task_id = ? AND tool_use_id = ? "
            "AND kind = 'tool_result'",
            (task_id, tool_use_id),
        )
        return row is not None

    def started_tool_calls(self, task_id: str, agent_turn: int) -> dict[str, int]:
        rows = self.store.query(
            "SELECT tool_use_id, runs FROM task_tool_calls WHERE task_id = ? AND agent_turn = ?",
            (task_id, agent_turn),
        )
        return {row["tool_use_id"]: row["runs"] for row in rows}


def _as_stored(row: sqlite3.Row) -> StoredMessage:
    """A task message in the shape the agent loop reads (its task stands for the conversation)."""
    return from_row(
        StoredMessage,
        row,
        times=("created_at",),
        conversation_id=row["task_id"],
        turn=row["agent_turn"],
        content=json.loads(row["content"]),
    )


def starter_key(conversation_id: str, started_by: str) -> str:
    """How ``tasks.started_by`` holds a starter: scoped by its conversation."""
    return f"{conversation_id}:{started_by}"
