"""Operating tasks from outside their loop: aborting one, describing them for people."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from ..db.events import about_turn
from ..db.states import TaskStatus
from ..formats import iso
from .prompts import ABORTED_NOTE

if TYPE_CHECKING:
    from ..db.events import EventLog
    from ..db.store import Store
    from ..db.tasks import Task, Tasks


def abort_task(
    store: Store, events: EventLog, tasks: Tasks, task: Task, *, loop_may_run: bool
) -> bool:
    """Ask ``task`` to stop; True if it stopped now, False if its running loop will stop it.

    A loop stops the task after the model call in flight returns. Without one (no daemon, or a
    task waiting for its turn's next attempt) the task is aborted here; either way the entry
    agent gets ``aborted by the user`` as its tool result when its turn goes on.
    """
    tasks.request_abort(task.id)
    if loop_may_run and task.status is TaskStatus.ACTIVE:
        return False
    with store.transaction() as db:
        current = tasks.get(task.id)
        if current is None or current.finished:
            return True
        tasks.set_status(task.id, TaskStatus.ABORTED, note=ABORTED_NOTE, db=db)
        _finished(store, events, tasks, task, TaskStatus.ABORTED, db=db)
    return True


def fail_tasks(
    store: Store,
    events: EventLog,
    tasks: Tasks,
    message_id: str,
    error: str,
    *,
    db: sqlite3.Connection,
) -> None:
    """A dead human turn fails its unfinished tasks, each with its ``task_finished`` event."""
    for task in tasks.fail_for_message(message_id, error, db=db):
        _finished(store, events, tasks, task, TaskStatus.FAILED, db=db)


def _finished(
    store: Store,
    events: EventLog,
    tasks: Tasks,
    task: Task,
    status: TaskStatus,
    *,
    db: sqlite3.Connection,
) -> None:
    """``task_finished`` for a task ended outside its loop, in the caller's transaction."""
    events.emit(
        "task_finished",
        **about_turn(store, task.conversation_id, task.turn, task.message_id),
        db=db,
        task=task.id,
        status=status,
        agent_turns=tasks.turn_count(task.id),
    )


def describe(task: Task, turns_done: int) -> dict[str, Any]:
    """A task as ``smarthole tasks --json`` lists it."""
    return {
        "id": task.id,
        "status": task.status,
        "conversation": task.conversation_id,
        "turn": task.turn,
        "agents": list(task.agents),
        "turns_done": turns_done,
        "max_turns": task.max_turns,
        "task": task.task,
        "note": task.note,
        "created_at": iso(task.created_at),
        "finished_at": iso(task.finished_at) if task.finished_at else None,
    }


def running_tasks(tasks: Tasks) -> list[dict[str, Any]]:
    """Active and interrupted tasks, for ``smarthole status``."""
    return [describe(task, tasks.turn_count(task.id)) for task in tasks.running()]
