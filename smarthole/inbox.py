"""The inbox folder: watching it, claiming files, and setting bad ones aside.

Writers rename finished files into ``inbox/``; dotfiles and names ending ``.tmp`` or ``.part``
are someone's work in progress and are left alone, as are folders. A file written in place is
taken only once its writer has closed it (Linux tells through a read lease; elsewhere, once it
has not changed for ``settle_seconds``). Filesystem events (watchdog) are only hints that wake
the daemon: a scan of the folder is the truth.

Claiming moves a file atomically into ``.smarthole/claimed/`` before anything else happens,
then reads it through one descriptor (a regular file of its own, within the size limit) and
records it in the ledger. The claimed file is deleted only once the message's final outbox
file is written, or moved to ``failed/`` (with ``<name>.error.txt``) when the message cannot
be answered. A fault of the disk or the database between the claim and the ledger strands the
file; it is retried with backoff, listed by ``smarthole status``, and never lost.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .db.ledger import Admission
from .db.records import Message
from .errors import MessageError
from .formats import display_name, iso
from .fsutil import (
    NAME_MAX,
    atomic_write,
    fit_name,
    fsync_dir,
    make_private,
    move_durably,
    open_for_writing,
    read_regular_file,
    unique_path,
)
from .message import DEFAULT_CHANNEL, parse_message, render_message_file

if TYPE_CHECKING:
    from .config import InboxSettings
    from .db.events import EventLog
    from .db.ledger import Ledger, LedgerEntry
    from .db.store import Store
    from .home import Home
    from .plugins import Plugins

logger = logging.getLogger(__name__)

IGNORED_SUFFIXES = (".tmp", ".part")
UNSAFE_IN_NAMES = re.compile(r"[^\w.@+-]")
CLAIM_SEPARATOR = "--"
ERROR_SUFFIX = ".error.txt"
# Room for ERROR_SUFFIX and unique_path's "-N" when a failed file's name is made to fit.
FAILED_NAME_MAX = NAME_MAX - len(ERROR_SUFFIX) - 8
STRANDED_MAX_DELAY = 60.0


def is_candidate(name: str) -> bool:
    """Whether an inbox entry name is a message to claim (not a temp file or a dotfile)."""
    return not name.startswith(".") and not name.lower().endswith(IGNORED_SUFFIXES)


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
    stamp = iso(datetime.now(UTC)).replace(":", "-")
    path = inbox / f"{stamp}-{UNSAFE_IN_NAMES.sub('_', message_id)[:80]}.md"
    atomic_write(path, render_message_file(text, id=message_id, **fields), exclusive=True)
    return path


@dataclass(frozen=True, order=True)
class _Entry:
    """An inbox entry seen by a scan; entries sort oldest first, then by name."""

    mtime_ns: int
    name: str
    regular: bool
    linked: bool  # a regular file with more than one name
    ctime_ns: int


@dataclass(frozen=True)
class Claim:
    """The outcome of claiming one file."""

    name: str
    admission: Admission | None
    message: Message | None = None
    reason: str | None = None


@dataclass
class StrandedClaim:
    """A claimed file that a fault of the disk or the database kept out of the ledger."""

    file: str
    source_name: str
    attempts: int
    last_error: str
    since: str
    next_attempt_at: str
    retry_at: float = 0.0  # time.monotonic() of the next attempt; not shown

    def shown(self) -> dict[str, Any]:
        data = asdict(self)
        del data["retry_at"]
        return data


def read_stranded(home: Home) -> list[dict[str, Any]]:
    """The stranded claims a daemon last reported for ``home`` (for ``smarthole status``)."""
    try:
        items = json.loads(home.stranded_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [item for item in items if isinstance(item, dict) and Path(item["file"]).exists()]


class Inbox:
    """Claims inbox files into the ledger, and releases or sets them aside when done."""

    def __init__(
        self,
        home: Home,
        settings: InboxSettings,
        store: Store,
        ledger: Ledger,
        events: EventLog,
        plugins: Plugins,
    ) -> None:
        self.home = home
        self.settings = settings
        self.store = store
        self.ledger = ledger
        self.events = events
        self.plugins = plugins
        self._stranded: dict[Path, StrandedClaim] = {}
        self._unclaimable: dict[str, int] = {}  # inbox name -> mtime_ns when its rename failed
        self._recheck_at: float | None = None  # time.monotonic() to look at settling files again

    # -- scanning ---------------------------------------------------------------------------

    def pending_names(self) -> list[str]:
        """Inbox entries that look like messages, oldest first (by mtime, then name)."""
        return [entry.name for entry in self._scan()]

    def claimable_names(self) -> list[str]:
        """Pending names that a claim could take now: ready, and not refused by the folder."""
        return [entry.name for entry in self._scan() if self._claimable(entry)]

    def has_work(self) -> bool:
        """For ``--once``: a file a claim could take now, or once it has settled.

        A file still open for writing, or one the folder refuses to let go, does not count:
        ``--once`` must not wait on another program.
        """
        self._recheck_at = None
        return bool(self.claimable_names()) or self._recheck_at is not None

    def _scan(self) -> list[_Entry]:
        entries = []
        try:
            with os.scandir(self.home.inbox) as scan:
                for entry in scan:
                    if not is_candidate(entry.name):
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        continue
                    regular = stat.S_ISREG(info.st_mode)
                    linked = regular and info.st_nlink > 1
                    entries.append(
                        _Entry(info.st_mtime_ns, entry.name, regular, linked, info.st_ctime_ns)
                    )
        except FileNotFoundError:
            return []
        return sorted(entries)

    def _claimable(self, entry: _Entry) -> bool:
        if self._unclaimable.get(entry.name) == entry.mtime_ns:
            return False  # its rename failed and it has not changed since
        if entry.linked and self._settling(entry.ctime_ns):
            # A writer that links its temp file into place (an exclusive write) unlinks the
            # temp name a moment later; a file that keeps two names is set aside after this.
            return False
        # Anything but a regular file is claimed at once, to be set aside with its reason.
        return not entry.regular or self._ready(entry.name, entry.mtime_ns)

    def _ready(self, name: str, mtime_ns: int) -> bool:
        """Whether the writer of ``inbox/name`` is done with it."""
        busy = open_for_writing(self.home.inbox / name)
        if busy is not None:
            return not busy  # still open: its close is an inotify event that wakes the daemon
        return not self._settling(mtime_ns)

    def _settling(self, changed_ns: int) -> bool:
        """Whether a change at ``changed_ns`` is too recent to trust; if so, look again later."""
        wait = changed_ns / 1e9 + self.settings.settle_seconds - time.time()
        if wait <= 0:
            return False
        recheck = time.monotonic() + wait
        self._recheck_at = min(self._recheck_at or recheck, recheck)
        return True

    def next_look(self) -> float | None:
        """``time.monotonic()`` at which settling files or stranded claims want a look."""
        times = [c.retry_at for c in self._stranded.values()]
        if self._recheck_at is not None:
            times.append(self._recheck_at)
        return min(times, default=None)

    # -- claiming ---------------------------------------------------------------------------

    def claim_all(self) -> list[Claim]:
        """Claim every ready inbox file, then retry stranded claims that are due."""
        self._recheck_at = None
        claims = []
        for entry in self._scan():
            if self._claimable(entry) and (claim := self.claim(entry.name, entry.mtime_ns)):
                claims.append(claim)
        self.retry_stranded()
        return claims

    def claim(self, name: str, mtime_ns: int | None = None) -> Claim | None:
        """Move ``inbox/name`` into the claimed folder and admit it to the ledger."""
        target = self.home.claimed / claimed_name(name)
        try:
            os.rename(self.home.inbox / name, target)
        except FileNotFoundError:
            return None  # taken away by its writer, or by a concurrent claim
        except OSError as exc:  # e.g. inbox/ on another filesystem: it stays for a later scan
            if name not in self._unclaimable:
                logger.error("cannot claim %s: %s", display_name(name), exc)
            self._unclaimable[name] = mtime_ns if mtime_ns is not None else -1
            return None
        self._unclaimable.pop(name, None)
        return self._admit_or_strand(target, name)

    def admit(self, claimed: Path, name: str | None = None) -> Claim:
        """Read, parse and record a claimed file (also used by recovery).

        Raises only for faults of the disk or the database; an unusable file is set aside.
        """
        name = original_name(claimed) if name is None else name
        try:
            file = read_regular_file(claimed, self.settings.max_message_bytes)
            modified = datetime.fromtimestamp(file.mtime_ns / 1e9, UTC)
            message = parse_message(name, file.data, modified=modified)
        except MessageError as exc:
            return self._reject(claimed, name, str(exc))
        channel = self._channel_for(message)
        admission = self.ledger.admit(message, channel=channel, claimed_path=claimed)
        if admission is Admission.CONFLICT:
            return self._reject(claimed, name, "id reused with different content", message)
        if admission is Admission.DUPLICATE:
            self._skip_duplicate(claimed, message, channel)
            return Claim(name, admission, message)
        logger.info(
            "claimed %s as message %s (channel %s)", message.source_name, message.id, channel
        )
        self.plugins.notify("message_received", message=message.with_channel(channel))
        return Claim(name, admission, message)

    def _skip_duplicate(self, claimed: Path, message: Message, channel: str) -> None:
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
        _remove(claimed)

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
        failed = self._move_to_failed(claimed, name, reason)
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

    def _admit_or_strand(self, claimed: Path, name: str) -> Claim | None:
        try:
            claim = self.admit(claimed, name)
        except Exception as exc:  # a fault of the disk or the database, not of the file
            self._strand(claimed, name, exc)
            return None
        if self._stranded.pop(claimed, None) is not None:
            logger.info("stranded claim %s is taken now", claimed.name)
            self._save_stranded()
        return claim

    def _strand(self, claimed: Path, name: str, exc: Exception) -> None:
        error = " ".join(str(exc).split()) or type(exc).__name__
        previous = self._stranded.get(claimed)
        attempts = previous.attempts + 1 if previous else 1
        delay = min(0.5 * 2 ** (attempts - 1), STRANDED_MAX_DELAY)
        self._stranded[claimed] = StrandedClaim(
            file=str(claimed),
            source_name=display_name(name),
            attempts=attempts,
            last_error=f"{type(exc).__name__}: {error}",
            since=previous.since if previous else iso(datetime.now(UTC)),
            next_attempt_at=iso(datetime.now(UTC) + timedelta(seconds=delay)),
            retry_at=time.monotonic() + delay,
        )
        logger.error(
            "claimed %s but could not take it in (%s: %s); trying again in %.1fs",
            display_name(name),
            type(exc).__name__,
            error,
            delay,
        )
        self._save_stranded()

    def retry_stranded(self) -> None:
        """Try again every stranded claim that is due."""
        now = time.monotonic()
        for path, stranded in list(self._stranded.items()):
            if stranded.retry_at > now:
                continue
            if not path.exists():
                del self._stranded[path]
                self._save_stranded()
                continue
            self._admit_or_strand(path, stranded.source_name)

    @property
    def stranded(self) -> list[StrandedClaim]:
        return list(self._stranded.values())

    def _save_stranded(self) -> None:
        """Tell ``smarthole status`` (another process) what is stranded; best effort."""
        path = self.home.stranded_file
        try:
            if not self._stranded:
                path.unlink(missing_ok=True)
                return
            items = [claim.shown() for claim in self._stranded.values()]
            atomic_write(path, json.dumps(items, indent=1).encode())
        except OSError as exc:  # the disk that stranded the claim may refuse this too
            logger.debug("cannot write %s: %s", path, exc)

    # -- endings ----------------------------------------------------------------------------

    def release(self, entry: LedgerEntry) -> None:
        """The final reply is written: the claimed file has served its purpose."""
        if entry.claimed_path is not None:
            _remove(entry.claimed_path)
        self.ledger.clear_claim(entry.id)

    def set_aside(self, entry: LedgerEntry, reason: str, *, attempts: int | None = None) -> Path:
        """A message that cannot be answered: its file goes to ``failed/`` with the reason."""
        details = [reason]
        if attempts is not None:
            details += [
                f"attempts: {attempts}",
                f"first received: {iso(entry.received_at)}",
                f"given up: {self.store.now()}",
                f"message id: {entry.id}",
                f"retry with: smarthole retry {entry.id}",
            ]
        name = entry.message.source_name
        claimed = entry.claimed_path
        if claimed is None or not claimed.exists():
            # The file is gone (a crash after it moved); the ledger has its text.
            claimed = self.home.claimed / claimed_name(name)
            atomic_write(claimed, render_message_file(entry.message.text, id=entry.id))
        failed = self._move_to_failed(claimed, name, "\n".join(details))
        self.ledger.set_status(
            entry.id, "dead", last_error=reason, failed_path=str(failed), claimed_path=None
        )
        return failed

    def _move_to_failed(self, claimed: Path, name: str, reason: str) -> Path:
        self.home.failed.mkdir(parents=True, exist_ok=True)
        fitted = fit_name(display_name(name), FAILED_NAME_MAX)
        if fitted != name:
            reason = f"{reason.strip()}\noriginal name: {display_name(name)}"
        target = unique_path(self.home.failed, fitted)
        atomic_write(target.with_name(target.name + ERROR_SUFFIX), (reason.strip() + "\n").encode())
        move_durably(claimed, target)
        make_private(target)  # the writer's mode may have let others read it
        return target

    # -- recovery ---------------------------------------------------------------------------

    def recover(self) -> int:
        """Finish what a crash left in the claimed folder; returns how many files it handled.

        Nothing here is fatal: a file that cannot be taken in is stranded and retried.
        """
        self._save_stranded()  # forget what a previous run reported
        known = self.ledger.claimed_paths()
        handled = 0
        for entry in self.ledger.answered_with_claims():
            self.release(entry)
            handled += 1
        for path in sorted(self.home.claimed.iterdir()) if self.home.claimed.exists() else []:
            if str(path) in known or not is_candidate(path.name):
                continue
            logger.info("recovering claimed file %s left by a stop", path.name)
            self._admit_or_strand(path, original_name(path))
            handled += 1
        return handled

    # -- watching ---------------------------------------------------------------------------

    def watch(self, wake: Callable[[], None]) -> Watcher:
        return Watcher(self.home.inbox, wake)


class Watcher:
    """Wakes the daemon on any change in the inbox folder (watchdog)."""

    def __init__(self, folder: Path, wake: Callable[[], None]) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                wake()

        self._observer = Observer()
        self._observer.daemon = True
        self._observer.schedule(Handler(), str(folder), recursive=False)

    def start(self) -> None:
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        fsync_dir(path.parent)
