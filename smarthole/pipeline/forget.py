"""``smarthole forget``: a conversation, a turn or a message, and everything derived from it,
erased so that not one byte of it is left in the home.

One transaction removes the rows (``db.forgetting``) and the memory derived from them
(``agent.memory``: a write whose sources include a forgotten message goes, with its lines),
merges the search index, and records a job naming the files outside the database (outbox,
claimed and failed files, attachment blobs nothing else names). After the commit those files
are removed, the WAL is checkpointed and truncated, and the job is done. A kill -9 before the
commit leaves everything as it was; after it, the job is there, and the next forget (any
forget, or the same one run again) finishes it first.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..agent.memory import ForgetReport
from ..db.blobrefs import referenced_blobs
from ..errors import StoreError, UsageError
from ..fsutil import child

if TYPE_CHECKING:
    from ..agent.memory import Memory
    from ..attachments import BlobStore
    from ..db.forgetting import ForgetJob, ForgetTables
    from ..db.store import Store
    from ..home import Home

logger = logging.getLogger(__name__)


@dataclass
class Forgotten:
    """What one forget removed, as the command reports it."""

    conversation_id: str
    whole: bool
    turns: list[int] = field(default_factory=list)
    messages: int = 0
    tasks: int = 0
    files: int = 0
    blobs: int = 0
    memory: ForgetReport = field(default_factory=ForgetReport)
    finished_earlier: int = 0  # jobs of an earlier forget cut short, finished first
    checkpointed: bool = True


@dataclass(eq=False)
class Forgetter:
    """Forgets in one home: its store's rows, its memory, its files."""

    home: Home
    store: Store
    tables: ForgetTables
    memory: Memory
    blobs: BlobStore

    def forget(
        self, conversation_id: str, *, turn: int | None = None, message: str | None = None
    ) -> Forgotten:
        """Forget conversation ``conversation_id`` (a full id), or its ``turn``, or the turn
        of ``message`` (or that message, if it has no turn yet)."""
        earlier = self.finish_jobs()
        turns: list[int] | None = None
        queued: set[str] = set()
        if message is not None:
            number = self.tables.turn_of_message(conversation_id, message)
            if number is not None:
                turns = [number]
            elif self.tables.queued(conversation_id, message):
                turns, queued = [], {message}
            else:
                raise UsageError(f"conversation {conversation_id} has no message {message!r}")
        elif turn is not None:
            if self.store.turn(conversation_id, turn) is None:
                raise UsageError(f"conversation {conversation_id} has no turn {turn}")
            turns = [turn]
        with self.store.transaction() as db:  # the daemon starts no turn while it is open
            running = self.tables.running_turns(conversation_id, turns)
            if running:
                raise UsageError(
                    f"turn {running[0]} of {conversation_id} is running; forget it once it ends"
                )
            erased = self.tables.erase(db, conversation_id, turns, queued)
            memory = self.memory.forget(db, erased.message_ids)
            self.tables.merge_index(db)
            files = [str(child(self.home.outbox, name)) for name in erased.outbox_files]
            job = self.tables.add_job(db, erased, files + erased.paths)
        done = Forgotten(
            conversation_id,
            erased.whole,
            erased.turns,
            erased.messages,
            erased.tasks,
            memory=memory,
            finished_earlier=earlier,
        )
        (finished,) = [j for j in self.tables.jobs() if j.id == job]
        done.files, done.blobs, done.checkpointed = self._finish(finished)
        return done

    def finish_jobs(self) -> int:
        """Finish the forgets a crash cut short after their commit; how many there were."""
        jobs = self.tables.jobs()
        for job in jobs:
            logger.warning("finishing a forget of %s that was cut short", job.conversation_id)
            self._finish(job)
        return len(jobs)

    def pending(self, conversation_id: str) -> bool:
        """Whether a forget of ``conversation_id`` was cut short after its commit."""
        return any(job.conversation_id == conversation_id for job in self.tables.jobs())

    def _finish(self, job: ForgetJob) -> tuple[int, int, bool]:
        """Remove the job's files and unnamed blobs, checkpoint the WAL, and end the job."""
        files = 0
        for name in job.files:
            path = Path(name)
            if path.is_relative_to(self.home.root) and _remove(path):
                files += 1
        named = referenced_blobs(self.store)
        blobs = sum(1 for sha in job.blobs if sha not in named and _remove(self.blobs.path(sha)))
        checkpointed = self.checkpoint()
        if checkpointed:  # else the job stays, and the next forget checkpoints again
            self.tables.finish_job(job.id)
            self.checkpoint()
        return files, blobs, checkpointed

    def checkpoint(self) -> bool:
        """The WAL copied into the database and truncated: its old frames held what was
        deleted. False if readers kept it busy too long (the next forget tries again)."""
        try:
            done = self.tables.checkpoint()
        except StoreError as exc:
            logger.warning("could not checkpoint the database after a forget: %s", exc)
            return False
        if not done:
            logger.warning("the database was too busy to checkpoint after a forget")
        return done


def _remove(path: Path) -> bool:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        return True
    return False
