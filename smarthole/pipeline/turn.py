"""The store's view of one running turn, as the agent loop and the tools see it.

``TurnRun`` implements the agent's ``TurnSession`` (history, what is stored, recording each
message the moment it exists) and the tools' ``TurnControl`` (``send_message``,
``end_conversation``). Every record is its own committed transaction, followed by its event and
``message_stored`` hook.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..db.events import place
from ..db.usage import UsageLog
from ..errors import TurnInterrupted
from ..tools import ToolContext

if TYPE_CHECKING:
    from ..agent.client import ModelReply
    from ..agent.history import HistoryCache, Window
    from ..agent.messages import History
    from ..app import App
    from ..db.events import EventLog
    from ..db.ledger import LedgerEntry
    from ..db.outbox import OutboxItem
    from ..db.pending import PendingQuestion
    from ..db.records import Conversation, StoredMessage
    from ..tools import ToolResult
    from .outbox import Outbox

API_KINDS = ("user", "assistant", "tool_result")


def derived_id(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()[:16]


@dataclass
class TurnRun:
    """One attempt at one turn of a conversation, as the agent loop and the tools see it."""

    app: App
    events: EventLog
    outbox: Outbox
    entry: LedgerEntry
    conversation: Conversation
    number: int
    system_blocks: list[dict[str, Any]]
    history_cache: HistoryCache
    stop: threading.Event | None = None
    # The pending question this turn answers: the one saved when the turn started, if any.
    answering: PendingQuestion | None = None
    # The turn's stored messages: given by a caller that knows them (a turn it has just
    # started), else read at first use; then extended by what this attempt stores (nothing
    # else writes to a turn while its attempt runs).
    stored_so_far: list[StoredMessage] | None = field(default=None, repr=False)
    budget_chars: int = field(init=False)
    trimmed: bool = field(default=False, init=False)
    # Why the agent asked to end the conversation after this turn, if it did in this attempt.
    end_requested: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.store = self.app.store
        self.budget_chars = self.app.config.conversation.history_budget_tokens * 4

    @property
    def _where(self) -> dict[str, Any]:
        return place(self.conversation.id, self.conversation.channel, self.number, self.entry.id)

    # -- TurnSession ------------------------------------------------------------------------

    def system(self) -> list[dict[str, Any]]:
        return self.system_blocks

    def history(self) -> History:
        return self._window().history

    def _window(self) -> Window:
        return self.history_cache.window(
            self.conversation.id, current_turn=self.number, budget_chars=self.budget_chars
        )

    def turn_messages(self) -> list[StoredMessage]:
        return [m for m in self.stored() if m.kind in API_KINDS]

    def stored(self) -> list[StoredMessage]:
        """Every stored message of this turn, of every kind, oldest first."""
        if self.stored_so_far is None:
            self.stored_so_far = self.store.messages(self.conversation.id, turn=self.number)
        return list(self.stored_so_far)

    def _remember(self, stored: StoredMessage) -> None:
        """Add a message this attempt stored, once its transaction has committed."""
        kept = self.stored_so_far
        if kept is not None:
            self.store.after_commit(lambda: kept.append(stored))

    def started_tools(self) -> dict[str, int]:
        return self.store.started_tool_calls(self.conversation.id, self.number)

    def record_assistant(self, reply: ModelReply) -> None:
        # The reply and its usage row commit together: never one without the other.
        with self.store.transaction() as db:
            self._append(
                "assistant",
                reply.content,
                db=db,
                stop_reason=reply.stop_reason,
                usage=reply.usage,
            )
            UsageLog(self.store).record(
                reply.usage,
                purpose="turn",
                model=reply.model,
                conversation_id=self.conversation.id,
                turn=self.number,
                db=db,
            )

    def record_tool_start(self, block: dict[str, Any]) -> None:
        self.store.record_tool_start(block["id"], self.conversation.id, self.number, block["name"])
        self.events.emit("tool_called", **self._where, tool=block["name"], tool_use_id=block["id"])

    def record_tool_result(self, block: dict[str, Any], result: ToolResult) -> None:
        content = [result.block(block["id"])]
        with self.store.transaction() as db:
            self._append("tool_result", content, tool_use_id=block["id"], db=db)
            self.events.emit(
                "tool_finished",
                **self._where,
                db=db,
                tool=block["name"],
                tool_use_id=block["id"],
                is_error=result.is_error,
            )

    def tool_context(self, block: dict[str, Any]) -> ToolContext:
        return ToolContext(
            app=self.app,
            conversation_id=self.conversation.id,
            channel=self.conversation.channel,
            turn=self.number,
            message_id=self.entry.id,
            tool_use_id=block["id"],
            control=self,
        )

    def check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise TurnInterrupted()

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
        self._append("assistant", [{"type": "text", "text": text}])

    # -- TurnControl ------------------------------------------------------------------------

    def send_message(self, text: str, *, is_question: bool, tool_use_id: str) -> OutboxItem:
        kind = "question" if is_question else "message"
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
        already = self.store.query_one(
            "SELECT 1 FROM messages WHERE tool_use_id = ? AND kind = ?",
            (tool_use_id, transcript_kind),
        )
        if already is None:
            with self.store.transaction() as db:
                stored = self.store.append_message(
                    self.conversation.id,
                    self.number,
                    transcript_kind,
                    [{"type": "text", "text": text}],
                    tool_use_id=tool_use_id,
                    db=db,
                )
                self._remember(stored)
                if is_question:
                    self.events.emit(
                        "question_asked", **self._where, db=db, question=text, outbox_id=item.id
                    )
        return item

    def end_conversation(self, reason: str | None) -> None:
        self.end_requested = reason or "requested by the agent"
        self.store.update_turn(self.conversation.id, self.number, end_requested=self.end_requested)

    # -- helpers ----------------------------------------------------------------------------

    def _append(
        self,
        kind: str,
        content: list[dict[str, Any]],
        *,
        tool_use_id: str | None = None,
        db: Any = None,
        **event_fields: Any,
    ) -> None:
        with self.store.transaction() as connection:
            stored = self.store.append_message(
                self.conversation.id,
                self.number,
                kind,
                content,
                tool_use_id=tool_use_id,
                db=db or connection,
            )
            self.events.emit(
                "message_stored",
                **self._where,
                db=db or connection,
                role=stored.role,
                kind=kind,
                stored_id=stored.id,
                **event_fields,
            )
            self._remember(stored)
            plugins, conversation = self.app.plugins, self.conversation
            self.store.after_commit(
                lambda: plugins.notify("message_stored", conversation=conversation, message=stored)
            )
