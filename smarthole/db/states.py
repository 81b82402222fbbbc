"""Every state the store keeps, as enums: a message's, a turn's, an outbox item's, a task's.

The store holds each state as its string value, so a member compares equal to (and is stored,
bound and serialized as) that string; the values are part of the database and must not
change. SQL that names a state builds its text from the members (:func:`sql_values`), so the
text stays what SQLite's partial indexes expect.

A message's life (``pipeline.lifecycle`` owns every transition)::

    queued ──begin──▶ in_progress ──complete──▶ done
                          │  ├──defer────▶ deferred ──(due)──▶ begin again
                          │  ├──await────▶ deferred until an approval's answer or expiry
                          │  ├──interrupt─▶ queued
                          │  └──give up───▶ dead ──(smarthole retry)──▶ redrive ──(claim)──▶ queued
                          └──reject (it cannot start)──▶ dead
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """A state as the store keeps it: its value."""

    @property
    def sql(self) -> str:
        """The state as an SQL literal, for a statement's text."""
        return f"'{self.value}'"


class MessageStatus(State):
    """Where an inbox message stands in the ledger."""

    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    DEFERRED = "deferred"  # a failed attempt; the next is due at ``next_attempt_at``
    DEAD = "dead"  # given up: its file is in failed/
    DONE = "done"
    REDRIVE = "redrive"  # dead, and put back into the inbox by ``smarthole retry``
    # Answered by another message's turn (a busy channel's ``collect`` or ``steer``): its row
    # names that turn (``conversation_id``, ``turn``), and is done or dead with it.
    JOINED = "joined"


UNFINISHED_MESSAGES = (MessageStatus.QUEUED, MessageStatus.IN_PROGRESS, MessageStatus.DEFERRED)


class TurnStatus(State):
    """How a turn of a conversation stands."""

    RUNNING = "running"
    COMPLETED = "completed"
    DEFERRED = "deferred"
    INTERRUPTED = "interrupted"  # a stop or a crash cut it off; it resumes
    FAILED = "failed"


class OutboxState(State):
    """An outbox item's progress: a row with its file name, the file, the ``deliver`` hook."""

    PLANNED = "planned"
    WRITTEN = "written"
    DELIVERED = "delivered"


class OutboxKind(State):
    """What an outbox item is: a turn's final reply (a response or an error), or a message or
    question the agent sent during its turn."""

    RESPONSE = "response"
    MESSAGE = "message"
    QUESTION = "question"
    ERROR = "error"
    APPROVAL = "approval"  # a tool call waits for the person's yes
    COMMAND = "command"  # a message command's answer (``/status``): no model call, no turn

    @property
    def final(self) -> bool:
        return self in (OutboxKind.RESPONSE, OutboxKind.ERROR, OutboxKind.COMMAND)


class TaskStatus(State):
    """How a team task stands."""

    ACTIVE = "active"
    INTERRUPTED = "interrupted"  # its loop stopped with the daemon; it resumes with its turn
    COMPLETED = "completed"
    ABORTED = "aborted"
    FAILED = "failed"  # the human turn that owns it is dead

    @property
    def finished(self) -> bool:
        return self not in RUNNING_TASKS


RUNNING_TASKS = (TaskStatus.ACTIVE, TaskStatus.INTERRUPTED)
FINISHED_TASKS = (TaskStatus.COMPLETED, TaskStatus.ABORTED, TaskStatus.FAILED)


class ApprovalState(State):
    """Where a tool call that needs a person's approval stands (``db.approvals``)."""

    WAITING = "waiting"  # asked; the turn waits (its message deferred until ``expires``)
    APPROVED = "approved"  # the call runs, once
    DENIED = "denied"  # the model gets "denied by the person"
    EXPIRED = "expired"  # no answer in time: denied
    ANSWERED = "answered"  # a plain message instead: the model gets the person's text


class ApprovalBy(StrEnum):
    """Who (or what) decided an approval."""

    INBOX = "inbox"
    CLI = "cli"
    WEB = "web"
    TIMEOUT = "timeout"


class TitleState(State):
    """Where a conversation's title (or its summary) stands."""

    NONE = "none"  # not wanted yet
    PENDING = "pending"  # due: the next sweep writes it
    DONE = "done"
    FAILED = "failed"  # the model could not write one; a fallback stands in
    DISABLED = "disabled"  # summaries are turned off


class Outcome(StrEnum):
    """What one attempt at a message's turn came to (the processor's answer)."""

    DONE = "done"
    DEFERRED = "deferred"
    DEAD = "dead"
    INTERRUPTED = "interrupted"


class ConversationStatus(StrEnum):
    """A conversation's status as people see it listed (derived, not stored)."""

    ENDED = "ended"
    DEFERRED = "deferred"
    INTERRUPTED = "interrupted"
    WAITING = "waiting for your reply"
    ACTIVE = "active"  # its channel's current conversation: a new message goes to it
    PAUSED = "paused"  # open, but another is its channel's current one


def sql_values(*states: State) -> str:
    """``'a', 'b'``: states as SQL literals, for an ``IN (...)`` in a statement's text."""
    return ", ".join(state.sql for state in states)


class ScheduleState(State):
    """Whether a schedule fires: ``done`` is a one-time (``at``) schedule whose slot passed."""

    ACTIVE = "active"
    PAUSED = "paused"
    DONE = "done"


class FireState(State):
    """A schedule's fire: ``recorded`` (its slot is taken: it fires, once) before its message
    is in the ledger, ``sent`` after."""

    RECORDED = "recorded"
    SENT = "sent"


class SpendState(State):
    """A model call's spend row: ``open`` (reserved at its bound, no response yet: counted at
    the bound), ``spent`` (its real cost), ``released`` (nothing was sent: counts nothing)."""

    OPEN = "open"
    SPENT = "spent"
    RELEASED = "released"


class CapKind(State):
    """Which ``[budget]`` cap (or a schedule's own ``budget``) a spend is held to."""

    CONVERSATION = "per_conversation"
    TASK = "per_task"
    SCHEDULE = "schedule"
    DAY = "per_day"
    MONTH = "per_month"
