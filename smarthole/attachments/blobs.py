"""The blob store: each attachment's bytes once, named by their SHA-256.

``.smarthole/blobs/sha256/<first 2 hex>/<other 62>``, private (0600), written through a temp
file, fsynced and renamed, and the folder fsynced, **before** the message row that names the
blob commits: a crash leaves at worst a blob no message names, which housekeeping removes.
The same bytes sent twice are stored once; storing them again only refreshes the blob's time,
so housekeeping never removes a blob that a message about to commit is going to name.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Set
from pathlib import Path

from ..fsutil import PRIVATE_FOLDER, atomic_write, fsync_dir
from .kinds import SHA256

logger = logging.getLogger(__name__)

ALGORITHM = "sha256"
GRACE_SECONDS = 3600.0
"""Housekeeping leaves blobs (and temp files) younger than this: a message that is being
taken in may have written its blobs and not yet committed."""


class BlobStore:
    """The blobs under ``root`` (``.smarthole/blobs``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Storing and removing one blob never interleave in this process: housekeeping's look
        # at a blob's age and its removal happen together, and a store that only refreshes a
        # blob's time cannot fall between them.
        self._lock = threading.Lock()

    def path(self, sha256: str) -> Path:
        if not SHA256.fullmatch(sha256):
            raise ValueError(f"{sha256!r} is not a sha256")
        return self.root / ALGORITHM / sha256[:2] / sha256[2:]

    def put(self, data: bytes) -> str:
        """Store ``data`` (durably, before returning) and return its hash."""
        sha256 = hashlib.sha256(data).hexdigest()
        path = self.path(sha256)
        with self._lock:
            try:
                os.utime(path)  # already stored: only keep it young (see GRACE_SECONDS)
                return sha256
            except FileNotFoundError:
                pass
            self._folder(path.parent)
            atomic_write(path, data)
        return sha256

    def _folder(self, folder: Path) -> None:
        """Make ``folder`` and its parents (private), each new one durable in its parent."""
        missing = []
        for parent in (folder, *folder.parents):
            if parent.is_dir() or parent == self.root.parent:
                break
            missing.append(parent)
        for new in reversed(missing):
            with contextlib.suppress(FileExistsError):
                new.mkdir(mode=PRIVATE_FOLDER)
            fsync_dir(new.parent)

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def read(self, sha256: str) -> bytes:
        """The blob's bytes; ``FileNotFoundError`` if it is not stored."""
        return self.path(sha256).read_bytes()

    def stored(self) -> Iterator[tuple[str, Path]]:
        """Every stored blob: its hash and path."""
        top = self.root / ALGORITHM
        if not top.is_dir():
            return
        for folder in sorted(top.iterdir()):
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                yield folder.name + path.name, path

    def remove_unreferenced(
        self, referenced: Set[str], *, grace_seconds: float = GRACE_SECONDS
    ) -> int:
        """Remove blobs (and temp files left by a crash) that no message names and that are
        older than ``grace_seconds``; returns how many went."""
        cutoff = time.time() - grace_seconds
        removed = 0
        for sha256, path in list(self.stored()):
            if sha256 in referenced:
                continue
            try:
                with self._lock:
                    if path.lstat().st_mtime > cutoff:
                        continue
                    path.unlink()
            except FileNotFoundError:
                continue
            removed += 1
            logger.info("removed blob %s: no message names it", sha256[:12])
        return removed
