"""One message through its turn: which conversation, the agent loop, and how it ended.

The processor is plain Python: it gets its collaborators (store, ledger, outbox, agent,
titler) and never touches threads, signals or the SDK. It decides; ``lifecycle`` makes the
transition it decides on (begin, complete, defer, interrupt, give up), each in one commit. It is
safe to call again for a message whose earlier attempt failed or was cut off: the store says
where the turn stands.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING

from ..agent.loop import TurnOutcome
from ..agent.prompts import system_prompt
from ..backoff import Backoff
from ..db.records import Conversation
from ..errors import (
    ApprovalWaiting,
    InternalError,
    LookupFailed,
    MessageError,
    TeamRequestError,
    TurnError,
    TurnHalted,
    TurnInterrupted,
)
from ..teams import HumanTurn, TeamRunner
from .busy import halted_outcome
from .commands.registry import unescaped
from .lifecycle import Attempt
from .turn import TurnRun, schedule_of

if TYPE_CHECKING:
    from ..agent.history import HistoryCache
    from ..agent.loop import Agent
    from ..agent.memory import Memory
    from ..agent.titles import Titler
    from ..app import App
    from ..config import Config
    from ..conversations import Conversations
    from ..db.events import EventLog
    from ..db.ledger import Ledger, LedgerEntry
    from ..db.pending import PendingQuestions
    from ..db.records import StoredMessage
    from ..db.states import Outcome
    from ..db.usage import UsageLog
    from .busy import Arrivals
    from .commands.runner import CommandRunner
    from .inbox import Inbox
    from .lifecycle import Lifecycle
    from .outbox import Outbox
    from .replaying import ReplayPlan, Replays

logger = logging.getLogger(__name__)

RETRY_JITTER = 0.25  # a deferred message waits up to a quarter more than its backoff


@dataclass
class Processor:
    """Runs the turns of inbox messages; one call of :meth:`process` per attempt.

    Its parts come from the composition root (``daemon.runtime.Runtime``)."""

    app: App
    agent: Agent
    ledger: Ledger
    outbox: Outbox
    events: EventLog
    inbox: Inbox
    lifecycle: Lifecycle
    conversations: Conversations
    pending: PendingQuestions
    history: HistoryCache
    usage: UsageLog
    teams: TeamRunner | None = None
    titler: Titler | None = None
    stop: threading.Event | None = None
    rng: random.Random | None = None
    replays: Replays | None = None  # a replay's turns: its plan, its tools' stand-ins
    memory: Memory | None = None
    # How many forgets have committed (``db.forgetting``): when it moves, what the history
    # cache holds may be forgotten, and it is read again from the store.
    forgets: Callable[[], int] | None = None
    commands: CommandRunner | None = None
    arrivals: Arrivals | None = None

    def __post_init__(self) -> None:
        self.store = self.app.store
        self._forgets = self.forgets() if self.forgets is not None else 0

    @property
    def config(self) -> Config:
        return self.app.config  # read at each use: a reload applies to the turns after it

    # -- the attempt ------------------------------------------------------------------------

    def process(self, entry: LedgerEntry) -> Outcome:
        """Run (or resume) the turn of ``entry``, and make the transition its end calls for;
        a message that carries a command runs it instead (``pipeline.commands``)."""
        invocation = None if self.commands is None else self.commands.invocation(entry)
        if invocation is not None:
            assert self.commands is not None
            return self.commands.run(entry, invocation)
        text = entry.message.text
        if text.lstrip().startswith("//"):  # text that starts with a slash, for the model
            entry = replace(entry, message=replace(entry.message, text=unescaped(text)))
        if self.arrivals is None:
            return self._process(entry)
        with self.arrivals.running(entry):
            return self._process(entry)

    def _process(self, entry: LedgerEntry) -> Outcome:
        plan = self.replays.plan(entry) if self.replays is not None else None
        conversation_for = self._conversation_for if plan is None else lambda _: plan.conversation
        try:
            begun = self.lifecycle.begin(entry, conversation_for)
        except MessageError as exc:
            return self.lifecycle.reject(entry, str(exc))
        attempt = begun.attempt
        run = self._turn_run(attempt, begun.stored, plan)
        try:
            outcome = self._run(entry, run)
        except TurnHalted as halted:  # /stop, or a newer message (``interrupt``)
            outcome = halted_outcome(run, halted.reason)
            if halted.sent and run.turn_messages()[-1].kind != "assistant":
                # The model was given the turn's input and cut off before it answered: the
                # next turn sees the answer it got instead (else its input is new there).
                run.record_text(outcome.text)
            self.events.emit("turn_interrupted", **run.where, reason=halted.reason, resumes=False)
        except ApprovalWaiting as waiting:
            return self.lifecycle.await_approval(attempt, waiting)
        except TurnInterrupted:
            return self.lifecycle.interrupt(attempt)
        except TurnError as exc:
            return self.lifecycle.fail(attempt, exc, partial(self._retry_delay, exc))
        except Exception as exc:  # a bug, a broken plugin or invariant: dead, not retried
            logger.exception("turn of message %s failed on an internal error", entry.id)
            error = InternalError(f"internal error: {type(exc).__name__}: {exc}")
            return self.lifecycle.fail(attempt, error, partial(self._retry_delay, error))
        done = self.lifecycle.complete(run, outcome, fresh=begun.stored is not None)
        if self.titler is not None:
            self.titler.title_due(attempt.conversation.id)
            self.titler.sweep(channel=attempt.conversation.channel)
        return done

    def _retry_delay(self, error: TurnError, attempts: int) -> float | None:
        """Seconds until the next attempt after ``attempts`` failed ones; None: give up."""
        retry = self.config.retry
        if not error.retryable or attempts >= retry.max_attempts:
            return None
        wait = Backoff(retry.base_delay_seconds, retry.max_delay_seconds, jitter=RETRY_JITTER)
        uniform = (self.rng or random).uniform
        return wait.delay(attempts, retry_after=error.retry_after, uniform=uniform)

    def _run(self, entry: LedgerEntry, run: TurnRun) -> TurnOutcome:
        """The entry agent's turn, or the team task an inbox file asked for directly."""
        if entry.message.agents is None:
            tools = self.app.tools if self.teams is None else self.teams.entry_tools(self.app.tools)
            if run.replay is not None:  # a replay: its model; tools gone now still stand in
                return self.agent.run(run, tools=run.replay.tools(tools), model=run.replay.model)
            return self.agent.run(run, tools=tools)
        said = [m for m in run.turn_messages() if m.kind == "assistant"]
        if said:  # the team's result was stored before a crash
            return TurnOutcome(text=said[-1].text)
        if self.teams is None:
            raise TeamRequestError("agent teams are not available here")
        place = HumanTurn(
            run.conversation.id,
            run.conversation.channel,
            run.number,
            entry.id,
            schedule=schedule_of(entry),
        )
        text = self.teams.answer(entry.message, place)
        run.record_text(text)
        return TurnOutcome(text=text)

    # -- which conversation -----------------------------------------------------------------

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
        self, attempt: Attempt, so_far: list[StoredMessage] | None, plan: ReplayPlan | None = None
    ) -> TurnRun:
        """The turn as the agent loop sees it, with the system prompt of this attempt."""
        entry, conversation = attempt.entry, attempt.conversation
        if self.forgets is not None and self._forgets != (seen := self.forgets()):
            self._forgets = seen
            self.history.clear()
        if self.titler is not None:
            self.titler.sweep(channel=conversation.channel)
        recent = self.store.recent_conversations(
            channel=conversation.channel, ended_only=True, limit=2
        )
        extra = self.app.plugins.collect(
            "extend_system_prompt", conversation=conversation, message=entry.message
        )
        if self.memory is not None and self.config.memory.enabled:
            extra = [self.memory.profile_section(conversation.id), *extra]
        pending = self.pending.get(conversation.id)
        system = system_prompt(
            self.config.agent,
            conversation=conversation,
            recent=[c for c in recent if c.id != conversation.id],
            pending=pending,
            extra=extra,
        )
        self.history.history_turns = self.config.attachments.history_turns  # after a reload
        if plan is not None:
            system = plan.system(system)
        return TurnRun(
            app=self.app,
            events=self.events,
            outbox=self.outbox,
            entry=entry,
            conversation=conversation,
            number=attempt.number,
            system_blocks=system,
            history_cache=self.history,
            usage=self.usage,
            stop=self.stop,
            answering=pending,
            stored_so_far=so_far,
            replay=self.replays.tools(plan, entry) if plan and self.replays else None,
            arrivals=self.arrivals,
        )
