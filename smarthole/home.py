"""The home folder: where one agent's files live, and the lock that gives it one daemon.

The lock is an OS file lock held for the daemon's whole life. ``flock`` locks vanish with the
process that held them, so a crash never leaves a stale lock behind (unlike a PID file). The
holder's pid is written into the file for messages only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import AlreadyRunning
from .fsutil import PRIVATE_FOLDER

HOME_ENV = "SMARTHOLE_HOME"
DEFAULT_HOME = Path("~/SmartHole")


class _Under:
    """A path inside the home, read like an attribute: ``home.inbox`` is ``root/inbox``."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __get__(self, home: Home, owner: type[Home] | None = None) -> Path:
        return home.root.joinpath(*self.parts)


@dataclass(frozen=True)
class Home:
    """The folder that holds one agent, and the paths inside it."""

    root: Path

    @classmethod
    def resolve(cls, arg: str | os.PathLike[str] | None = None) -> Home:
        """``--home`` if given, else ``$SMARTHOLE_HOME``, else ``~/SmartHole``."""
        chosen = arg or os.environ.get(HOME_ENV) or DEFAULT_HOME
        return cls(Path(chosen).expanduser().absolute())

    config_file = _Under("config.toml")
    inbox = _Under("inbox")
    outbox = _Under("outbox")
    failed = _Under("failed")
    workspace = _Under("workspace")
    state = _Under(".smarthole")
    database = _Under(".smarthole", "smarthole.db")
    claimed = _Under(".smarthole", "claimed")
    blobs = _Under(".smarthole", "blobs")  # attachments, content-addressed (attachments.blobs)
    lock_file = _Under(".smarthole", "daemon.lock")
    stranded_file = _Under(".smarthole", "stranded.json")

    def folders(self) -> list[Path]:
        return [self.inbox, self.outbox, self.failed, self.workspace, self.state, self.claimed]

    def ensure(self) -> None:
        """Create every folder of the home that does not exist yet.

        ``.smarthole/`` holds every word of every conversation: it is private (0700) whatever
        the umask, and made so again if someone opened it up. The other folders are the
        user's and keep the umask.
        """
        for folder in self.folders():
            folder.mkdir(parents=True, exist_ok=True)
        if stat.S_IMODE(self.state.stat().st_mode) != PRIVATE_FOLDER:
            os.chmod(self.state, PRIVATE_FOLDER)


class HomeLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``AlreadyRunning`` naming the holder's pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunning(read_pid(self.path)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


def holder(path: Path) -> int | None:
    """The pid of the daemon holding the lock at ``path``, or None if nobody holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_pid(path) or -1
    finally:
        os.close(fd)
    return None


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None
