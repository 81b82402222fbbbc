"""Durable file operations: every write is temp file, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def temp_name(target: Path) -> Path:
    """A hidden temp name beside ``target``; the inbox scanner ignores dotfiles and ``.tmp``."""
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


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


def atomic_write(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never a part.

    With ``exclusive`` the write fails with ``FileExistsError`` if ``path`` exists, even when
    another process creates it concurrently (the temp file is hard-linked into place).
    """
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
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
