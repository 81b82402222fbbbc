"""What the tool loop records of a turn, the same for a human turn and a team agent's turn.

The loop's ``TurnSession`` stores each step the moment it exists, so a crash resumes where it
stopped and never runs a finished tool again: a model reply with its usage row (one commit),
a tool's intent before it runs, a tool's result. A human turn keeps them in the conversation's
tables, a team agent's turn in its task's. :class:`TurnRecorder` decides what is recorded and
what commits together; a :class:`TurnTables` adapter says where; :class:`RecordedTurn` is the
part of the ``TurnSession`` both kinds of turn share (recording, the approval gate, the tools'
context), so the two cannot drift apart.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..tools import ToolContext, ToolResult

if TYPE_CHECKING:
    from ..app import App
    from ..db.connection import Database
    from ..db.records import StoredMessage
    from ..db.usage import UsageLog
    from ..tools import Tool, TurnControl
    from .approvals import ApprovalGate
    from .budget import CallMeter
    from .client import ModelReply
    from .cutting import StreamCut

API_KINDS = ("user", "assistant", "tool_result")
"""The stored kinds a turn's Messages API history is made of (the rest are transcript only)."""


@dataclass(frozen=True)
class Step:
    """One message of a turn to store: its kind and content, the tool call it answers, and
    what describes it to whoever follows the turn (a model reply's stop reason and usage)."""

    kind: str
    content: list[dict[str, Any]]
    tool_use_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CommittedResult(ToolResult):
    """A tool result made inside the transaction that records it: ``commit(db)`` does the
    tool's work and says its result, so the work and its result commit together (the memory
    tool's writes). ``text`` holds only what is added after it (an approval's note)."""

    commit: Callable[[sqlite3.Connection], ToolResult] | None = field(
        default=None, repr=False, compare=False
    )


class TurnTables(Protocol):
    """Where one kind of turn keeps what its tool loop records."""

    def append(self, step: Step, db: sqlite3.Connection) -> None:
        """Store one message of the turn in ``db``'s transaction."""

    def tool_started(self, block: dict[str, Any], db: sqlite3.Connection) -> None:
        """Store a tool call's intent, in ``db``'s transaction, before it runs."""

    def tool_finished(
        self, block: dict[str, Any], result: ToolResult, db: sqlite3.Connection
    ) -> None:
        """Say that a tool call finished, in the transaction that stores its result."""

    def started_tools(self) -> dict[str, int]:
        """The turn's started tool calls, with how many times each was run."""

    def tool_use_taken(self, tool_use_id: str) -> bool:
        """Whether an earlier call of this conversation (task) has a result under this id."""

    def usage_place(self) -> dict[str, Any]:
        """Why the model was called and for what (``UsageLog.record``'s fields)."""


@dataclass(eq=False)
class TurnRecorder:
    """Records the steps of one turn's tool loop through its tables."""

    store: Database
    tables: TurnTables
    usage: UsageLog
    meter: CallMeter | None = None  # settles each reply's reservation (``agent.budget``)

    def record_assistant(self, reply: ModelReply) -> None:
        # The reply and its usage row commit together: never one without the other.
        with self.store.transaction() as db:
            details = {"stop_reason": reply.stop_reason, "usage": reply.usage}
            content = self._own_tool_ids(reply.content)
            self.tables.append(Step("assistant", content, details=details), db)
            usage_id = self.usage.record(
                reply.usage, model=reply.model, db=db, **self.tables.usage_place()
            )
            if self.meter is not None:
                self.meter.settle(reply, usage_id, db)

    def _own_tool_ids(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``content`` with each tool-use id that an earlier call of the conversation (task)
        already holds made unique: the API does not repeat ids, but a proxy or another model
        may, and a call is known by its id from here on (its approval, intent and result).
        Stored so, the model reads the same id back with the call's result."""
        fresh = []
        for block in content:
            if block.get("type") == "tool_use" and self.tables.tool_use_taken(block["id"]):
                block = {**block, "id": f"{block['id']}_{secrets.token_hex(4)}"}
            fresh.append(block)
        return fresh

    def record_tool_start(self, block: dict[str, Any]) -> None:
        with self.store.transaction() as db:
            self.tables.tool_started(block, db)

    def record_tool_result(self, block: dict[str, Any], result: ToolResult) -> None:
        with self.store.transaction() as db:
            if isinstance(result, CommittedResult) and result.commit is not None:
                made = result.commit(db)
                result = replace(made, text=made.text + result.text) if result.text else made
            content = [result.block(block["id"])]
            self.tables.append(Step("tool_result", content, tool_use_id=block["id"]), db)
            self.tables.tool_finished(block, result, db)

    def record_text(self, text: str) -> None:
        """Store a reply that no model call wrote (a team task's result) as the agent's."""
        with self.store.transaction() as db:
            self.tables.append(Step("assistant", [{"type": "text", "text": text}]), db)

    def started_tools(self) -> dict[str, int]:
        return self.tables.started_tools()


class RecordedTurn:
    """What a human turn and a team agent's turn do alike as the loop's ``TurnSession``:
    record each step through ``recorder``, ask ``gate`` about each tool call, and give the
    tools their context at the gate's place. A subclass sets the attributes and says who the
    tools' ``control`` is."""

    app: App
    system_blocks: list[dict[str, Any]]
    recorder: TurnRecorder
    gate: ApprovalGate
    call_meter: CallMeter  # reserves each call's cost under the caps (``agent.budget``)

    def tool_control(self) -> TurnControl:
        raise NotImplementedError

    def meter(self) -> CallMeter:
        return self.call_meter

    def stream_cut(self) -> StreamCut | None:
        return None  # a team agent's turn is stopped through its task's abort instead

    def system(self) -> list[dict[str, Any]]:
        return self.system_blocks

    def started_tools(self) -> dict[str, int]:
        return self.recorder.started_tools()

    def record_assistant(self, reply: ModelReply) -> None:
        self.recorder.record_assistant(reply)

    def approval(self, block: dict[str, Any], tool: Tool) -> ToolResult | None:
        return self.gate.check(block, tool)

    def outcome_unknown(self, block: dict[str, Any], tool: Tool, runs: int) -> ToolResult | None:
        return self.gate.outcome_unknown(block, runs)

    def record_tool_start(self, block: dict[str, Any]) -> None:
        self.recorder.record_tool_start(block)

    def record_tool_result(self, block: dict[str, Any], result: ToolResult) -> None:
        self.recorder.record_tool_result(block, self.gate.annotate(block, result))

    def tool_context(self, block: dict[str, Any]) -> ToolContext:
        place = self.gate.place
        return ToolContext(
            app=self.app,
            conversation_id=place.conversation_id,
            channel=place.channel,
            turn=place.turn,
            message_id=place.message_id,
            tool_use_id=block["id"],
            control=self.tool_control(),
        )


def api_messages(stored: list[StoredMessage]) -> list[StoredMessage]:
    """The messages of a turn that its Messages API history is made of."""
    return [m for m in stored if m.kind in API_KINDS]
