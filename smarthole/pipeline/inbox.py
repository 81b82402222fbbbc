"""Claiming inbox files, and releasing or setting them aside when done.

Which files are ready to claim is ``watch``'s concern. Claiming moves a file atomically into
``.smarthole/claimed/`` before anything else happens, then reads it through one descriptor (a
regular file of its own, within the size limit) and records it in the ledger. The claimed file
is deleted only once the message's final outbox file is written, or moved to ``failed/`` (with
``<name>.error.txt``) when the message cannot be answered. A fault of the disk or the database
between the claim and the ledger strands the file (see ``stranded``): retried, never lost.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..attachments import BlobStore
from ..config import AttachmentSettings
from ..db.ledger import Admission
from ..db.records import Message
from ..errors import MessageError
from ..formats import display_name
from ..fsutil import (
    NAME_MAX,
    atomic_write,
    child,
    fit_name,
    fsync_dir,
    remove_entry,
    write_new_files,
)
from .failed import aside_note, move_to_failed
from .incoming import drop_name, read_entry
from .message import DEFAULT_CHANNEL, render_message_file
from .stranded import StrandedClaims
from .watch import InboxEntry, InboxFolder, Watcher, is_candidate

if TYPE_CHECKING:
    from ..config import InboxSettings
    from ..db.events import EventLog
    from ..db.ledger import Ledger, LedgerEntry
    from ..db.store import Store
    from ..home import Home
    from ..plugins import Plugins

logger = logging.getLogger(__name__)

CLAIM_SEPARATOR = "--"
# Why a message whose id was already taken with another text is refused (file or desktop).
REUSED_ID = "id already used for a different message"
# A backlog is claimed this many files (or this long) at a time, with dispatching between.
CLAIM_BATCH_FILES = 50
CLAIM_BATCH_SECONDS = 0.05


def claimed_name(name: str) -> str:
    """A unique name in the claimed folder for inbox file ``name``, short enough to exist.

    It is valid UTF-8 even when ``name`` is not, because the ledger stores it as text.
    """
    prefix = f"{time.time_ns():x}{CLAIM_SEPARATOR}"
    return prefix + fit_name(display_name(name), NAME_MAX - len(prefix))


def original_name(claimed: Path) -> str:
    """The inbox name of a claimed file (claimed names are ``<stamp>--<name>``).

    For a name that had to be shortened this is the short form; the claim itself passes the
    original name on, so only a crash in the instant between claim and ledger loses it.
    """
    return claimed.name.split(CLAIM_SEPARATOR, 1)[-1]


def drop_message(inbox: Path, text: str, *, message_id: str, **fields: Any) -> Path:
    """Write a message file into ``inbox`` atomically (temp name, then rename)."""
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / drop_name(message_id)
    atomic_write(path, render_message_file(text, id=message_id, **fields), exclusive=True)
    return path


def drop_messages(inbox: Path, files: Sequence[tuple[str, bytes]]) -> list[Path | OSError]:
    """Write rendered message files ``(id, bytes)`` into ``inbox`` as one durable batch.

    Each file is written and fsynced under a temp name, then all are renamed into place and
    the folder is fsynced once (``fsutil.write_new_files``): a burst from the desktop costs
    one sync a message and one a batch, not two a message. Each answer is the file's path, or
    the error that kept that file (alone) out.
    """
    try:
        inbox.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return [exc] * len(files)
    used: set[str] = set()
    paths = []
    for message_id, _ in files:
        name = drop_name(message_id)
        stem, count = name.removesuffix(".md"), 1
        while name in used:  # two ids alike once made safe for a name, in one instant
            count += 1
            name = f"{stem}-{count}.md"
        used.add(name)
        paths.append(inbox / name)
    errors = write_new_files([(path, data) for path, (_, data) in zip(paths, files, strict=True)])
    return [error or path for path, error in zip(paths, errors, strict=True)]


@dataclass(frozen=True)
class Claim:
    """The outcome of claiming one file."""

    name: str
    admission: Admission | None
    message: Message | None = None
    reason: str | None = None


@dataclass(eq=False)
class Inbox:
    """Claims inbox files into the ledger, and releases or sets them aside when done."""

    home: Home
    settings: InboxSettings
    store: Store
    ledger: Ledger
    events: EventLog
    plugins: Plugins
    attachments: AttachmentSettings = field(default_factory=AttachmentSettings)
    blob_store: BlobStore | None = None  # the root's; a store of its own when not given
    folder: InboxFolder = field(init=False)
    blobs: BlobStore = field(init=False)
    stranded: StrandedClaims = field(init=False)
    # Applies a file that answers an approval (``pipeline.answers``); set by the daemon.
    answers: Callable[[Path, Message, str], bool] | None = field(default=None, init=False)

    _backlog: deque[InboxEntry] = field(default_factory=deque, init=False)  # of this pass

    def __post_init__(self) -> None:
        self.folder = InboxFolder(self.home.inbox, self.settings)
        self.stranded = StrandedClaims(self.home.stranded_file)
        self.blobs = self.blob_store or BlobStore(self.home.blobs)

    # -- looking -----------------------------------------------------------------------------

    def has_work(self) -> bool:
        """For ``--once``: a file a claim could take now, or once it has settled."""
        return self.folder.has_work()

    def next_look(self) -> float | None:
        """``time.monotonic()`` at which settling files or stranded claims want a look."""
        times = [t for t in (self.folder.next_recheck(), self.stranded.next_at()) if t is not None]
        return min(times, default=None)

    # -- claiming ---------------------------------------------------------------------------

    def claim_batch(self) -> bool:
        """Claim the next ready inbox files, a batch at a time; True if more may be waiting.

        A backlog is taken ``CLAIM_BATCH_FILES`` files (or ``CLAIM_BATCH_SECONDS``) at a time
        and admitted in one commit, so the daemon dispatches, and answers, between batches
        rather than after the last of ten thousand files. A batch that took files asks for
        another look: more may have come meanwhile.
        """
        if not self._backlog:
            self.folder.start_pass()
            self._backlog.extend(self.folder.scan())
            self.retry_stranded()
        deadline = time.monotonic() + CLAIM_BATCH_SECONDS
        taken: list[tuple[Path, str]] = []
        while self._backlog and len(taken) < CLAIM_BATCH_FILES and time.monotonic() < deadline:
            entry = self._backlog.popleft()
            if self.folder.claimable(entry) and (target := self._take(entry.name, entry.mtime_ns)):
                taken.append((target, entry.name))
        self._admit_or_strand(taken)
        return bool(self._backlog or taken)

    def _take(self, name: str, mtime_ns: int | None) -> Path | None:
        """The claim itself: ``inbox/name`` renamed into the claimed folder."""
        target = child(self.home.claimed, claimed_name(name))
        try:
            os.rename(child(self.home.inbox, name), target)
        except FileNotFoundError:
            return None  # taken away by its writer, or by a concurrent claim
        except OSError as exc:  # e.g. inbox/ on another filesystem: it stays for a later scan
            if self.folder.refused(name, mtime_ns):
                logger.error("cannot claim %s: %s", display_name(name), exc)
            return None
        self.folder.taken(name)
        return target

    def admit(self, claimed: Path, name: str | None = None) -> Claim:
        """Read, parse and record a claimed file (also used by recovery).

        Raises only for faults of the disk or the database; an unusable file is set aside.
        """
        (claim,) = self._admit([(claimed, original_name(claimed) if name is None else name)])
        return claim

    def _admit(self, files: list[tuple[Path, str]]) -> list[Claim]:
        """Read and parse claimed files, then record the usable ones in one commit."""
        if not files:
            return []  # a look that found nothing commits nothing
        claims, parsed = [], []
        for claimed, name in files:
            try:
                message = self._read(claimed, name)
            except MessageError as exc:
                claims.append(self._reject(claimed, name, str(exc)))
                continue
            channel = self._channel_for(message)
            if self.answers is not None and self.answers(claimed, message, channel):
                claims.append(Claim(name, None, message))  # it answered an approval
                continue
            if message.answer is not None:
                claims.append(self._reject(claimed, name, "answers need the daemon"))
                continue
            parsed.append((claimed, name, message, channel))
        # The batch's ledger rows, and each duplicate's count with its event: one commit.
        with self.store.transaction():
            admissions = []
            for claimed, _, message, channel in parsed:
                admission = self.ledger.admit(message, channel=channel, claimed_path=claimed)
                if admission is Admission.DUPLICATE:
                    self._record_duplicate(message, channel)
                admissions.append(admission)
        for (claimed, name, message, channel), admission in zip(parsed, admissions, strict=True):
            claims.append(self._admitted(claimed, name, message, channel, admission))
        return claims

    def _read(self, claimed: Path, name: str) -> Message:
        return read_entry(claimed, name, self.settings, self.attachments, self.blobs)

    def _admitted(
        self, claimed: Path, name: str, message: Message, channel: str, admission: Admission
    ) -> Claim:
        if admission is Admission.CONFLICT:
            return self._reject(claimed, name, REUSED_ID, message)
        if admission is Admission.DUPLICATE:
            _remove(claimed)
            return Claim(name, admission, message)
        logger.info(
            "claimed %s as message %s (channel %s)", message.source_name, message.id, channel
        )
        self.plugins.notify("message_received", message=message.with_channel(channel))
        return Claim(name, admission, message)

    def _record_duplicate(self, message: Message, channel: str) -> None:
        """A file that repeats a message already taken (same id; see ``derive_id``)."""
        logger.warning(
            "skipped %s: a duplicate of message %s, which was already taken",
            message.source_name,
            message.id,
        )
        original = self.ledger.get(message.id)
        self.events.emit(
            "duplicate_skipped",
            conversation=original.conversation_id if original else None,
            channel=channel,
            turn=original.turn if original else None,
            message_id=message.id,
            source_name=message.source_name,
        )

    def _channel_for(self, message: Message) -> str:
        if message.channel:
            return message.channel
        if message.conversation:
            conversation = self.store.conversation(message.conversation)
            if conversation is not None:
                return conversation.channel
        return DEFAULT_CHANNEL

    def _reject(
        self, claimed: Path, name: str, reason: str, message: Message | None = None
    ) -> Claim:
        failed = move_to_failed(self.home.failed, claimed, name, reason)
        logger.warning("set aside %s: %s (see %s)", display_name(name), reason, failed)
        self.events.emit(
            "message_rejected",
            message_id=message.id if message else None,
            source_name=display_name(name),
            reason=reason,
            path=str(failed),
        )
        return Claim(name, None, message, reason)

    # -- stranded claims --------------------------------------------------------------------

    def _admit_or_strand(self, files: list[tuple[Path, str]]) -> list[Claim]:
        try:
            claims = self._admit(files)
        except Exception as exc:  # a fault of the disk or the database, not of a file
            if len(files) == 1:
                self.stranded.add(*files[0], exc)
                return []
            # One at a time, so that only what fails is stranded; a file the batch already
            # set aside is gone from the claimed folder and needs nothing more.
            return [c for f in files if f[0].exists() for c in self._admit_or_strand([f])]
        for claimed, _ in files:
            self.stranded.discard(claimed)
        return claims

    def retry_stranded(self) -> None:
        """Try again every stranded claim that is due."""
        for stranded in self.stranded.due():
            self._admit_or_strand([(Path(stranded.file), stranded.name)])

    # -- endings ----------------------------------------------------------------------------

    def release(self, entry: LedgerEntry) -> None:
        """The final reply is written: the claimed file has served its purpose."""
        self.remove_claimed(entry)
        self.ledger.clear_claim(entry.id)

    def remove_claimed(self, entry: LedgerEntry) -> None:
        """Remove the claimed file of a message whose final reply is written; the caller
        clears its ``claimed_path`` in the commit that completes the turn (after a crash in
        between, the turn resumes from the store and finds its reply written).

        The removal is not made durable (no directory fsync, the cost of a commit): a file
        that a power cut brings back is, at the next start, a message the ledger already
        has, so recovery skips it as a duplicate and removes it.
        """
        if entry.claimed_path is not None:
            remove_entry(entry.claimed_path)

    def move_aside(self, entry: LedgerEntry, note: str) -> Path:
        """After the commit that made ``entry`` dead: its file goes to ``failed/`` with
        ``note``, then the ledger says where, and that the claim is gone.

        Not under the store's lock (two fsyncs); a crash before the ledger says so leaves the
        claim recorded, and :meth:`recover` finishes the move.
        """
        assert not self.store.in_transaction(), "file work under the store's lock"
        name = entry.message.source_name
        claimed = entry.claimed_path
        if claimed is None or not claimed.exists():
            # The file is gone (a crash after it moved); the ledger has its text.
            claimed = self.home.claimed / claimed_name(name)
            atomic_write(claimed, render_message_file(entry.message.text, id=entry.id))
        failed = move_to_failed(self.home.failed, claimed, name, note)
        self.ledger.set_aside(entry.id, failed)
        return failed

    # -- recovery ---------------------------------------------------------------------------

    def recover(self) -> int:
        """Finish what a crash left in the claimed folder; returns how many files it handled.

        Nothing here is fatal: a file that cannot be taken in is stranded and retried.
        """
        self.stranded.save()  # forget what a previous run reported
        known = self.ledger.claimed_paths()
        handled = 0
        for entry in self.ledger.answered_with_claims():
            self.release(entry)
            handled += 1
        for entry in self.ledger.dead_with_claims():  # a stop before the file moved aside
            attempts = entry.attempts or None  # none: it was refused before any attempt
            note = aside_note(
                entry, entry.last_error or "", attempts=attempts, now=self.store.now()
            )
            try:
                self.move_aside(entry, note)
            except OSError as exc:  # still recorded: the next start tries again
                logger.error("cannot set aside the file of dead message %s: %s", entry.id, exc)
                continue
            handled += 1
        for path in sorted(self.home.claimed.iterdir()) if self.home.claimed.exists() else []:
            if str(path) in known or not is_candidate(path.name):
                continue
            logger.info("recovering claimed file %s left by a stop", path.name)
            self._admit_or_strand([(path, original_name(path))])
            handled += 1
        return handled

    # -- watching ---------------------------------------------------------------------------

    def watch(self, wake: Callable[[], None], nudged: Callable[[], None] | None = None) -> Watcher:
        return Watcher(self.home.inbox, wake, nudged)


def _remove(path: Path) -> None:
    remove_entry(path)
    fsync_dir(path.parent)
