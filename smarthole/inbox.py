"""The inbox folder: watching it, claiming files, and setting bad ones aside.

Writers rename finished files into ``inbox/``; dotfiles and names ending ``.tmp`` or ``.part``
are someone's work in progress and are left alone, as are folders. Filesystem events (watchdog)
are only hints that wake the daemon: a scan of the folder is the truth.

Claiming moves a file atomically into ``.smarthole/claimed/`` before anything else happens,
then records it in the ledger. The claimed file is deleted only once the message's final
outbox file is written, or moved to ``failed/`` (with ``<name>.error.txt``) when the message
cannot be answered.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import MessageError
from .fsutil import atomic_write, fsync_dir, move_durably, unique_path
from .ledger import Admission
from .message import DEFAULT_CHANNEL, Message, iso, parse_message, render_message_file

if TYPE_CHECKING:
    from .config import Home, InboxSettings
    from .events import EventLog
    from .ledger import Ledger, LedgerEntry
    from .plugins import Plugins
    from .store import Store

logger = logging.getLogger(__name__)

IGNORED_SUFFIXES = (".tmp", ".part")
UNSAFE_IN_NAMES = re.compile(r"[^\w.@+-]")
CLAIM_SEPARATOR = "--"


def is_candidate(name: str) -> bool:
    """Whether an inbox entry name is a message to claim (not a temp file or a dotfile)."""
    return not name.startswith(".") and not name.lower().endswith(IGNORED_SUFFIXES)


def original_name(claimed: Path) -> str:
    """The inbox name of a claimed file (claimed names are ``<stamp>--<name>``)."""
    return claimed.name.split(CLAIM_SEPARATOR, 1)[-1]


def drop_message(inbox: Path, text: str, *, message_id: str, **fields: Any) -> Path:
    """Write a message file into ``inbox`` atomically (temp name, then rename)."""
    inbox.mkdir(parents=True, exist_ok=True)
    stamp = iso(datetime.now(UTC)).replace(":", "-")
    path = inbox / f"{stamp}-{UNSAFE_IN_NAMES.sub('_', message_id)[:80]}.md"
    atomic_write(path, render_message_file(text, id=message_id, **fields), exclusive=True)
    return path


@dataclass(frozen=True)
class Claim:
    """The outcome of claiming one file."""

    name: str
    admission: Admission | None
    message: Message | None = None
    reason: str | None = None


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

    # -- claiming ---------------------------------------------------------------------------

    def pending_names(self) -> list[str]:
        """Inbox entries that look like messages, oldest first (by mtime, then name)."""
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
                    entries.append((info.st_mtime_ns, entry.name))
        except FileNotFoundError:
            return []
        return [name for _, name in sorted(entries)]

    def claim_all(self) -> list[Claim]:
        return [claim for name in self.pending_names() if (claim := self.claim(name))]

    def claim(self, name: str) -> Claim | None:
        """Move ``inbox/name`` into the claimed folder and admit it to the ledger."""
        source = self.home.inbox / name
        try:
            info = source.lstat()
        except FileNotFoundError:
            return None  # taken away by its writer, or by a concurrent claim
        target = self.home.claimed / f"{time.time_ns():x}{CLAIM_SEPARATOR}{name}"
        try:
            os.rename(source, target)
        except FileNotFoundError:
            return None
        except OSError as exc:  # e.g. inbox/ on another filesystem: it stays for a later scan
            logger.error("cannot claim %s: %s", name, exc)
            return None
        if not stat.S_ISREG(info.st_mode):
            return self._reject(target, "not a regular file")
        if info.st_size > self.settings.max_message_bytes:
            return self._reject(
                target,
                f"larger than max_message_bytes ({info.st_size} > "
                f"{self.settings.max_message_bytes} bytes)",
            )
        return self.admit(target, info.st_mtime)

    def admit(self, claimed: Path, mtime: float) -> Claim:
        """Parse a claimed file and record it in the ledger (also used by recovery)."""
        name = original_name(claimed)
        try:
            message = parse_message(
                name, claimed.read_bytes(), modified=datetime.fromtimestamp(mtime, UTC)
            )
        except MessageError as exc:
            return self._reject(claimed, str(exc))
        except OSError as exc:
            return self._reject(claimed, f"cannot be read: {exc.strerror or exc}")
        channel = self._channel_for(message)
        admission = self.ledger.admit(message, channel=channel, claimed_path=claimed)
        if admission is Admission.CONFLICT:
            return self._reject(claimed, "id reused with different content", message)
        if admission is Admission.DUPLICATE:
            logger.info("duplicate of message %s (%s) removed from the inbox", message.id, name)
            self.events.emit(
                "message_duplicate", channel=channel, message_id=message.id, source_name=name
            )
            _remove(claimed)
            return Claim(name, admission, message)
        logger.info("claimed %s as message %s (channel %s)", name, message.id, channel)
        self.plugins.notify("message_received", message=message.with_channel(channel))
        return Claim(name, admission, message)

    def _channel_for(self, message: Message) -> str:
        if message.channel:
            return message.channel
        if message.conversation:
            conversation = self.store.conversation(message.conversation)
            if conversation is not None:
                return conversation.channel
        return DEFAULT_CHANNEL

    def _reject(self, claimed: Path, reason: str, message: Message | None = None) -> Claim:
        name = original_name(claimed)
        failed = self._move_to_failed(claimed, name, reason)
        logger.warning("set aside %s: %s (see %s)", name, reason, failed)
        self.events.emit(
            "message_rejected",
            message_id=message.id if message else None,
            source_name=name,
            reason=reason,
            path=str(failed),
        )
        return Claim(name, None, message, reason)

    # -- endings ----------------------------------------------------------------------------

    def release(self, entry: LedgerEntry) -> None:
        """The final reply is written: the claimed file has served its purpose."""
        if entry.claimed_path is not None:
            _remove(entry.claimed_path)
        with self.store.transaction() as db:
            db.execute("UPDATE inbox SET claimed_path = NULL WHERE message_id = ?", (entry.id,))

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
        claimed = entry.claimed_path
        if claimed is None or not claimed.exists():
            # The file is gone (a crash after it moved); the ledger has its text.
            claimed = (
                self.home.claimed / f"{time.time_ns():x}{CLAIM_SEPARATOR}"
                f"{entry.message.source_name}"
            )
            atomic_write(claimed, render_message_file(entry.message.text, id=entry.id))
        failed = self._move_to_failed(claimed, entry.message.source_name, "\n".join(details))
        self.ledger.set_status(
            entry.id, "dead", last_error=reason, failed_path=str(failed), claimed_path=None
        )
        return failed

    def _move_to_failed(self, claimed: Path, name: str, reason: str) -> Path:
        self.home.failed.mkdir(parents=True, exist_ok=True)
        target = unique_path(self.home.failed, name)
        atomic_write(target.with_name(target.name + ".error.txt"), (reason.strip() + "\n").encode())
        move_durably(claimed, target)
        return target

    # -- recovery ---------------------------------------------------------------------------

    def recover(self) -> int:
        """Finish what a crash left in the claimed folder; returns how many files it handled."""
        known = self.ledger.claimed_paths()
        handled = 0
        for entry in self.ledger.answered_with_claims():
            self.release(entry)
            handled += 1
        for path in sorted(self.home.claimed.iterdir()) if self.home.claimed.exists() else []:
            if str(path) in known or not is_candidate(path.name):
                continue
            logger.info("recovering claimed file %s left by a stop", path.name)
            self.admit(path, path.lstat().st_mtime)
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
