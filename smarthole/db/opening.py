"""Opening the database file: private from the start, its pragmas, a check, the migrations."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from ..errors import StoreError
from ..formats import micros, parse_time
from ..fsutil import PRIVATE_FILE, make_private
from .records import stored_text
from .schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, statements


def connect(path: Path, *, check: bool) -> sqlite3.Connection:
    _make_private(path)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
    db.row_factory = sqlite3.Row
    try:
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")
        if check:
            (result,) = db.execute("PRAGMA quick_check").fetchone()
            if result != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {result}")
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _make_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does, whatever the umask.

    SQLite gives its -wal and -shm files the database file's own mode, so they follow.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        make_private(path.with_name(path.name + suffix))


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
