"""Lifecycle events: stored durably, then followed into the ``event`` hook and the CLI.

Every event has ``type``, ``at`` (UTC ISO time), ``conversation``, ``channel``, ``turn`` and
``message_id`` (None where it does not apply), plus fields of its own.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..formats import compact_json, parse_time

if TYPE_CHECKING:
    from .records import Conversation
    from .store import Store

EVENT_TYPES = (
    "conversation_started",
    "message_received",
    "message_rejected",
    "duplicate_skipped",
    "turn_started",
    "message_stored",
    "tool_called",
    "tool_finished",
    "approval_requested",
    "approval_decided",
    "question_asked",
    "reply_written",
    "turn_completed",
    "turn_failed",
    "turn_deferred",
    "turn_interrupted",
    "conversation_resumed",
    "conversation_ended",
    "conversation_renamed",
    "title_generated",
    "summary_generated",
    "task_started",
    "agent_turn_started",
    "agent_turn_finished",
    "task_finished",
    "bridge_connected",
    "bridge_disconnected",
    "schedule_fired",
    "schedule_missed",
    "memory_written",
    "memory_deleted",
    "command_run",
    "message_collected",
    "message_steered",
    "channel_started",
    "channel_stopped",
    "channel_connected",
    "channel_disconnected",
    "mail_refused",
    "delivery_failed",
    "delivery_sent",
)


@dataclass(frozen=True)
class Event:
    type: str
    at: datetime
    conversation: str | None = None
    channel: str | None = None
    turn: int | None = None
    message_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: the common keys (``id`` first: it orders events and tells a plugin
        one it has seen), then the event's own fields."""
        return {
            "id": self.id,
            "type": self.type,
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "conversation": self.conversation,
            "channel": self.channel,
            "turn": self.turn,
            "message_id": self.message_id,
            **self.data,
        }

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Event:
        return cls(
            type=row["type"],
            at=parse_time(row["at"]),
            conversation=row["conversation_id"],
            channel=row["channel"],
            turn=row["turn"],
            message_id=row["message_id"],
            data=json.loads(row["data"]),
            id=row["id"],
        )


def about(conversation: Conversation) -> dict[str, Any]:
    """The ``conversation`` and ``channel`` an event about ``conversation`` carries."""
    return {"conversation": conversation.id, "channel": conversation.channel}


def about_turn(
    store: Store, conversation_id: str, turn: int, message_id: str | None
) -> dict[str, Any]:
    """The fields of an event about one turn of a stored conversation (with its channel)."""
    conversation = store.conversation(conversation_id)
    channel = conversation.channel if conversation else None
    return place(conversation_id, channel, turn, message_id)


def place(
    conversation: str | None, channel: str | None, turn: int | None, message_id: str | None
) -> dict[str, Any]:
    """The four fields that say where an event happened, as ``emit`` takes them."""
    return {
        "conversation": conversation,
        "channel": channel,
        "turn": turn,
        "message_id": message_id,
    }


class EventLog:
    """Appends events to the store, and tells ``on_event`` once committed (the daemon's
    :class:`~smarthole.daemon.eventhook.EventHook`, which delivers them to the plugins)."""

    def __init__(self, store: Store, on_event: Callable[[Event], None] | None = None) -> None:
        self.store = store
        self.on_event = on_event

    def emit(
        self,
        type: str,
        *,
        conversation: str | None = None,
        channel: str | None = None,
        turn: int | None = None,
        message_id: str | None = None,
        db: sqlite3.Connection | None = None,
        **data: Any,
    ) -> Event:
        """Store an event (inside ``db``'s transaction when given) and notify plugins."""
        assert type in EVENT_TYPES, type
        at = self.store.now()
        where = place(conversation, channel, turn, message_id)
        with self.store.transaction() as connection:
            assert db in (None, connection)  # a caller's transaction is the one joined
            cursor = connection.execute(
                "INSERT INTO events (type, at, conversation_id, channel, turn, message_id, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (type, at, *where.values(), compact_json(data, default=str)),
            )
            event = Event(type, parse_time(at), **where, data=data, id=cursor.lastrowid)
            if self.on_event is not None:
                on_event = self.on_event
                self.store.after_commit(lambda: on_event(event))
        return event

    def since(
        self,
        after_id: int = 0,
        *,
        conversation: str | None = None,
        task: str | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        where, params = _filters(conversation, task)
        rows = self.store.query(
            f"SELECT * FROM events WHERE id > ?{where} ORDER BY id LIMIT ?",
            [after_id, *params, limit],
        )
        return [Event.from_row(r) for r in rows]

    def latest_id(self) -> int:
        row = self.store.query_one("SELECT MAX(id) AS id FROM events")
        return int(row["id"] or 0) if row else 0

    def last(
        self, limit: int, *, conversation: str | None = None, task: str | None = None
    ) -> list[Event]:
        where, params = _filters(conversation, task)
        rows = self.store.query(
            f"SELECT * FROM events WHERE 1{where} ORDER BY id DESC LIMIT ?", [*params, limit]
        )
        return [Event.from_row(r) for r in reversed(rows)]


def _filters(conversation: str | None, task: str | None) -> tuple[str, list[Any]]:
    """SQL conditions (each starting with AND) for the events of a conversation or a task."""
    sql, params = "", []
    if conversation is not None:
        sql += " AND conversation_id = ?"
        params.append(conversation)
    if task is not None:
        sql += " AND json_extract(data, '$.task') = ?"
        params.append(task)
    return sql, params
