"""Opening the database file: private from the start, its pragmas, a check, the migrations."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path

from ..errors import StoreError
from ..formats import micros, parse_time
from ..fsutil import PRIVATE_FILE, guard_store_file, make_private
from .records import stored_text
from .schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, statements

BUSY_TIMEOUT_SECONDS = 30


class IntegrityCheckFailed(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` found the file damaged."""


def connect(path: Path, *, check: bool) -> sqlite3.Connection:
    for name in (path.name, path.name + "-wal", path.name + "-shm"):
        guard_store_file(path.with_name(name))
    _make_private(path)
    db = sqlite3.connect(
        path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS
    )
    db.row_factory = sqlite3.Row
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")
        # What is deleted is overwritten with zeros, not left in free pages: a forget leaves
        # no byte of what it removed (see db.forgetting).
        db.execute("PRAGMA secure_delete = ON")
        if check:
            (result,) = db.execute("PRAGMA quick_check").fetchone()
            if result != "ok":
                raise IntegrityCheckFailed(f"integrity check failed: {result}")
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _make_private(path: Path) -> None:
    """Give the database file mode 0600 before SQLite opens it, whatever the umask, without
    ever holding a descriptor of a file SQLite may hold.

    Closing *any* descriptor of a file drops every POSIX lock this process holds on it,
    SQLite's included: a connection that then closes believes it is the last one and deletes
    the WAL under the others (SQLite's "How To Corrupt" §2.2). So a new file is created with
    ``O_EXCL`` (no connection can hold a file that did not exist) and an existing one is
    changed by path. SQLite gives its -wal and -shm files the database file's own mode.
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE))
    for name in (path.name, path.name + "-wal", path.name + "-shm"):
        make_private(path.with_name(name))


def migrate(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then find it done
    try:
        version = _version(db)
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"the database was written by a newer smarthole "
                f"(schema {version} > {SCHEMA_VERSION})"
            )
        if version is not None and version < SCHEMA_VERSION:
            _define_functions(db)
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for step in MIGRATIONS[target]:
                    db.execute(step) if isinstance(step, str) else step(db)
        # After the migrations, which need the old tables as they were: CREATE ... IF NOT
        # EXISTS makes a new database's tables, and nothing in a migrated one.
        for statement in statements(SCHEMA):
            db.execute(statement)
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite rolls back by itself after some errors (I/O, full disk)
            db.execute("ROLLBACK")
        raise


def _define_functions(db: sqlite3.Connection) -> None:
    """The Python a migration's SQL calls: the store's own conversions, so a migrated row is
    what the store would have written."""

    def text_of(content: str) -> str | None:
        return stored_text(json.loads(content))

    def micros_of(text: str | None) -> int | None:
        return None if text is None else micros(parse_time(text))

    db.create_function("smarthole_text", 1, text_of, deterministic=True)
    db.create_function("smarthole_micros", 1, micros_of, deterministic=True)


def _version(db: sqlite3.Connection) -> int | None:
    """The schema version; None for a new database."""
    if not db.execute("SELECT 1 FROM sqlite_schema WHERE name = 'meta'").fetchone():
        return None
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else None
