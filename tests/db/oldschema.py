"""Real databases of older schema versions, built from their own DDL, for the migration tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

VERSION_4 = (Path(__file__).parent / "schema_v4.sql").read_text(encoding="utf-8")


def version_4_database(path: Path) -> sqlite3.Connection:
    """A new, empty database of schema version 4 at ``path``, opened as the store opened it."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA foreign_keys = ON")
    db.executescript(VERSION_4)
    db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '4')")
    db.commit()
    return db
