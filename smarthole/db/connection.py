"""The database connection: opening it, and the unit of work every state change goes through.

One database file per home (``.smarthole/smarthole.db``) in WAL mode, one connection, one
lock. ``with store.transaction() as db:`` is one atomic write; a change that spans tables (a
turn's status, the ledger, the outbox record and the event) is made inside one such block, and
``after_commit`` callbacks (the plugin hooks) run only once it has committed.

A database SQLite cannot read is moved aside as ``smarthole.db.corrupt-<UTC time>`` (when the
caller may recover, i.e. the daemon) and a fresh one is created, with a loud warning.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Self

from ..errors import CorruptStoreError, StoreError
from ..formats import iso
from .opening import BUSY_TIMEOUT_SECONDS, IntegrityCheckFailed, connect

logger = logging.getLogger(__name__)

PAGE_CACHE_KIB = 512
"""SQLite's page cache of the connection (its default is 2,000 KiB). The pages a message
touches are few and recent; the rest is in the kernel's cache, a read away."""


class Database:
    """The connection to one home's database. Thread-safe: one connection, one lock."""

    def __init__(self, connection: sqlite3.Connection, path: Path, clock: Any) -> None:
        connection.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
        self.path = path
        self.clock = clock
        self._db = connection
        self._lock = threading.RLock()
        self._after_commit: list[Callable[[], object]] = []
        self._writer: int | None = None  # the thread inside the open transaction, if any

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, clock: Any, recover: bool = False) -> Self:
        """Open (creating if needed) the database at ``path``.

        With ``recover``, a database that cannot be read is moved aside and replaced by a
        fresh one; without, ``CorruptStoreError`` is raised.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls(connect(path, check=recover), path, clock)
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise StoreError(_not_opened(path, exc)) from exc
            if not recover:
                raise CorruptStoreError(
                    f"{path} is not a readable database ({exc}); start the daemon to move it aside"
                ) from exc
            aside = path.with_name(f"{path.name}.corrupt-{_stamp(clock())}")
            logger.warning(
                "DATABASE %s IS CORRUPT (%s): moved it aside to %s and started a fresh one",
                path,
                exc,
                aside,
            )
            path.replace(aside)
            for suffix in ("-wal", "-shm"):
                sidecar = path.with_name(path.name + suffix)
                if sidecar.exists():
                    sidecar.replace(aside.with_name(aside.name + suffix))
            return cls(connect(path, check=True), path, clock)

    def release_memory(self) -> None:
        """Hand back the memory of SQLite's page cache; the pages are read again when needed."""
        with self._lock:
            self._db.execute("PRAGMA shrink_memory")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One atomic write; nested calls join the outer transaction.

        A commit waits until the disk has it (``synchronous = FULL``). With ``durable=False``
        it does not (``NORMAL``, about a tenth of the CPU): a crash or ``kill -9`` still keeps
        it, but a power cut may undo it, with the commits after it up to the next durable one
        (WAL keeps their order). Only for a step the daemon redoes from what was synced before
        it, and whose effects nothing outside sees before the next durable commit: starting
        a turn.
        """
        with self._lock:
            if self._db.in_transaction:
                yield self._db
                return
            if durable:
                yield from self._run()
            else:
                self._db.execute("PRAGMA synchronous = NORMAL")  # not inside a transaction
                try:
                    yield from self._run()
                finally:
                    self._db.execute("PRAGMA synchronous = FULL")
            callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    def _run(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        self._writer = threading.get_ident()
        try:
            yield self._db
        except BaseException:
            if self._db.in_transaction:  # SQLite rolls back by itself after some errors
                self._db.execute("ROLLBACK")
            self._after_commit.clear()
            raise
        finally:
            self._writer = None
        self._db.execute("COMMIT")

    def in_transaction(self) -> bool:
        """Whether this thread is inside one of this store's transactions (so holds its lock):
        no place for file work or a hook, which belong after the commit (:meth:`after_commit`)."""
        return self._writer == threading.get_ident()

    def after_commit(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the current transaction commits (now, if there is none).

        Hooks are called this way, so a plugin never sees a row that is later rolled back.
        """
        with self._lock:
            if self._db.in_transaction:
                self._after_commit.append(callback)
                return
        callback()

    def write(self, sql: str, params: Any = ()) -> int:
        """One statement as its own transaction (or in the caller's); the rows it changed."""
        with self.transaction() as db:
            return db.execute(sql, params).rowcount

    def query(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: {exc}") from exc

    def query_one(self, sql: str, params: Any = ()) -> sqlite3.Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def now(self) -> str:
        return iso(self.clock())


# SQLite's primary result codes that mean the file itself is damaged or not a database. Only
# these (and a failed quick_check) move a database aside: a busy or locked one is healthy and
# held by another process, and a full disk, a missing permission or too many open files pass.
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26
SQLITE_BUSY = 5
SQLITE_LOCKED = 6


def is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """Whether ``exc`` says the database file is damaged (not merely unavailable now)."""
    if isinstance(exc, IntegrityCheckFailed):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)


def _not_opened(path: Path, exc: sqlite3.DatabaseError) -> str:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED):
        return (
            f"{path} is locked by another process, which has held its write lock for longer "
            f"than {BUSY_TIMEOUT_SECONDS} s (a smarthole command or web view stopped mid-write?); "
            "the database is not damaged: end that process, then try again"
        )
    return f"cannot open {path}: {exc}; the database was left as it is"


def _stamp(moment: datetime) -> str:
    return iso(moment).replace(":", "").replace("-", "")[:15] + "Z"
