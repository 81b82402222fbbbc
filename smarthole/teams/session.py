"""One agent turn of a task, as the agent loop sees it: the ``TurnSession`` over task tables.

It shares ``RecordedTurn`` with ``pipeline.turn.TurnRun`` for the human conversation, and
records through the same ``TurnRecorder``: every model reply and tool result is stored the
moment it exists, and a tool's intent before it runs, so a crash resumes the agent turn where
it stopped. It stores into the task's own tables only (:class:`TaskTables`), with no events.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agent.approvals import ApprovalGate, CallPlace
from ..agent.blocks import with_attachments
from ..agent.budget import CallMeter
from ..agent.messages import to_api_messages
from ..agent.recorder import RecordedTurn, Step, TurnRecorder, api_messages
from ..db.events import place
from ..db.records import ROLES
from ..db.spend import Spend, SpendPlace
from ..errors import ToolError, TurnInterrupted
from .prompts import NO_HUMAN

if TYPE_CHECKING:
    import sqlite3

    from ..app import App
    from ..db.events import EventLog
    from ..db.outbox import OutboxItem
    from ..db.records import StoredMessage
    from ..db.tasks import Task, Tasks
    from ..db.usage import UsageLog
    from ..tools import ToolResult


class TaskAborted(Exception):
    """``smarthole tasks abort`` asked this task to stop."""


@dataclass(frozen=True)
class HumanTurn:
    """The human turn a task belongs to: every task event carries it."""

    conversation_id: str
    channel: str
    turn: int
    message_id: str
    schedule: str | None = None  # the schedule this turn is a run of, if it is one

    @property
    def where(self) -> dict[str, Any]:
        return place(self.conversation_id, self.channel, self.turn, self.message_id)


class NoHumanControl:
    """Team agents have no line to the person: the human-facing tools refuse."""

    def send_message(self, text: str, *, is_question: bool, tool_use_id: str) -> OutboxItem:
        raise ToolError(NO_HUMAN)

    def end_conversation(self, reason: str | None) -> None:
        raise ToolError(NO_HUMAN)


@dataclass
class AgentTurnSession(RecordedTurn):
    app: App
    tasks: Tasks
    usage: UsageLog
    task: Task
    index: int
    system_blocks: list[dict[str, Any]]
    place: HumanTurn
    stop: threading.Event | None = None
    events: EventLog | None = None
    approve: tuple[str, ...] = ()  # the agent's own ``approve`` patterns

    def __post_init__(self) -> None:
        task, place = self.task, self.place
        self.gate = ApprovalGate(
            self.app,
            self.events,
            CallPlace(
                scope=task.id,
                conversation_id=place.conversation_id,
                channel=place.channel,
                turn=place.turn,
                message_id=place.message_id,
                agent=task.agents[self.index % len(task.agents)],
                task_id=task.id,
                patterns=self.approve,
            ),
        )
        spend = Spend(self.app.store)
        self.call_meter = CallMeter(
            self.app,
            spend,
            SpendPlace(
                purpose="agent_turn",
                conversation_id=place.conversation_id,
                channel=place.channel,
                turn=place.turn,
                message_id=place.message_id,
                task_id=task.id,
                agent=task.agents[self.index % len(task.agents)],
                schedule=place.schedule or spend.schedule_of(place.message_id),
            ),
            gate=self.gate,
            shape=lambda: self.index,  # an agent turn's request only grows
        )
        self.recorder = TurnRecorder(self.app.store, TaskTables(self), self.usage, self.call_meter)

    def tool_control(self) -> NoHumanControl:
        return NoHumanControl()

    def history(self) -> list[dict[str, Any]]:
        return to_api_messages(with_attachments(self.turn_messages(), self.app.home.blobs))

    def turn_messages(self) -> list[StoredMessage]:
        return api_messages(self.tasks.messages(self.task.id, self.index))

    def check_stop(self) -> None:
        """Before each model call and tool: a daemon stop, or the user's abort."""
        if self.stop is not None and self.stop.is_set():
            raise TurnInterrupted()
        current = self.tasks.get(self.task.id)
        if current is not None and current.abort_requested:
            raise TaskAborted()

    def steer(self) -> None:
        """A team agent is never steered: the person's messages reach the entry agent only."""

    def trim_history(self) -> bool:
        return False  # an agent turn carries no earlier history to trim


@dataclass(eq=False)
class TaskTables:
    """Where a team agent's turn records its tool loop: its task's message and tool call
    tables, with no event (the task's own events say where it stands)."""

    session: AgentTurnSession

    def append(self, step: Step, db: sqlite3.Connection) -> None:
        task, index, kind = self.session.task, self.session.index, step.kind
        self.session.tasks.append_message(
            task.id, index, ROLES[kind], kind, step.content, tool_use_id=step.tool_use_id, db=db
        )

    def tool_started(self, block: dict[str, Any], db: sqlite3.Connection) -> None:
        session = self.session
        session.tasks.record_tool_start(block["id"], session.task.id, session.index, block["name"])

    def tool_finished(
        self, block: dict[str, Any], result: ToolResult, db: sqlite3.Connection
    ) -> None:
        pass  # stored with its result; no event

    def started_tools(self) -> dict[str, int]:
        return self.session.tasks.started_tool_calls(self.session.task.id, self.session.index)

    def tool_use_taken(self, tool_use_id: str) -> bool:
        return self.session.tasks.has_tool_result(self.session.task.id, tool_use_id)

    def usage_place(self) -> dict[str, Any]:
        session = self.session
        return {
            "purpose": "agent_turn",
            "conversation_id": session.place.conversation_id,
            "turn": session.place.turn,
            "task_id": session.task.id,
            "agent": session.task.agents[session.index % len(session.task.agents)],
        }
