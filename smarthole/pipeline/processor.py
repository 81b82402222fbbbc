"""One message through its turn: conversation, agent loop, reply, pending question.

The processor is plain Python: it gets its collaborators (store, ledger, outbox, agent,
titler) and never touches threads, signals or the SDK. It is safe to call again for a message
whose earlier attempt failed or was cut off: the store says where the turn stands.
"""

from __future__ import annotations

import hashlib
import logging
import random
import sqlite3
import threading
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..agent.history import HistoryCache
from ..agent.loop import TurnOutcome
from ..agent.prompts import system_prompt, turn_context
from ..conversations import Conversations
from ..db.events import about, place
from ..db.pending import PendingQuestion, PendingQuestions
from ..db.records import Conversation
from ..errors import (
    InternalError,
    LookupFailed,
    MessageError,
    TeamRequestError,
    TurnError,
    TurnInterrupted,
)
from ..formats import iso
from ..teams import HumanTurn, TeamRunner
from ..teams.control import fail_tasks
from .failures import Failure, backoff_delay, friendly_error
from .turn import TurnRun

if TYPE_CHECKING:
    from ..agent.loop import Agent
    from ..agent.titles import Titler
    from ..app import App
    from ..config import Config
    from ..db.events import EventLog
    from ..db.ledger import Ledger, LedgerEntry
    from ..db.records import StoredMessage
    from .inbox import Inbox
    from .outbox import Outbox

logger = logging.getLogger(__name__)


def final_reply_id(message_id: str, generation: int) -> str:
    """The id of a message's final outbox item: fixed, so writing it is idempotent."""
    return hashlib.sha256(f"final:{generation}:{message_id}".encode()).hexdigest()[:16]


@dataclass
class Processor:
    """Runs the turns of inbox messages; one call of :meth:`process` per attempt."""

    app: App
    agent: Agent
    ledger: Ledger
    outbox: Outbox
    events: EventLog
    inbox: Inbox
    teams: TeamRunner | None = None
    titler: Titler | None = None
    stop: threading.Event | None = None
    rng: random.Random | None = None

    def __post_init__(self) -> None:
        self.store = self.app.store
        self.pending = PendingQuestions(self.store)
        self.history = HistoryCache(self.store, turn_context)
        self.conversations = Conversations(self.store, self.events)

    @property
    def config(self) -> Config:
        return self.app.config  # read at each use: a reload applies to the turns after it

    # -- the attempt ------------------------------------------------------------------------

    def process(self, entry: LedgerEntry) -> str:
        """Run (or resume) the turn of ``entry``; returns done, deferred, dead or interrupted."""
        try:
            conversation, number, so_far = self._begin(entry)
        except MessageError as exc:
            self.inbox.set_aside(entry, str(exc))
            return "dead"
        run = self._turn_run(entry, conversation, number, so_far)
        try:
            outcome = self._run(entry, run)
        except TurnInterrupted:
            with self.store.transaction():
                self.store.update_turn(conversation.id, number, status="interrupted")
                self.ledger.set_status(entry.id, "queued")
                self._turn_event("turn_interrupted", entry, conversation, number)
            return "interrupted"
        except TurnError as exc:
            return self._failed(entry, conversation, number, exc)
        except Exception as exc:  # a bug or a broken plugin: log it, treat it as retryable
            logger.exception("turn of message %s failed unexpectedly", entry.id)
            error = InternalError(f"internal error: {type(exc).__name__}: {exc}")
            return self._failed(entry, conversation, number, error)
        self._complete(run, outcome, fresh=so_far is not None)
        return "done"

    def _run(self, entry: LedgerEntry, run: TurnRun) -> TurnOutcome:
        """The entry agent's turn, or the team task an inbox file asked for directly."""
        if entry.message.agents is None:
            tools = self.app.tools if self.teams is None else self.teams.entry_tools(self.app.tools)
            return self.agent.run(run, tools=tools)
        said = [m for m in run.turn_messages() if m.kind == "assistant"]
        if said:  # the team's result was stored before a crash
            return TurnOutcome(text=said[-1].text)
        if self.teams is None:
            raise TeamRequestError("agent teams are not available here")
        place = HumanTurn(run.conversation.id, run.conversation.channel, run.number, entry.id)
        text = self.teams.answer(entry.message, place)
        run.record_text(text)
        return TurnOutcome(text=text)

    def _begin(self, entry: LedgerEntry) -> tuple[Conversation, int, list[StoredMessage] | None]:
        """Find this message's turn (a retry or resume), or start it; a new turn comes with
        its stored messages (the user's), so they are not read again. A turn is recorded in
        its ledger entry when it starts: an entry with no conversation has none to look up."""
        turn = None if entry.conversation_id is None else self.store.turn_for_message(entry.id)
        if turn is not None:
            conversation = self.store.conversation(turn.conversation_id)
            assert conversation is not None
            if turn.status in ("interrupted", "failed"):
                self.events.emit(
                    "conversation_resumed",
                    **about(conversation),
                    turn=turn.number,
                    message_id=entry.id,
                    previous_status=turn.status,
                )
            self.store.update_turn(conversation.id, turn.number, status="running")
            self.ledger.set_status(entry.id, "in_progress")
            return conversation, turn.number, None
        message = entry.message
        # One transaction: a crash never leaves a conversation started (or ended) for a
        # message whose turn does not exist. Not waiting for the disk: the message was synced
        # in the ledger when claimed, and the turn's next commit (its reply, or an error)
        # syncs this one too. A power cut before that undoes it, and the turn starts again.
        with self.store.transaction(durable=False) as db:
            conversation = self._conversation_for(entry)
            number = self.store.start_turn(db, conversation.id, entry.id)
            stored = self.store.append_message(
                conversation.id,
                number,
                "user",
                [{"type": "text", "text": message.text}],
                db=db,
            )
            self.ledger.set_status(
                entry.id, "in_progress", conversation_id=conversation.id, turn=number, db=db
            )
            where = {**place(conversation.id, conversation.channel, number, entry.id), "db": db}
            self.events.emit("message_received", **where, source_name=message.source_name)
            self.events.emit("turn_started", **where)
            self.events.emit(
                "message_stored", **where, role="user", kind="user", stored_id=stored.id
            )
        # As the transaction left it: its turn counted, its time the user message's.
        updated = replace(conversation, turns=number, updated_at=stored.created_at)
        self.app.plugins.notify("message_stored", conversation=updated, message=stored)
        return conversation, number, [stored]

    def _conversation_for(self, entry: LedgerEntry) -> Conversation:
        message = entry.message
        if message.conversation:
            return self._targeted(message.conversation)
        active = self.store.active_conversation(entry.channel)
        if active is not None:
            reason = self._end_reason(active, new=message.new_conversation)
            if reason is None:
                return active
            self.conversations.end(active, reason)
        return self.conversations.start(entry.channel, entry.id)

    def _targeted(self, wanted: str) -> Conversation:
        try:
            conversation = self.conversations.get(wanted)
        except LookupFailed as exc:
            raise MessageError(str(exc)) from exc
        return self.conversations.reopen(conversation)

    def _end_reason(self, active: Conversation, *, new: bool) -> str | None:
        if new:
            return "new_conversation"
        idle = timedelta(minutes=self.config.conversation.idle_timeout_minutes)
        if self.app.now() - active.updated_at <= idle:
            return None
        if self.pending.get(active.id) is not None:
            return None  # it is waiting for this reply: the pending timeout governs instead
        return "idle_timeout"

    def _turn_run(
        self,
        entry: LedgerEntry,
        conversation: Conversation,
        number: int,
        so_far: list[StoredMessage] | None,
    ) -> TurnRun:
        if self.titler is not None:
            self.titler.sweep(channel=conversation.channel)
        recent = self.store.recent_conversations(
            channel=conversation.channel, ended_only=True, limit=2
        )
        extra = self.app.plugins.collect(
            "extend_system_prompt", conversation=conversation, message=entry.message
        )
        pending = self.pending.get(conversation.id)
        system = system_prompt(
            self.config.agent,
            conversation=conversation,
            recent=[c for c in recent if c.id != conversation.id],
            pending=pending,
            extra=extra,
        )
        return TurnRun(
            app=self.app,
            events=self.events,
            outbox=self.outbox,
            entry=entry,
            conversation=conversation,
            number=number,
            system_blocks=system,
            history_cache=self.history,
            stop=self.stop,
            answering=pending,
            stored_so_far=so_far,
        )

    # -- endings ----------------------------------------------------------------------------

    def _complete(self, run: TurnRun, outcome: TurnOutcome, *, fresh: bool) -> None:
        entry, conversation, number = run.entry, run.conversation, run.number
        turn_messages = run.stored()
        questions = [m for m in turn_messages if m.kind == "question"]
        if outcome.note and not any(m.kind == "note" for m in turn_messages):
            note = [{"type": "text", "text": outcome.note}]
            turn_messages.append(self.store.append_message(conversation.id, number, "note", note))
        # Timed by the turn's last stored message: the same file name on every attempt.
        reply = self.outbox.hand_over_final(
            **self._final_fields(entry, conversation, number, "response", outcome.text),
            at=turn_messages[-1].created_at,
            fresh=fresh,
            waiting_for_reply=bool(questions),
        )
        self.inbox.remove_claimed(entry)
        # An earlier attempt may have asked to end the conversation; a new turn knows.
        turn = None if fresh else self.store.turn(conversation.id, number)
        end_requested = run.end_requested or (turn.end_requested if turn else None)
        # One commit ends the turn: its reply delivered, the message done, its claim released.
        # It waits for the disk: undone by a power cut, it would be redone (and the reply
        # delivered again) however long after, since nothing may sync the log meanwhile.
        with self.store.transaction() as db:
            self.outbox.record_delivered(reply, db=db)
            self.store.complete_turn(db, conversation.id, number, note=outcome.note)
            self.ledger.set_status(entry.id, "done", claimed_path=None, db=db)
            if questions:
                tool_calls = sum(1 for m in turn_messages if m.kind == "tool_result")
                self.pending.save(
                    PendingQuestion(
                        conversation_id=conversation.id,
                        original_message_id=entry.id,
                        question=questions[-1].text,
                        tool_calls_completed=tool_calls,
                        created_at=self.app.now(),
                    )
                )
            elif run.answering is not None:  # none pending at the start: none to clear
                self.pending.clear(conversation.id)
            self._turn_event(
                "turn_completed",
                entry,
                conversation,
                number,
                db=db,
                waiting_for_reply=bool(questions),
                note=outcome.note,
            )
            if end_requested is not None:
                self.conversations.end(conversation, "end_conversation")
        if self.titler is not None:
            self.titler.title_due(conversation.id)
            self.titler.sweep(channel=conversation.channel)

    def _failed(
        self, entry: LedgerEntry, conversation: Conversation, number: int, error: TurnError
    ) -> str:
        with self.store.transaction():  # the attempt, its error and what comes next: one commit
            attempts = self.ledger.record_failure(entry.id, str(error))
            self.store.append_message(
                conversation.id,
                number,
                "error",
                [{"type": "text", "text": str(error)}],
            )
            outcome = self._after_failure(entry, conversation, number, Failure(error, attempts))
        self.app.plugins.notify("turn_failed", message=entry.message, error=error)
        if outcome == "dead":
            self._give_up(entry, conversation, number, Failure(error, attempts))
        return outcome

    def _after_failure(
        self, entry: LedgerEntry, conversation: Conversation, number: int, failure: Failure
    ) -> str:
        """Defer the message for a later attempt (inside the caller's transaction), or not."""
        error, attempts = failure
        retry = self.config.retry
        if error.retryable and attempts < retry.max_attempts:
            delay = backoff_delay(
                attempts,
                error.retry_after,
                base=retry.base_delay_seconds,
                cap=retry.max_delay_seconds,
                rng=self.rng,
            )
            due = self.app.now() + timedelta(seconds=delay)
            self.ledger.set_status(entry.id, "deferred", next_attempt_at=iso(due))
            self.store.update_turn(conversation.id, number, status="deferred", error=str(error))
            self._turn_event(
                "turn_deferred",
                entry,
                conversation,
                number,
                attempts=attempts,
                error=str(error),
                next_attempt_at=iso(due),
                delay_seconds=round(delay, 3),
            )
            logger.warning(
                "message %s deferred %.1fs after attempt %d: %s", entry.id, delay, attempts, error
            )
            return "deferred"
        return "dead"

    def _give_up(
        self, entry: LedgerEntry, conversation: Conversation, number: int, failure: Failure
    ) -> None:
        """A dead message: the error reply, then the turn, the ledger and the event in one commit.

        The reply is written first under a fixed id, so a crash in between writes it once.
        """
        error, attempts = failure
        text = friendly_error(error, entry.id)
        fields = self._final_fields(entry, conversation, number, "error", text)
        reply = self.outbox.hand_over(**fields)
        with self.store.transaction() as db:
            self.outbox.mark(reply.id, "delivered", db=db)
            self.store.update_turn(conversation.id, number, status="failed", error=str(error))
            fail_tasks(self.store, self.events, entry.id, str(error), db=db)
            self.inbox.set_aside(entry, str(error), attempts=attempts)
            self._turn_event(
                "turn_failed", entry, conversation, number, attempts=attempts, error=str(error)
            )
        logger.error("message %s is dead after %d attempt(s): %s", entry.id, attempts, error)

    def _turn_event(
        self,
        type: str,
        entry: LedgerEntry,
        conversation: Conversation,
        number: int,
        *,
        db: sqlite3.Connection | None = None,
        **data: Any,
    ) -> None:
        """Record an event of this message's turn (inside ``db``'s transaction when given)."""
        self.events.emit(
            type,
            **about(conversation),
            turn=number,
            message_id=entry.id,
            db=db,
            **data,
        )

    def _final_fields(
        self, entry: LedgerEntry, conversation: Conversation, number: int, kind: str, text: str
    ) -> dict[str, Any]:
        """The one final outbox item of this attempt's generation (written at most once); a
        later generation (the message was dead, and retried) names the error reply before."""
        earlier = final_reply_id(entry.id, entry.generation - 1) if entry.generation else None
        return {
            "item_id": final_reply_id(entry.id, entry.generation),
            "retry_of": earlier,
            "in_reply_to": entry.id,
            **about(conversation),
            "turn": number,
            "kind": kind,
            "text": text,
        }
