"""Messages that arrive while a turn of their conversation runs: the channel's busy policy.

``[channels] busy`` (and ``[channels.<name>] busy``) says what such a message does:

- ``queue``: its own turn, after the running one (the default).
- ``collect``: the next turn answers every message that waits, in one user message, each
  marked with its time (:meth:`Arrivals.collecting`, in the commit that begins the turn).
- ``steer``: the running turn takes it at its next tool-call boundary, beside the tool results,
  marked as a new message from the person (:meth:`Arrivals.steer`, one commit).
- ``interrupt``: the running turn stops at its next safe point (:meth:`Arrivals.look` asks it
  to: a running tool finishes, a model reply streaming in is hung up and not kept) and is
  answered with what it did; the new message's turn follows and sees it.

A message taken by another turn is ``joined`` to it in the ledger, in the commit that stores
its text for the model, so after a crash it is neither lost nor given twice; the turn's final
reply answers it too, and lists it (``answers``). Only a plain message joins: a command, a
team request, a message naming its conversation or starting a new one keeps its own turn, and
so does everything queued behind it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.cutting import StreamCut
from ..agent.recorder import Step
from ..config.channels import BusyPolicy
from ..formats import iso
from .commands.registry import unescaped

if TYPE_CHECKING:
    import sqlite3

    from ..agent.loop import TurnOutcome
    from ..agent.recorder import TurnRecorder
    from ..app import App
    from ..db.events import EventLog
    from ..db.ledger import Ledger, LedgerEntry
    from ..db.records import Conversation, StoredMessage
    from ..db.store import Store
    from ..db.tasks import Tasks

logger = logging.getLogger(__name__)

HALT_STOP = "stopped by /stop"
HALT_NEWER = "interrupted by a newer message"
MOST_JOINED = 100  # the most messages one turn takes at once


class TurnRun(Protocol):
    """What the busy policy needs of a running turn (``pipeline.turn.TurnRun`` is one)."""

    entry: LedgerEntry
    conversation: Conversation
    number: int
    store: Store
    recorder: TurnRecorder

    def turn_messages(self) -> list[StoredMessage]: ...


@dataclass(eq=False)
class Arrivals:
    """The turns running now, and what a message that arrives meanwhile does."""

    app: App
    ledger: Ledger
    events: EventLog
    is_command: Callable[[str], bool] = field(default=lambda text: False)
    tasks: Tasks | None = None  # a halted turn's running team tasks are aborted with it
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    # channel -> its running turn's message, and when the turn began
    _running: dict[str, tuple[str, datetime]] = field(default_factory=dict, init=False)
    _halts: dict[str, str] = field(default_factory=dict, init=False)  # message -> why
    _cuts: dict[str, StreamCut] = field(default_factory=dict, init=False)  # message -> its cut

    def policy(self, channel: str) -> BusyPolicy:
        return self.app.config.channels.policy(channel)  # read at each use: a reload applies

    # -- the running turns -------------------------------------------------------------------

    @contextlib.contextmanager
    def running(self, entry: LedgerEntry) -> Iterator[None]:
        """While ``entry``'s turn runs, it is its channel's running turn."""
        with self._lock:
            self._running[entry.channel] = (entry.id, self.app.now())
            self._cuts[entry.id] = StreamCut()
        try:
            yield
        finally:
            with self._lock:
                if self._running.get(entry.channel, ("",))[0] == entry.id:
                    del self._running[entry.channel]
                self._halts.pop(entry.id, None)
                self._cuts.pop(entry.id, None)

    def running_in(self, channel: str) -> str | None:
        with self._lock:
            running = self._running.get(channel)
        return None if running is None else running[0]

    def halt(self, message_id: str, reason: str) -> list[str]:
        """Ask the running turn of ``message_id`` to stop at its next safe point, and abort
        its running team tasks (as ``tasks abort``); returns the tasks' ids."""
        with self._lock:
            if message_id not in (running for running, _ in self._running.values()):
                return []
            self._halts.setdefault(message_id, reason)
            cut = self._cuts.get(message_id)
        if cut is not None:  # a model call streaming now is hung up, not waited for
            cut.cut(reason)
        aborted = []
        for task in [] if self.tasks is None else self.tasks.running():
            if task.message_id == message_id and self.tasks is not None:
                self.tasks.request_abort(task.id)
                aborted.append(task.id)
        return aborted

    def stream_cut(self, message_id: str) -> StreamCut | None:
        """What hangs up the model call of ``message_id``'s running turn when it is halted."""
        with self._lock:
            return self._cuts.get(message_id)

    def halted(self, message_id: str) -> str | None:
        """Why the turn of ``message_id`` is to stop, if it is."""
        with self._lock:
            return self._halts.get(message_id)

    def look(self) -> None:
        """In a channel whose policy is ``interrupt``, a plain message that arrived behind the
        running turn after it began stops it (the main loop looks after each claim)."""
        with self._lock:
            running = dict(self._running)
        for channel, (message_id, began) in running.items():
            if self.policy(channel) is not BusyPolicy.INTERRUPT or self.halted(message_id):
                continue
            waiting = self.ledger.followers(channel, after=message_id, limit=1)
            if waiting and waiting[0].received_at >= began and self.joinable(waiting[0]):
                logger.info("message %s interrupts the turn of %s", waiting[0].id, message_id)
                self.halt(message_id, HALT_NEWER)

    # -- joining a turn ----------------------------------------------------------------------

    def joinable(self, entry: LedgerEntry) -> bool:
        """Whether ``entry`` may be answered by another message's turn."""
        message = entry.message
        return (
            message.conversation is None
            and not message.new_conversation
            and message.agents is None
            and message.answer is None
            and "schedule" not in message.metadata
            and not self.is_command(message.text)
        )

    def _behind(self, entry: LedgerEntry) -> list[LedgerEntry]:
        """The plain messages queued right behind ``entry``, up to the first that is not."""
        taken = []
        for follower in self.ledger.followers(entry.channel, after=entry.id, limit=MOST_JOINED):
            if not self.joinable(follower):
                break
            taken.append(follower)
        return taken

    def collecting(self, entry: LedgerEntry) -> list[LedgerEntry]:
        """For a turn ``entry`` begins: the messages it answers too (``collect``), else none."""
        if self.policy(entry.channel) is not BusyPolicy.COLLECT or not self.joinable(entry):
            return []
        return self._behind(entry)

    def join(
        self,
        entries: list[LedgerEntry],
        conversation: Conversation,
        number: int,
        *,
        how: str,
        answered_by: str,
        db: sqlite3.Connection,
    ) -> list[LedgerEntry]:
        """Join ``entries`` to the turn of message ``answered_by`` in ``db``'s transaction, each
        with its event (``how``: ``message_collected`` or ``message_steered``, naming that
        message, whose final reply answers them); returns those that were still queued."""
        joined = []
        for entry in entries:
            if not self.ledger.join(entry.id, conversation.id, number, db=db):
                continue
            joined.append(entry)
            self.events.emit(
                how,
                conversation=conversation.id,
                channel=conversation.channel,
                turn=number,
                message_id=entry.id,
                db=db,
                answered_by=answered_by,
            )
        return joined

    def steer(self, run: TurnRun) -> bool:
        """At a tool-call boundary of ``run`` (``steer``): the messages that came meanwhile
        join it, stored as the person's new message beside the tool results."""
        if self.policy(run.conversation.channel) is not BusyPolicy.STEER:
            return False
        waiting = self._behind(run.entry)
        if not waiting:
            return False
        with run.store.transaction() as db:
            joined = self.join(
                waiting,
                run.conversation,
                run.number,
                how="message_steered",
                answered_by=run.entry.id,
                db=db,
            )
            if joined:
                run.recorder.tables.append(Step("user", steered_content(joined)), db)
        logger.info("%d message(s) steered into the turn of %s", len(joined), run.entry.id)
        return bool(joined)


def collected_content(entries: list[LedgerEntry]) -> list[dict[str, Any]]:
    """One user message for several: each message's attachments and text, marked with its
    place and time, in arrival order."""
    blocks: list[dict[str, Any]] = []
    count = len(entries)
    for index, entry in enumerate(entries, start=1):
        message = entry.message
        blocks += [a.to_block() for a in message.attachments]
        mark = f"[message {index} of {count}, sent {iso(message.timestamp)}]"
        blocks.append({"type": "text", "text": f"{mark}\n{unescaped(message.text)}"})
    return blocks


def steered_content(entries: list[LedgerEntry]) -> list[dict[str, Any]]:
    """What a steered message is to the model: the person's new message, while it works."""
    blocks: list[dict[str, Any]] = []
    for entry in entries:
        message = entry.message
        blocks += [a.to_block() for a in message.attachments]
        mark = (
            f"[a new message from the person, sent {iso(message.timestamp)} while you were "
            "working; your reply answers it too]"
        )
        blocks.append({"type": "text", "text": f"{mark}\n{unescaped(message.text)}"})
    return blocks


def halted_outcome(run: TurnRun, reason: str) -> TurnOutcome:
    """A halted turn's answer: what it said so far, and that it stopped."""
    from ..agent.loop import TurnOutcome

    said = [m.text.strip() for m in run.turn_messages() if m.kind == "assistant" and m.text.strip()]
    text = (said[-1] + "\n\n" if said else "") + f"({reason[:1].upper()}{reason[1:]}.)"
    return TurnOutcome(text=text, note=reason)
