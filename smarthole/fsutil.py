"""Durable and careful file operations: every write is temp file, fsync, rename.

Files smarthole writes for itself are private (0600) whatever the umask: replies, failed
messages and their reasons can hold anything a person said.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import MessageError

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
READ_CHUNK = 64 * 1024  # below malloc's mmap threshold: a heap block, not a mapping
NAME_MAX = 255  # bytes in one path component on every filesystem smarthole supports
HEAD_BYTES = 16  # what ``read_regular_file``'s ``limit_for`` is shown of a file


def child(folder: Path, name: str) -> Path:
    """``folder / name`` for a file name of one message, without pathlib interning it.

    pathlib up to Python 3.13 interns every component it parses, and on 3.12.0-3.12.6 an
    interned string is never freed (python/cpython#121780): parsing the four new file names
    of each message (inbox, claimed, outbox and its temp file) kept about 400 bytes a message
    for good (measured on 3.12.1). ``iterdir`` builds its paths without parsing, and so does
    this (a private method, looked up rather than assumed; 3.13 dropped it, and no longer
    leaks).
    ``name`` is one plain component.
    """
    make = getattr(folder, "_make_child_relpath", None)
    return make(name) if make is not None else folder / name


def stored_path(text: str) -> Path:
    """A path stored as text whose last component is a per-message file name (see
    :func:`child`)."""
    folder, sep, name = text.rpartition(os.sep)
    return child(Path(folder or os.sep), name) if sep else Path(text)


def temp_name(target: Path) -> Path:
    """A hidden temp name beside ``target``; the inbox scanner ignores dotfiles and ``.tmp``."""
    hidden = f".{fit_name(target.name, NAME_MAX - 15)}.{secrets.token_hex(4)}.tmp"
    return child(target.parent, hidden)


def fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in ``folder`` durable."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on directories; nothing more to do
        pass
    finally:
        os.close(fd)


def atomic_write(
    path: Path, data: bytes, *, exclusive: bool = False, mode: int | None = PRIVATE_FILE
) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never a part.

    With ``exclusive`` the write fails with ``FileExistsError`` if ``path`` exists, even when
    another process creates it concurrently (the temp file is hard-linked into place). The
    file gets ``mode`` exactly; ``mode=None`` leaves it to the umask (the user's own files).
    """
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        if mode is not None:
            os.fchmod(fd, mode)  # the umask may have taken bits away; never adds any here
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_new_files(
    files: Sequence[tuple[Path, bytes]], *, mode: int = PRIVATE_FILE
) -> list[OSError | None]:
    """Create many new files durably at the cost of one directory sync per folder.

    :func:`atomic_write` with ``exclusive``, for a batch: each file is written to a temp name
    and fsynced, then all are linked into place, then each folder is fsynced once. A file
    fails alone (its error in the answer, ``None`` where it was written); no temp file stays.
    """
    errors: list[OSError | None] = [None] * len(files)
    temps: list[Path | None] = []
    for index, (path, data) in enumerate(files):
        try:
            temps.append(_write_synced(path, data, mode))
        except OSError as exc:
            errors[index] = exc
            temps.append(None)
    folders = []
    for index, ((path, _), tmp) in enumerate(zip(files, temps, strict=True)):
        if tmp is None:
            continue
        try:
            os.link(tmp, path)
        except OSError as exc:
            errors[index] = exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if errors[index] is None and path.parent not in folders:
            folders.append(path.parent)
    for folder in folders:
        fsync_dir(folder)
    return errors


def _write_synced(path: Path, data: bytes, mode: int) -> Path:
    """``data`` in a new temp file beside ``path``, on disk; returns the temp file."""
    tmp = temp_name(path)
    handle = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb")
    try:
        with handle:
            os.fchmod(handle.fileno(), mode)  # the umask may have taken bits away
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def unique_path(folder: Path, name: str) -> Path:
    """``folder/name``, or ``folder/stem-N.suffix`` for the first N that is free."""
    candidate = folder / name
    stem, suffix = os.path.splitext(name)
    n = 1
    while candidate.exists() or candidate.is_symlink():
        candidate = folder / f"{stem}-{n}{suffix}"
        n += 1
    return candidate


def move_durably(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target`` (same filesystem) and make both folders durable."""
    os.replace(source, target)
    fsync_dir(target.parent)
    if source.parent != target.parent:
        fsync_dir(source.parent)


def make_private(path: Path, mode: int = PRIVATE_FILE) -> None:
    """Give a file or folder of smarthole's own ``mode``, if it exists (a folder gets
    ``PRIVATE_FOLDER``, and its files ``mode``)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            os.chmod(path, PRIVATE_FOLDER)
            for entry in os.scandir(path):
                if entry.is_file(follow_symlinks=False):
                    os.chmod(entry.path, mode, follow_symlinks=False)
            return
        os.chmod(path, mode, follow_symlinks=False)


def remove_entry(path: Path) -> None:
    """Remove a file, or a folder message (a folder of files), if it exists."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def fit_name(name: str, limit: int = NAME_MAX) -> str:
    """``name`` if it fits in ``limit`` bytes, else a shortened name that is still unique.

    The shortened name keeps the start and the extension and puts a hash of the whole name
    between them, so two long names that differ only at the end stay two names.
    """
    raw = os.fsencode(name)
    if len(raw) <= limit:
        return name
    stem, suffix = os.path.splitext(raw)
    if len(suffix) > 16:
        stem, suffix = raw, b""
    tag = b"~" + hashlib.sha256(raw).hexdigest()[:12].encode()
    keep = max(0, limit - len(tag) - len(suffix))
    while 0 < keep < len(stem) and stem[keep] & 0xC0 == 0x80:
        keep -= 1  # never cut a UTF-8 character in two
    return os.fsdecode(stem[:keep] + tag + suffix)


@dataclass(frozen=True)
class RegularFile:
    """The bytes of a file read through one descriptor, and what ``fstat`` said of it."""

    data: bytes
    mtime_ns: int


# POSIX record locks belong to a process and a file, not to a descriptor: closing *any*
# descriptor of a file drops every lock this process holds on it, SQLite's included (SQLite's
# "How To Corrupt", section 2.2). A file dropped into the inbox may be a hard link of the
# store's database or WAL, so the store's files are named here (by ``guard_store_file``) and
# a descriptor found to be one of them is kept open, never closed: process-wide, as the locks.
_guarded: set[Path] = set()
_held: list[int] = []


def guard_store_file(path: Path) -> None:
    """Never close a descriptor of ``path``'s file (a database file SQLite holds) that
    :func:`read_regular_file` or :func:`open_for_writing` opened under another name."""
    _guarded.add(path)


def _is_guarded(info: os.stat_result) -> bool:
    for path in _guarded:
        try:
            known = os.stat(path)
        except OSError:
            continue
        if (known.st_dev, known.st_ino) == (info.st_dev, info.st_ino):
            return True
    return False


def _let_go(fd: int) -> None:
    """Close ``fd``, unless it is a descriptor of a guarded file: then keep it, locks intact."""
    try:
        guarded = _is_guarded(os.fstat(fd))
    except OSError:
        guarded = False
    if guarded:
        _held.append(fd)
    else:
        os.close(fd)


def _refused_unopened(path: Path) -> str | None:
    """Why ``path`` is refused before any descriptor of it is opened (see ``_guarded``)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None  # the open says what is wrong
    if stat.S_ISREG(info.st_mode) and info.st_nlink != 1:
        return "hard-linked file (refused: see the README)"
    return None


def read_regular_file(
    path: Path,
    limit: int,
    *,
    limit_name: str = "max_message_bytes",
    limit_for: Callable[[bytes], tuple[int, str]] | None = None,
) -> RegularFile:
    """Read ``path`` if, and only if, it is a regular file of its own of at most ``limit`` bytes.

    One descriptor, opened without following a symbolic link and without blocking on a FIFO,
    is checked with ``fstat`` and then read, so what is checked is what is read even if the
    name is swapped meanwhile. Refusals raise ``MessageError`` with the reason; other failures
    (EIO, ...) raise ``OSError``.

    A hard-linked file is refused: its content is also reachable under another name, perhaps
    outside the home, so a person who may only write into the inbox could have smarthole read
    (and send to the model) a file they cannot read themselves, and the writer under the other
    name can still change it after it was taken.
    """
    if (refusal := _refused_unopened(path)) is not None:
        raise MessageError(refusal)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        # ELOOP: a symlink (O_NOFOLLOW); ENXIO: a socket or a FIFO's missing writer side.
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EMLINK, errno.EOPNOTSUPP):
            raise MessageError("not a regular file") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MessageError("not a regular file")
        if info.st_nlink != 1:
            raise MessageError("hard-linked file (refused: see the README)")
        if limit_for is not None:
            limit, limit_name = limit_for(os.pread(fd, HEAD_BYTES, 0))
        if info.st_size > limit:
            raise MessageError(_too_large(info.st_size, limit, limit_name))
        chunks = []
        remaining = limit + 1  # one byte more tells a file that grew after the fstat
        # os.read allocates what it is asked for: a message of a few hundred bytes read with a
        # 1 MiB buffer cost an mmap, an mremap and an munmap, twice counting the read of EOF.
        want = info.st_size + 1
        while remaining > 0 and (chunk := os.read(fd, min(remaining, want))):
            chunks.append(chunk)
            remaining -= len(chunk)
            want = READ_CHUNK  # what it grew by since the fstat, if anything
        data = b"".join(chunks)
        if len(data) > limit:
            raise MessageError(_too_large(len(data), limit, limit_name))
        return RegularFile(data=data, mtime_ns=info.st_mtime_ns)
    finally:
        _let_go(fd)


def _too_large(size: int, limit: int, limit_name: str = "max_message_bytes") -> str:
    return f"larger than {limit_name} ({size} > {limit} bytes)"


def open_for_writing(path: Path) -> bool | None:
    """Whether another process still has ``path`` open for writing; None when it cannot tell.

    Linux answers through a read lease, which the kernel refuses (EAGAIN) while the file is
    open for writing anywhere; the lease is let go at once. Elsewhere, or for a file the
    daemon does not own, or on a filesystem without leases, the answer is None.
    """
    import fcntl

    set_lease = getattr(fcntl, "F_SETLEASE", None)
    if set_lease is None or _refused_unopened(path) is not None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None  # gone or unusual: the claim that follows decides
    try:
        fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
    except OSError as exc:
        return True if exc.errno == errno.EAGAIN else None
    else:
        fcntl.fcntl(fd, set_lease, fcntl.F_UNLCK)
        return False
    finally:
        _let_go(fd)
