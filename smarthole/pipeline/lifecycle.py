"""The life of a message's turn: one function per transition, each one commit.

The processor decides which transition applies; these make it. A transition changes every row
it touches (the ledger entry, the turn, the pending question, the outbox record, the tasks,
the event) in one transaction, or none of them. What is not a row never happens under the
store's lock: the claimed file's move to ``failed/`` and the notification hooks run after the
commit (``after_commit``), so only for a change that was kept. A final reply is the exception,
by design: it is written and handed to ``deliver`` before the commit that records it
delivered, since that commit says it exists; its id and time are fixed, so after a crash in
between the next attempt finds the same file. (The answered message's claimed file goes before
that commit too, without an fsync: one a power cut brings back is a duplicate that recovery
removes.) The states are the enums of ``db.states``; the transitions::

    begin      queued | deferred                        -> in_progress, turn started or running
    complete   in_progress                              -> done, turn completed
    defer      in_progress (a failed attempt)           -> deferred, turn deferred, its tasks
                                                           interrupted
    interrupt  in_progress (a stop)                     -> queued, turn interrupted, its tasks too
    await      in_progress (a call waits for approval)  -> deferred until the approval expires,
                                                           turn deferred, its tasks interrupted
    answer     (``pipeline.answers``) an approval decided, its deferred message due now
    give up    in_progress (the last failed attempt)    -> dead, turn failed, its tasks failed
    reject     a message that cannot start             -> dead
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..db.approvals import Approvals
from ..db.events import about, place
from ..db.pending import PendingQuestion
from ..db.spend import Spend
from ..db.states import MessageStatus, OutboxKind, OutboxState, Outcome, TurnStatus
from ..formats import iso
from ..teams.control import fail_tasks
from .answers import approval_item
from .busy import collected_content
from .failed import aside_note
from .failures import Failure, friendly_error
from .replaying import is_replay

if TYPE_CHECKING:
    from ..agent.loop import TurnOutcome
    from ..app import App
    from ..conversations import Conversations
    from ..db.events import EventLog
    from ..db.ledger import Ledger, LedgerEntry
    from ..db.pending import PendingQuestions
    from ..db.records import Conversation, Message, StoredMessage
    from ..db.tasks import Tasks
    from ..errors import ApprovalWaiting, TurnError
    from .busy import Arrivals
    from .inbox import Inbox
    from .outbox import Outbox
    from .turn import TurnRun

logger = logging.getLogger(__name__)


def final_reply_id(message_id: str, generation: int) -> str:
    """The id of a message's final outbox item: fixed, so writing it is idempotent."""
    return hashlib.sha256(f"final:{generation}:{message_id}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Attempt:
    """One attempt at a message's turn: the message, and the turn it runs."""

    entry: LedgerEntry
    conversation: Conversation
    number: int

    @property
    def where(self) -> dict[str, Any]:
        """The fields of an event about this turn."""
        return {**about(self.conversation), "turn": self.number, "message_id": self.entry.id}


@dataclass(frozen=True)
class Begun:
    """A turn begun (or resumed): its attempt, and the stored messages of a new turn (the
    user's), so they are not read back; None for a turn an earlier attempt began."""

    attempt: Attempt
    stored: list[StoredMessage] | None


@dataclass(eq=False)
class Lifecycle:
    """The transitions of the turns of one home's messages."""

    app: App
    ledger: Ledger
    outbox: Outbox
    events: EventLog
    inbox: Inbox
    conversations: Conversations
    pending: PendingQuestions
    tasks: Tasks
    arrivals: Arrivals | None = None  # a busy channel's policy (``collect`` joins at begin)

    def __post_init__(self) -> None:
        self.store = self.app.store

    # -- begin ------------------------------------------------------------------------------

    def begin(
        self, entry: LedgerEntry, conversation_for: Callable[[LedgerEntry], Conversation]
    ) -> Begun:
        """Find this message's turn (a retry or resume) and run it again, or start it in the
        conversation ``conversation_for`` chooses (it may start, end or reopen one, in the
        same commit). A turn is recorded in its ledger entry when it starts: an entry with no
        conversation has none to look up. ``MessageError`` if the message cannot start."""
        turn = None if entry.conversation_id is None else self.store.turn_for_message(entry.id)
        if turn is not None:
            conversation = self.store.conversation(turn.conversation_id)
            assert conversation is not None
            attempt = Attempt(entry, conversation, turn.number)
            with self.store.transaction() as db:
                if turn.status in (TurnStatus.INTERRUPTED, TurnStatus.FAILED):
                    self._event("conversation_resumed", attempt, db, previous_status=turn.status)
                self.store.update_turn(
                    conversation.id, turn.number, status=TurnStatus.RUNNING, db=db
                )
                self.ledger.set_status(entry.id, MessageStatus.IN_PROGRESS, db=db)
            return Begun(attempt, None)
        message = entry.message
        # One transaction: a crash never leaves a conversation started (or ended) for a
        # message whose turn does not exist. Not waiting for the disk: the message was synced
        # in the ledger when claimed, and the turn's next commit (its reply, or an error)
        # syncs this one too. A power cut before that undoes it, and the turn starts again.
        with self.store.transaction(durable=False) as db:
            conversation = conversation_for(entry)
            number = self.store.start_turn(db, conversation.id, entry.id)
            content = message.user_content()
            collecting = [] if self.arrivals is None else self.arrivals.collecting(entry)
            if collecting:
                joined = self.arrivals.join(  # type: ignore[union-attr]
                    collecting,
                    conversation,
                    number,
                    how="message_collected",
                    answered_by=entry.id,
                    db=db,
                )
                content = collected_content([entry, *joined]) if joined else content
            stored = self.store.append_message(conversation.id, number, "user", content, db=db)
            self.ledger.set_status(
                entry.id,
                MessageStatus.IN_PROGRESS,
                conversation_id=conversation.id,
                turn=number,
                db=db,
            )
            where = {**place(conversation.id, conversation.channel, number, entry.id), "db": db}
            self.events.emit("message_received", **where, source_name=message.source_name)
            self.events.emit("turn_started", **where)
            self.events.emit(
                "message_stored", **where, role="user", kind="user", stored_id=stored.id
            )
            # As the transaction leaves it: its turn counted, its time the user message's.
            updated = replace(conversation, turns=number, updated_at=stored.created_at)
            self._after_commit("message_stored", conversation=updated, message=stored)
        return Begun(Attempt(entry, conversation, number), [stored])

    def reject(self, entry: LedgerEntry, reason: str) -> Outcome:
        """A message that cannot start (its conversation is gone): dead, its file set aside."""
        with self.store.transaction() as db:
            self.ledger.set_status(entry.id, MessageStatus.DEAD, last_error=reason, db=db)
            self.store.after_commit(lambda: self.inbox.move_aside(entry, reason))
        return Outcome.DEAD

    # -- complete ---------------------------------------------------------------------------

    def complete(self, run: TurnRun, outcome: TurnOutcome, *, fresh: bool) -> Outcome:
        """The turn answered: its reply delivered, the message done, its claim released.

        ``fresh``: this attempt began the turn, so no earlier attempt left anything to find.
        """
        attempt = Attempt(run.entry, run.conversation, run.number)
        entry, conversation, number = run.entry, run.conversation, run.number
        turn_messages = run.stored()
        questions = [m for m in turn_messages if m.kind == "question"]
        if outcome.note and not any(m.kind == "note" for m in turn_messages):
            note = [{"type": "text", "text": outcome.note}]
            turn_messages.append(self.store.append_message(conversation.id, number, "note", note))
        # The messages this turn answers besides its own (``collect``, ``steer``), listed.
        joined = self.ledger.joined(conversation.id, number)
        extra = _joined(entry.message, number) or {}
        if joined:
            extra["answers"] = [entry.id, *(j.id for j in joined)]
        # Timed by the turn's last stored message: the same file name on every attempt. A
        # replay's reply is never delivered: it is only stored.
        reply = None
        if not is_replay(entry.message):
            reply = self.outbox.hand_over_final(
                **self._final_fields(attempt, OutboxKind.RESPONSE, outcome.text),
                at=turn_messages[-1].created_at,
                fresh=fresh,
                waiting_for_reply=bool(questions),
                deliver=entry.message.metadata.get("schedule_deliver") is not False,
                extra=extra or None,
            )
        for answered in (entry, *joined):
            self.inbox.remove_claimed(answered)
        # An earlier attempt may have asked to end the conversation; a new turn knows.
        turn = None if fresh else self.store.turn(conversation.id, number)
        end_requested = run.end_requested or (turn.end_requested if turn else None)
        # One commit ends the turn: its reply delivered, the message done, its claim released.
        # It waits for the disk: undone by a power cut, it would be redone (and the reply
        # delivered again) however long after, since nothing may sync the log meanwhile.
        with self.store.transaction() as db:
            if reply is not None:
                self.outbox.record_delivered(reply, db=db)
            self.store.complete_turn(db, conversation.id, number, note=outcome.note)
            self.ledger.set_status(entry.id, MessageStatus.DONE, claimed_path=None, db=db)
            self.ledger.end_joined(conversation.id, number, MessageStatus.DONE, db=db)
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
            cost = Spend(self.store).turn_cost(conversation.id, number, db=db)
            self._event(
                "turn_completed",
                attempt,
                db,
                waiting_for_reply=bool(questions),
                note=outcome.note,
                cost_micros=cost,  # what the turn's model responses cost; None: price unknown
            )
            if end_requested is not None:
                self.conversations.end(conversation, "end_conversation")
        return Outcome.DONE

    # -- a call waits for a person ----------------------------------------------------------

    def await_approval(self, attempt: Attempt, waiting: ApprovalWaiting) -> Outcome:
        """A tool call waits for approval: its item is written and delivered (under a fixed
        id, so once), then the message waits, without a worker, until the answer makes it due
        or the approval expires; an answer that came meanwhile makes it due now."""
        approvals = Approvals(self.store)
        approval = approvals.get(waiting.approval_id)
        assert approval is not None, waiting.approval_id
        self.outbox.send(**approval_item(approval))
        with self.store.transaction() as db:
            current = approvals.get(approval.id, db=db)
            due = self.app.now() if current is None or not current.waiting else approval.expires_at
            self.ledger.set_status(
                attempt.entry.id, MessageStatus.DEFERRED, next_attempt_at=iso(due), db=db
            )
            self._set_turn(attempt, TurnStatus.DEFERRED, db)
            self.tasks.interrupt_for_message(attempt.entry.id, db=db)
        logger.info("message %s waits for approval %s", attempt.entry.id, approval.id)
        return Outcome.DEFERRED

    # -- a failed attempt -------------------------------------------------------------------

    def interrupt(self, attempt: Attempt) -> Outcome:
        """A stop cut the attempt off: the message waits in the queue, the turn resumes."""
        with self.store.transaction() as db:
            self._set_turn(attempt, TurnStatus.INTERRUPTED, db)
            self.tasks.interrupt_for_message(attempt.entry.id, db=db)
            self.ledger.set_status(attempt.entry.id, MessageStatus.QUEUED, db=db)
            self._event("turn_interrupted", attempt, db)
        return Outcome.INTERRUPTED

    def fail(
        self,
        attempt: Attempt,
        error: TurnError,
        delay_for: Callable[[int], float | None],
    ) -> Outcome:
        """Count a failed attempt, with its error in the transcript; then defer the message by
        ``delay_for(attempts)`` seconds (the processor's retry policy) or, if None, give up."""
        entry = attempt.entry
        with self.store.transaction() as db:  # the attempt, its error and what comes next
            attempts = self.ledger.record_failure(entry.id, str(error))
            self.store.append_message(
                attempt.conversation.id,
                attempt.number,
                "error",
                [{"type": "text", "text": str(error)}],
                db=db,
            )
            delay = delay_for(attempts)
            if delay is not None:
                self._defer(attempt, Failure(error, attempts), delay, db)
            self._after_commit("turn_failed", message=entry.message, error=error)
        if delay is not None:
            return Outcome.DEFERRED
        return self.give_up(attempt, Failure(error, attempts))

    def _defer(self, attempt: Attempt, failure: Failure, delay: float, db: Any) -> None:
        """Inside ``fail``'s transaction: the message waits ``delay`` seconds to try again."""
        error, attempts = failure
        due = iso(self.app.now() + timedelta(seconds=delay))
        self.ledger.set_status(attempt.entry.id, MessageStatus.DEFERRED, next_attempt_at=due, db=db)
        self._set_turn(attempt, TurnStatus.DEFERRED, db, error=str(error))
        self.tasks.interrupt_for_message(attempt.entry.id, db=db)
        self._event(
            "turn_deferred",
            attempt,
            db,
            attempts=attempts,
            error=str(error),
            next_attempt_at=due,
            delay_seconds=round(delay, 3),
        )
        logger.warning(
            "message %s deferred %.1fs after attempt %d: %s",
            attempt.entry.id,
            delay,
            attempts,
            error,
        )

    def give_up(self, attempt: Attempt, failure: Failure) -> Outcome:
        """A dead message: the error reply, then the turn, its tasks, the ledger and the event
        in one commit; its file goes to failed/ after it.

        The reply is written first under a fixed id, so a crash in between writes it once.
        """
        error, attempts = failure
        entry = attempt.entry
        text = friendly_error(error, entry.id)
        fields = self._final_fields(attempt, OutboxKind.ERROR, text)
        joined = self.ledger.joined(attempt.conversation.id, attempt.number)
        if joined:
            fields["extra"] = {"answers": [entry.id, *(j.id for j in joined)]}
        reply = None
        if not is_replay(entry.message):  # a replay's error is in its transcript only
            reply = self.outbox.hand_over(**fields)
        note = aside_note(entry, str(error), attempts=attempts, now=self.store.now())
        with self.store.transaction() as db:
            if reply is not None:
                self.outbox.mark(reply.id, OutboxState.DELIVERED, db=db)
            self._set_turn(attempt, TurnStatus.FAILED, db, error=str(error))
            fail_tasks(self.store, self.events, self.tasks, entry.id, str(error), db=db)
            self.ledger.set_status(entry.id, MessageStatus.DEAD, last_error=str(error), db=db)
            where = (attempt.conversation.id, attempt.number)  # its joined messages die with it
            reason = f"answered by the error reply of {entry.id}: {error}"
            self.ledger.end_joined(*where, MessageStatus.DEAD, last_error=reason, db=db)
            self._event("turn_failed", attempt, db, attempts=attempts, error=str(error))
            self.store.after_commit(lambda: self.inbox.move_aside(entry, note))
        logger.error("message %s is dead after %d attempt(s): %s", entry.id, attempts, error)
        return Outcome.DEAD

    # -- helpers ----------------------------------------------------------------------------

    def _set_turn(self, attempt: Attempt, status: TurnStatus, db: Any, **values: Any) -> None:
        self.store.update_turn(
            attempt.conversation.id, attempt.number, status=status, db=db, **values
        )

    def _event(self, type: str, attempt: Attempt, db: Any, **data: Any) -> None:
        """Record an event of this attempt's turn, inside ``db``'s transaction."""
        self.events.emit(type, **attempt.where, db=db, **data)

    def _after_commit(self, hook: str, **kwargs: Any) -> None:
        """Call a notification hook once the transaction commits (not if it rolls back)."""
        plugins = self.app.plugins
        self.store.after_commit(lambda: plugins.notify(hook, **kwargs))

    def _final_fields(self, attempt: Attempt, kind: OutboxKind, text: str) -> dict[str, Any]:
        """The one final outbox item of this attempt's generation (written at most once); a
        later generation (the message was dead, and retried) names the error reply before."""
        entry = attempt.entry
        earlier = final_reply_id(entry.id, entry.generation - 1) if entry.generation else None
        return {
            "item_id": final_reply_id(entry.id, entry.generation),
            "retry_of": earlier,
            "in_reply_to": entry.id,
            **about(attempt.conversation),
            "turn": attempt.number,
            "kind": kind,
            "text": text,
        }


def _joined(message: Message, turn: int) -> dict[str, Any] | None:
    """``joined = "current"`` for the reply to attachments sent alone (a lone photo) that
    named no conversation and went on the channel's current one: it says where they went."""
    alone = bool(message.attachments) and not message.text.strip()
    named = message.conversation is not None or message.new_conversation
    return {"joined": "current"} if alone and not named and turn > 1 else None
