"""One agent turn of a task, as the agent loop sees it: the ``TurnSession`` over task tables.

It mirrors ``pipeline.turn.TurnRun`` for the human conversation: every model reply and tool
result is stored the moment it exists, and a tool's intent before it runs, so a crash resumes
the agent turn where it stopped. It stores into the task's own tables only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agent.messages import to_api_messages
from ..db.events import place
from ..db.usage import UsageLog
from ..errors import ToolError, TurnInterrupted
from ..tools import ToolContext
from .prompts import NO_HUMAN

if TYPE_CHECKING:
    from ..agent.client import ModelReply
    from ..app import App
    from ..db.outbox import OutboxItem
    from ..db.records import StoredMessage
    from ..db.tasks import Task, Tasks
    from ..tools import ToolResult

API_KINDS = ("user", "assistant", "tool_result")


class TaskAborted(Exception):
    """``smarthole tasks abort`` asked this task to stop."""


@dataclass(frozen=True)
class HumanTurn:
    """The human turn a task belongs to: every task event carries it."""

    conversation_id: str
    channel: str
    turn: int
    message_id: str

    @classmethod
    def of(cls, context: ToolContext) -> HumanTurn:
        return cls(context.conversation_id, context.channel, context.turn, context.message_id)

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
class AgentTurnSession:
    app: App
    tasks: Tasks
    task: Task
    index: int
    system_blocks: list[dict[str, Any]]
    place: HumanTurn
    stop: threading.Event | None = None

    def system(self) -> list[dict[str, Any]]:
        return self.system_blocks

    def history(self) -> list[dict[str, Any]]:
        return to_api_messages(self.turn_messages())

    def turn_messages(self) -> list[StoredMessage]:
        return [m for m in self.tasks.messages(self.task.id, self.index) if m.kind in API_KINDS]

    def started_tools(self) -> dict[str, int]:
        return self.tasks.started_tool_calls(self.task.id, self.index)

    def record_assistant(self, reply: ModelReply) -> None:
        # The reply and its usage row commit together: never one without the other.
        agent = self.task.agents[self.index % len(self.task.agents)]
        with self.app.store.transaction() as db:
            self.tasks.append_message(
                self.task.id, self.index, "assistant", "assistant", reply.content, db=db
            )
            UsageLog(self.app.store).record(
                reply.usage,
                purpose="agent_turn",
                model=reply.model,
                conversation_id=self.place.conversation_id,
                turn=self.place.turn,
                task_id=self.task.id,
                agent=agent,
                db=db,
            )

    def record_tool_start(self, block: dict[str, Any]) -> None:
        self.tasks.record_tool_start(block["id"], self.task.id, self.index, block["name"])

    def record_tool_result(self, block: dict[str, Any], result: ToolResult) -> None:
        content = [result.block(block["id"])]
        self.tasks.append_message(
            self.task.id, self.index, "user", "tool_result", content, tool_use_id=block["id"]
        )

    def tool_context(self, block: dict[str, Any]) -> ToolContext:
        return ToolContext(
            app=self.app,
            conversation_id=self.place.conversation_id,
            channel=self.place.channel,
            turn=self.place.turn,
            message_id=self.place.message_id,
            tool_use_id=block["id"],
            control=NoHumanControl(),
        )

    def check_stop(self) -> None:
        """Before each model call and tool: a daemon stop, or the user's abort."""
        if self.stop is not None and self.stop.is_set():
            raise TurnInterrupted()
        current = self.tasks.get(self.task.id)
        if current is not None and current.abort_requested:
            raise TaskAborted()

    def trim_history(self) -> bool:
        return False  # an agent turn carries no earlier history to trim
