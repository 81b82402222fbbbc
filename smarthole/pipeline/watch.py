"""What is in the inbox folder, which of it is ready to claim, and the watcher that wakes us.

Filesystem events (watchdog, the only importer of it) are hints that wake the daemon; a scan
of the folder is the truth. Writers rename finished files into ``inbox/``; dotfiles and names
ending ``.tmp`` or ``.part`` are someone's work in progress and are left alone. A file
written in place is ready once its writer has closed it (Linux tells through a read lease);
elsewhere, or for a file another user owns, once it has not changed for ``settle_seconds``.
A folder is a folder message (``incoming``): ready once no file in it is open for writing
(or, where that cannot be told, changed lately); an empty one once it has settled.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..fsutil import child, open_for_writing

if TYPE_CHECKING:
    from ..config import InboxSettings

IGNORED_SUFFIXES = (".tmp", ".part")
# Another process changed the store (`smarthole retry`, `schedule run`, the web view's buttons):
# it touches and removes this file, and the running daemon's watcher wakes its loop at once.
WAKE_FILE = ".smarthole-wake"
FOLDER_FILES_LOOKED_AT = 256  # a folder message holds a text file and at most a few dozen


def is_candidate(name: str) -> bool:
    """Whether an inbox entry name is a message to claim (not a temp file or a dotfile)."""
    return not name.startswith(".") and not name.lower().endswith(IGNORED_SUFFIXES)


@dataclass(frozen=True, order=True)
class InboxEntry:
    """An inbox entry seen by a scan; entries sort oldest first, then by name."""

    mtime_ns: int
    name: str
    regular: bool
    linked: bool  # a regular file with more than one name
    ctime_ns: int
    folder: bool = False


class InboxFolder:
    """Scans ``inbox/`` and says which entries a claim may take now."""

    def __init__(self, folder: Path, settings: InboxSettings) -> None:
        self.folder = folder
        self.settings = settings
        self._unclaimable: dict[str, int] = {}  # inbox name -> mtime_ns when its rename failed
        self._recheck_at: float | None = None  # time.monotonic() to look at settling files again

    def start_pass(self) -> None:
        """A new look at the folder: forget when settling files wanted another look."""
        self._recheck_at = None

    def refused(self, name: str, mtime_ns: int | None) -> bool:
        """The folder would not let ``name`` go; returns whether this is news."""
        news = name not in self._unclaimable
        self._unclaimable[name] = mtime_ns if mtime_ns is not None else -1
        return news

    def taken(self, name: str) -> None:
        self._unclaimable.pop(name, None)

    def next_recheck(self) -> float | None:
        return self._recheck_at

    def claimable_names(self) -> list[str]:
        """Pending names that a claim could take now: ready, and not refused by the folder."""
        return [entry.name for entry in self.scan() if self.claimable(entry)]

    def has_work(self) -> bool:
        """For ``--once``: a file a claim could take now, or once it has settled.

        A file still open for writing, or one the folder refuses to let go, does not count:
        ``--once`` must not wait on another program.
        """
        self._recheck_at = None
        return bool(self.claimable_names()) or self._recheck_at is not None

    def scan(self) -> list[InboxEntry]:
        entries = []
        try:
            with os.scandir(self.folder) as scan:
                for entry in scan:
                    if not is_candidate(entry.name):
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    folder = stat.S_ISDIR(info.st_mode)
                    regular = stat.S_ISREG(info.st_mode)
                    linked = regular and info.st_nlink > 1
                    entries.append(
                        InboxEntry(
                            info.st_mtime_ns, entry.name, regular, linked, info.st_ctime_ns, folder
                        )
                    )
        except FileNotFoundError:
            return []
        return sorted(entries)

    def claimable(self, entry: InboxEntry) -> bool:
        if self._unclaimable.get(entry.name) == entry.mtime_ns:
            return False  # its rename failed and it has not changed since
        if entry.linked and self._settling(entry.ctime_ns):
            # A writer that links its temp file into place (an exclusive write) unlinks the
            # temp name a moment later; a file that keeps two names is set aside after this.
            return False
        if entry.folder:
            return self._folder_ready(entry)
        # Anything but a regular file is claimed at once, to be set aside with its reason.
        return not entry.regular or self._ready(entry.name, entry.mtime_ns)

    def _folder_ready(self, entry: InboxEntry) -> bool:
        """Whether a folder message's writer is done with it: every file in it closed."""
        folder = child(self.folder, entry.name)
        try:
            with os.scandir(folder) as scan:
                entries = list(itertools.islice(scan, FOLDER_FILES_LOOKED_AT + 1))
            files = [(f.name, f.stat(follow_symlinks=False)) for f in entries]
        except OSError:
            return True  # gone or unreadable: the claim decides
        if len(files) > FOLDER_FILES_LOOKED_AT:
            return True  # far more than a message may hold: taken, to be set aside
        if not files:
            return not self._settling(entry.mtime_ns)
        for name, info in files:
            if not stat.S_ISREG(info.st_mode):
                continue
            busy = open_for_writing(child(folder, name))
            if busy:  # its close is in a subfolder, unheard: the next rescan takes it
                return False
            if busy is None and self._settling(info.st_mtime_ns):
                return False
        return True

    def _ready(self, name: str, mtime_ns: int) -> bool:
        """Whether the writer of ``inbox/name`` is done with it."""
        busy = open_for_writing(child(self.folder, name))
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


def wake_daemon(inbox: Path) -> None:
    """Nudge a daemon running on this inbox to look at its queue and schedules now (its
    watcher sees :data:`WAKE_FILE` come and go); nothing happens when none runs."""
    path = inbox / WAKE_FILE
    with contextlib.suppress(OSError):
        path.touch()
        path.unlink()


class Watcher:
    """Wakes the daemon on any change in the inbox folder (watchdog); ``nudged`` too when the
    change is :data:`WAKE_FILE` (another process changed the store)."""

    def __init__(
        self, folder: Path, wake: Callable[[], None], nudged: Callable[[], None] | None = None
    ) -> None:
        from watchdog import events
        from watchdog.observers import Observer

        _unpair_moves()

        class Handler(events.FileSystemEventHandler):
            def on_any_event(self, event: events.FileSystemEvent) -> None:
                name = os.path.basename(os.fsdecode(event.src_path))
                if nudged is not None and name == WAKE_FILE:
                    nudged()
                wake()

        # Every change, but not opens and closes without a write: they never bring work,
        # and the claim's own look at a file (its lease check) made two of them per message,
        # each a needless turn of the daemon's loop.
        changes = [
            events.FileCreatedEvent,
            events.FileMovedEvent,
            events.FileModifiedEvent,
            events.FileAttribEvent,
            events.FileClosedEvent,
            events.FileDeletedEvent,
            events.DirCreatedEvent,
            events.DirMovedEvent,
            events.DirModifiedEvent,
            events.DirAttribEvent,
            events.DirDeletedEvent,
        ]
        self._observer = Observer()
        self._observer.daemon = True
        self._observer.schedule(Handler(), str(folder), recursive=False, event_filter=changes)

    def start(self) -> None:
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)


def _unpair_moves() -> None:
    """Have watchdog pass on inotify's ``IN_MOVED_FROM`` at once instead of after 0.5 s.

    watchdog holds each ``IN_MOVED_FROM`` for ``InotifyMoveEventGrouper.delay`` to pair it with
    an ``IN_MOVED_TO`` into one moved event, and every event behind it in its queue waits too.
    Each claim is a rename out of ``inbox/``, so a file arriving just after a claim waited up
    to half a second to be seen. Events only wake the daemon to look at the folder; pairing
    them buys nothing here. (A class setting, so it holds for every observer of the process.)
    """
    try:
        from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper
    except (ImportError, OSError):  # not Linux: no inotify, no grouper
        return
    InotifyMoveEventGrouper.delay = 0
