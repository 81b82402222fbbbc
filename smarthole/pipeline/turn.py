"""The store's view of one running turn, as the agent loop and the tools see it.

``TurnRun`` implements the agent's ``TurnSession`` (history, what is stored, recording each
message the moment it exists) and the tools' ``TurnControl`` (``send_message``,
``end_conversation``). What it shares with a team agent's turn comes from ``RecordedTurn``: it
records through the same ``TurnRecorder``, into the conversation's tables
(:class:`ConversationTables`). Every record is its own committed
transaction, with its event, and followed by its ``message_stored`` hook.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agent.approvals import ApprovalGate, CallPlace
from ..agent.budget import CallMeter
from ..agent.recorder import RecordedTurn, Step, TurnRecorder, api_messages
from ..db.events import place
from ..db.spend import Spend, SpendPlace
from ..db.states import OutboxKind
from ..errors import TurnHalted, TurnInterrupted

if TYPE_CHECKING:
    import sqlite3

    from ..agent.cutting import StreamCut
    from ..agent.history import HistoryCache, Window
    from ..agent.messages import History
    from ..agent.standin import ReplayTools
    from ..app import App
    from ..db.events import EventLog
    from ..db.ledger import LedgerEntry
    from ..db.outbox import OutboxItem
    from ..db.pending import PendingQuestion
    from ..db.records import Conversation, StoredMessage
    from ..db.usage import UsageLog
    from ..tools import Tool, ToolResult
    from .busy import Arrivals
    from .outbox import Outbox


def schedule_of(entry: LedgerEntry) -> str | None:
    """The schedule a message is a run of, if it is one."""
    metadata = entry.message.metadata
    return str(metadata["schedule"]) if "schedule_id" in metadata else None


def derived_id(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()[:16]


@dataclass
class TurnRun(RecordedTurn):
    """One attempt at one turn of a conversation, as the agent loop and the tools see it."""

    app: App
    events: EventLog
    outbox: Outbox
    entry: LedgerEntry
    conversation: Conversation
    number: int
    system_blocks: list[dict[str, Any]]
    history_cache: HistoryCache
    usage: UsageLog
    stop: threading.Event | None = None
    # The pending question this turn answers: the one saved when the turn started, if any.
    answering: PendingQuestion | None = None
    # The turn's stored messages: given by a caller that knows them (a turn it has just
    # started), else read at first use; then extended by what this attempt stores (nothing
    # else writes to a turn while its attempt runs).
    stored_so_far: list[StoredMessage] | None = field(default=None, repr=False)
    # The channel's busy policy at work: a halt asked for this turn, messages that steer it.
    arrivals: Arrivals | None = None
    budget_chars: int = field(init=False)
    trimmed: bool = field(default=False, init=False)
    # Why the agent asked to end the conversation after this turn, if it did in this attempt.
    end_requested: str | None = field(default=None, init=False)
    # A replay's turn: recorded tool results stand in for its calls (``agent.standin``).
    replay: ReplayTools | None = None

    def __post_init__(self) -> None:
        self.store = self.app.store
        self.budget_chars = self.app.config.conversation.history_budget_tokens * 4
        conversation = self.conversation
        self.gate = ApprovalGate(
            self.app,
            self.events,
            CallPlace(
                scope=conversation.id,
                conversation_id=conversation.id,
                channel=conversation.channel,
                turn=self.number,
                message_id=self.entry.id,
                agent=self.app.config.agent.name,
            ),
        )
        self._earlier = 0  # the earlier history's size in the last call's window
        self.call_meter = CallMeter(
            self.app,
            Spend(self.store),
            SpendPlace(
                purpose="turn",
                conversation_id=conversation.id,
                channel=conversation.channel,
                turn=self.number,
                message_id=self.entry.id,
                schedule=schedule_of(self.entry),
            ),
            gate=self.gate,
            shape=lambda: (self.trimmed, self._earlier),
        )
        self.recorder = TurnRecorder(
            self.store, ConversationTables(self), self.usage, self.call_meter
        )

    @property
    def where(self) -> dict[str, Any]:
        """The fields of an event about this turn."""
        return place(self.conversation.id, self.conversation.channel, self.number, self.entry.id)

    # -- TurnSession (with RecordedTurn's) ----------------------------------------------------

    def tool_control(self) -> TurnRun:
        return self

    def history(self) -> History:
        window = self._window()
        self._earlier = window.earlier_chars
        return window.history

    def _window(self) -> Window:
        return self.history_cache.window(
            self.conversation.id, current_turn=self.number, budget_chars=self.budget_chars
        )

    def turn_messages(self) -> list[StoredMessage]:
        return api_messages(self.stored())

    def stored(self) -> list[StoredMessage]:
        """Every stored message of this turn, of every kind, oldest first."""
        if self.stored_so_far is None:
            self.stored_so_far = self.store.messages(self.conversation.id, turn=self.number)
        return list(self.stored_so_far)

    def remember(self, stored: StoredMessage) -> None:
        """Add a message this attempt stored, once its transaction has committed."""
        kept = self.stored_so_far
        if kept is not None:
            self.store.after_commit(lambda: kept.append(stored))

    def approval(self, block: dict[str, Any], tool: Tool) -> ToolResult | None:
        if self.replay is not None:  # a replay: the original's recorded results stand in
            return self.replay.check(block, tool, self.turn_messages(), self.gate)
        return self.gate.check(block, tool)

    def check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise TurnInterrupted()
        halt = None if self.arrivals is None else self.arrivals.halted(self.entry.id)
        if halt is not None:
            raise TurnHalted(halt)

    def stream_cut(self) -> StreamCut | None:
        return None if self.arrivals is None else self.arrivals.stream_cut(self.entry.id)

    def steer(self) -> None:
        """At a tool-call boundary: messages that came meanwhile join (``steer``)."""
        if self.arrivals is not None:
            self.arrivals.steer(self)

    def trim_history(self) -> bool:
        """Halve the earlier history sent to the model; False if there is none to trim."""
        window = self._window()
        if self.trimmed or window.earlier_chars == 0:
            return False
        self.trimmed = True
        self.budget_chars = window.current_chars + window.earlier_chars // 2
        return True

    def record_text(self, text: str) -> None:
        """Store a reply that no model call wrote (a team task's result) as the agent's."""
        self.recorder.record_text(text)

    # -- TurnControl ------------------------------------------------------------------------

    def send_message(self, text: str, *, is_question: bool, tool_use_id: str) -> OutboxItem:
        kind = OutboxKind.QUESTION if is_question else OutboxKind.MESSAGE
        item = self.outbox.send(
            item_id=derived_id("send", tool_use_id),
            in_reply_to=self.entry.id,
            conversation=self.conversation.id,
            channel=self.conversation.channel,
            turn=self.number,
            kind=kind,
            text=text,
            waiting_for_reply=is_question,
        )
        transcript_kind = "question" if is_question else "agent_message"
        if not self.store.has_tool_message(self.conversation.id, tool_use_id, transcript_kind):
            with self.store.transaction() as db:
                stored = self.store.append_message(
                    self.conversation.id,
                    self.number,
                    transcript_kind,
                    [{"type": "text", "text": text}],
                    tool_use_id=tool_use_id,
                    db=db,
                )
                self.remember(stored)
                if is_question:
                    self.events.emit(
                        "question_asked", **self.where, db=db, question=text, outbox_id=item.id
                    )
        return item

    def end_conversation(self, reason: str | None) -> None:
        self.end_requested = reason or "requested by the agent"
        self.store.update_turn(self.conversation.id, self.number, end_requested=self.end_requested)


@dataclass(eq=False)
class ConversationTables:
    """Where a human turn records its tool loop: the conversation's messages and tool calls,
    each with its event, and each message with its ``message_stored`` hook after the commit."""

    run: TurnRun

    def append(self, step: Step, db: sqlite3.Connection) -> None:
        run, kind = self.run, step.kind
        stored = run.store.append_message(
            run.conversation.id, run.number, kind, step.content, tool_use_id=step.tool_use_id, db=db
        )
        run.events.emit(
            "message_stored",
            **run.where,
            db=db,
            role=stored.role,
            kind=kind,
            stored_id=stored.id,
            **step.details,
        )
        run.remember(stored)
        plugins, conversation = run.app.plugins, run.conversation
        run.store.after_commit(
            lambda: plugins.notify("message_stored", conversation=conversation, message=stored)
        )

    def tool_started(self, block: dict[str, Any], db: sqlite3.Connection) -> None:
        run = self.run
        run.store.record_tool_start(block["id"], run.conversation.id, run.number, block["name"])
        run.events.emit(
            "tool_called", **run.where, db=db, tool=block["name"], tool_use_id=block["id"]
        )

    def tool_finished(
        self, block: dict[str, Any], result: ToolResult, db: sqlite3.Connection
    ) -> None:
        self.run.events.emit(
            "tool_finished",
            **self.run.where,
            db=db,
            tool=block["name"],
            tool_use_id=block["id"],
            is_error=result.is_error,
        )

    def started_tools(self) -> dict[str, int]:
        return self.run.store.started_tool_calls(self.run.conversation.id, self.run.number)

    def tool_use_taken(self, tool_use_id: str) -> bool:
        return self.run.store.has_tool_message(self.run.conversation.id, tool_use_id, "tool_result")

    def usage_place(self) -> dict[str, Any]:
        return {
            "purpose": "turn",
            "conversation_id": self.run.conversation.id,
            "turn": self.run.number,
        }
