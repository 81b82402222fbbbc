"""What the daemon does besides running turns: recovery at start and periodic housekeeping.

Recovery makes the store and the folders agree again after whatever stopped the last run.
Housekeeping expires old questions, ends idle conversations, writes due titles and
summaries, removes attachment blobs no message names and old schedule fires; it runs on its
own thread so it never delays claiming or dispatching.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..db.blobrefs import referenced_blobs
from ..db.events import about_turn
from ..db.states import MessageStatus
from ..formats import Clock
from .memory import release_free_memory

if TYPE_CHECKING:
    from .runtime import Runtime

logger = logging.getLogger(__name__)

# A schedule's fires are kept this long (and its latest one, and any whose message is not
# finished, for ever): a schedule `every = "1s"` takes 86,400 a day.
SCHEDULE_FIRES_KEPT = timedelta(days=7)
PRUNE_BATCH = 5000  # fires deleted per commit
PRUNE_EVERY = timedelta(hours=1)  # a pass reads the whole table: a week of fires


def recover(runtime: Runtime, clock: Clock) -> None:
    """Mark interrupted turns, requeue in-progress messages, finish claimed files and replies."""
    store = runtime.app.store
    for turn in store.interrupt_running_turns():
        logger.warning(
            "turn %d of conversation %s was interrupted; it will resume",
            turn.number,
            turn.conversation_id,
        )
        runtime.events.emit(
            "turn_interrupted",
            **about_turn(store, turn.conversation_id, turn.number, turn.message_id),
            at_start=True,
        )
    runtime.tasks.interrupt_active()  # each resumes with the human turn that owns it
    requeued = runtime.ledger.requeue_in_progress()
    recovered = runtime.inbox.recover()
    for item in runtime.outbox.undelivered():
        runtime.outbox.finish(item.id)
    expired = runtime.pending.expire(
        clock(), runtime.app.config.conversation.pending_state_timeout_minutes
    )
    if requeued or recovered or expired:
        logger.info(
            "recovered: %d message(s) requeued, %d claimed file(s), %d expired question(s)",
            requeued,
            recovered,
            len(expired),
        )


def housekeeping(
    runtime: Runtime, clock: Clock, quiet: Quiet | None = None, pruning: Every | None = None
) -> None:
    """Expire old questions, end idle conversations, write due titles and summaries, remove
    old schedule fires (when ``pruning`` says it is time; without it, at once), let go of what
    is kept for a busy time once ``quiet`` says so, and give the memory malloc holds free back
    to the system."""
    store = runtime.app.store
    config = runtime.app.config.conversation  # read each pass: a reload applies at once
    runtime.pending.expire(clock(), config.pending_state_timeout_minutes)
    idle = timedelta(minutes=config.idle_timeout_minutes)
    waiting = {q.conversation_id for q in runtime.pending.all()}
    busy = runtime.ledger.channels_with_work()
    for conversation in store.open_conversations():
        if conversation.id in waiting or conversation.channel in busy:
            continue
        if clock() - conversation.updated_at > idle:
            runtime.conversations.end(conversation, "idle_timeout")
    runtime.titler.sweep()
    remove_unreferenced_blobs(runtime)
    if pruning is None or pruning.due(clock()):
        prune_schedule_fires(runtime, clock() - SCHEDULE_FIRES_KEPT)
    after = timedelta(seconds=runtime.app.config.daemon.idle_release_seconds)
    if quiet is not None and quiet.due(busy=bool(busy), now=clock(), after=after):
        let_go(runtime, after)
    release_free_memory()


def remove_unreferenced_blobs(runtime: Runtime) -> int:
    """Remove attachment blobs no message names any more (past their grace time: a message
    being taken in may have stored its blobs and not committed yet)."""
    blobs = runtime.blobs
    if not (blobs.root / "sha256").is_dir():
        return 0
    return blobs.remove_unreferenced(referenced_blobs(runtime.store))


def prune_schedule_fires(runtime: Runtime, before: datetime) -> int:
    """Delete the schedule fires taken before ``before`` that nothing needs (see
    :meth:`Schedules.prune_fires`), a batch per commit so the main loop is never kept from the
    store for long; returns how many."""
    removed = 0
    while True:
        batch = runtime.schedules.prune_fires(before, limit=PRUNE_BATCH)
        removed += batch
        if batch < PRUNE_BATCH:
            break
    if removed:
        logger.info("removed %d schedule fire(s) from before %s", removed, before.isoformat())
    return removed


class Every:
    """Whether a chore done every ``period`` is due (at the first look, then each period)."""

    def __init__(self, period: timedelta) -> None:
        self.period = period
        self.next: datetime | None = None

    def due(self, now: datetime) -> bool:
        if self.next is not None and now < self.next:
            return False
        self.next = now + self.period
        return True


class Quiet:
    """Since when the daemon has had no message waiting or running, and whether it has let go
    of what it keeps for a busy time since then."""

    def __init__(self) -> None:
        self.since: datetime | None = None
        self.released = False

    def due(self, *, busy: bool, now: datetime, after: timedelta) -> bool:
        """Whether to let go now: once per quiet spell, when it has lasted ``after``."""
        if busy:
            self.since, self.released = None, False
            return False
        if self.since is None:
            self.since = now
        if self.released or now - self.since < after:
            return False
        self.released = True
        return True


def let_go(runtime: Runtime, quiet_for: timedelta) -> None:
    """Drop what makes a busy time fast, not what makes it correct: the conversations' kept
    history (a long one holds its whole budget's text) and SQLite's page cache. After a
    backlog of thousands of messages that is a few MiB; the next message reads its history
    again, one query bounded by the budget, not by the conversation's length."""
    conversations = runtime.history.clear()
    runtime.app.store.release_memory()
    if conversations:
        logger.info(
            "quiet for %.0fs: let go of the kept history of %d conversation(s)",
            quiet_for.total_seconds(),
            conversations,
        )


def housekeeper(runtime: Runtime, clock: Clock, stop: threading.Event) -> None:
    """The housekeeping thread's body: a pass every rescan interval until ``stop``."""
    interval = max(runtime.app.config.inbox.rescan_seconds, 1.0)
    quiet, pruning = Quiet(), Every(PRUNE_EVERY)
    while not stop.wait(timeout=interval):
        try:
            housekeeping(runtime, clock, quiet, pruning)
        except Exception:
            logger.exception("housekeeping failed; trying again in %.0fs", interval)


def status_line(running: int, counts: dict[str, int]) -> str:
    """The service manager's one-line status: "idle" or "2 turns running, 5 queued, ..."."""
    parts = []
    if running:
        parts.append(f"{running} turn{'s' if running != 1 else ''} running")
    for status in (MessageStatus.QUEUED, MessageStatus.DEFERRED):
        if counts.get(status):
            parts.append(f"{counts[status]} {status}")
    return ", ".join(parts) or "idle"


def deferred_summary(runtime: Runtime) -> dict[str, Any]:
    """For ``--once``: how many messages wait deferred, and when the next is due (logged)."""
    deferred = runtime.ledger.by_status(MessageStatus.DEFERRED)
    due = runtime.ledger.next_due()
    if deferred:
        when = due.isoformat() if due else "?"
        logger.warning("%d message(s) deferred; the next is due at %s", len(deferred), when)
    return {"deferred": len(deferred), "next_due": due}
