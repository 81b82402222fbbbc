"""The agent's memory: its files, each write with the messages it came from, and the profile
each conversation began with.

A memory file is a row, not a file on disk: the memory tool's writes commit in the transaction
that stores the tool's result (``agent.memory``), so a crash never applies one twice or loses
one that was acknowledged. Each file keeps, per line, the ids of the writes it came from
(``lines``), and each write the message ids it came from (``sources``): a forget finds every
line derived from a forgotten message, and the person's views show where each line came from.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..formats import parse_time

if TYPE_CHECKING:
    from .connection import Database

Lines = tuple[tuple[int, ...], ...]
"""Per line of a text (split at each newline), the ids of the writes it came from."""


@dataclass(frozen=True)
class MemoryFile:
    path: str
    text: str
    lines: Lines
    size: int
    created_at: datetime
    updated_at: datetime

    @property
    def write_ids(self) -> set[int]:
        return {w for line in self.lines for w in line}

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> MemoryFile:
        return cls(
            path=row["path"],
            text=row["text"],
            lines=decode_lines(row["lines"]),
            size=row["size"],
            created_at=parse_time(row["created_at"]),
            updated_at=parse_time(row["updated_at"]),
        )


@dataclass(frozen=True)
class MemoryWrite:
    """One change of the memory: what, by whom (``agent`` or ``person``), from which messages."""

    id: int
    path: str
    operation: str
    by: str
    agent: str | None
    conversation_id: str | None
    turn: int | None
    sources: tuple[str, ...]
    tool_use_id: str | None
    at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> MemoryWrite:
        return cls(
            id=row["id"],
            path=row["path"],
            operation=row["operation"],
            by=row["by"],
            agent=row["agent"],
            conversation_id=row["conversation_id"],
            turn=row["turn"],
            sources=tuple(json.loads(row["sources"])),
            tool_use_id=row["tool_use_id"],
            at=parse_time(row["at"]),
        )


@dataclass(frozen=True)
class WriteSource:
    """Where a write comes from: who, and the turn (and its human message) that made it."""

    by: str = "agent"
    agent: str | None = None
    conversation_id: str | None = None
    turn: int | None = None
    sources: tuple[str, ...] = ()
    tool_use_id: str | None = None


def decode_lines(raw: str) -> Lines:
    return tuple(tuple(ids) for ids in json.loads(raw))


def encode_lines(lines: Lines) -> str:
    return json.dumps([list(ids) for ids in lines], separators=(",", ":"))


def size_of(text: str) -> int:
    return len(text.encode("utf-8"))


def under(prefix: str) -> str:
    """SQL LIKE pattern of the paths below folder ``prefix`` (``\\`` escapes)."""
    escaped = prefix.rstrip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


class MemoryTables:
    """The memory's tables; every write goes through here, inside the caller's transaction."""

    def __init__(self, store: Database) -> None:
        self.store = store

    # -- reads (``db``: inside a transaction; else the store's own connection) -------------

    def _rows(
        self, sql: str, params: Sequence[object], db: sqlite3.Connection | None
    ) -> list[sqlite3.Row]:
        if db is not None:
            return db.execute(sql, params).fetchall()
        return self.store.query(sql, params)

    def file(self, path: str, db: sqlite3.Connection | None = None) -> MemoryFile | None:
        rows = self._rows("SELECT * FROM memory_files WHERE path = ?", (path,), db)
        return MemoryFile.from_row(rows[0]) if rows else None

    def files(
        self, folder: str | None = None, db: sqlite3.Connection | None = None
    ) -> list[MemoryFile]:
        """Every file (below ``folder`` if given), by path."""
        if folder is None:
            rows = self._rows("SELECT * FROM memory_files ORDER BY path", (), db)
        else:
            rows = self._rows(
                "SELECT * FROM memory_files WHERE path LIKE ? ESCAPE '\\' ORDER BY path",
                (under(folder),),
                db,
            )
        return [MemoryFile.from_row(r) for r in rows]

    def total_bytes(self, db: sqlite3.Connection | None = None) -> int:
        rows = self._rows("SELECT coalesce(sum(size), 0) FROM memory_files", (), db)
        return int(rows[0][0])

    def writes(self, ids: Iterable[int] = (), *, path: str | None = None) -> list[MemoryWrite]:
        """The writes of ``ids``, and those recorded for ``path``, oldest first."""
        wanted = sorted(set(ids))
        marks = ", ".join("?" * len(wanted)) or "NULL"
        rows = self.store.query(
            f"SELECT * FROM memory_writes WHERE id IN ({marks}) OR path = ? ORDER BY id",
            (*wanted, path),
        )
        return [MemoryWrite.from_row(r) for r in rows]

    def writes_in(self, conversation_id: str) -> list[MemoryWrite]:
        """The writes made in a conversation's turns, oldest first."""
        rows = self.store.query(
            "SELECT * FROM memory_writes WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        )
        return [MemoryWrite.from_row(r) for r in rows]

    def writes_from(self, message_ids: Iterable[str], db: sqlite3.Connection) -> list[int]:
        """The writes whose sources include one of ``message_ids``."""
        wanted = list(message_ids)
        if not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        rows = db.execute(
            "SELECT DISTINCT w.id FROM memory_writes w, json_each(w.sources) s "
            f"WHERE s.value IN ({marks}) ORDER BY w.id",
            wanted,
        ).fetchall()
        return [int(r[0]) for r in rows]

    def search(self, words: list[str], limit: int = 20) -> list[MemoryFile]:
        """The files holding every one of ``words`` (any case), by path."""
        if not words:
            return []
        clause = " AND ".join("instr(lower(text), ?) > 0" for _ in words)
        rows = self.store.query(
            f"SELECT * FROM memory_files WHERE {clause} ORDER BY path LIMIT ?",
            (*(w.lower() for w in words), limit),
        )
        return [MemoryFile.from_row(r) for r in rows]

    # -- writes: inside the caller's transaction ----------------------------------------

    def record_write(
        self, db: sqlite3.Connection, path: str, operation: str, source: WriteSource
    ) -> int:
        cursor = db.execute(
            "INSERT INTO memory_writes (path, operation, by, agent, conversation_id, turn, "
            "sources, tool_use_id, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                path,
                operation,
                source.by,
                source.agent,
                source.conversation_id,
                source.turn,
                json.dumps(list(source.sources)),
                source.tool_use_id,
                self.store.now(),
            ),
        )
        return int(cursor.lastrowid or 0)

    def put(self, db: sqlite3.Connection, path: str, text: str, lines: Lines) -> None:
        now = self.store.now()
        db.execute(
            "INSERT INTO memory_files (path, text, lines, size, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET text = excluded.text, "
            "lines = excluded.lines, size = excluded.size, updated_at = excluded.updated_at",
            (path, text, encode_lines(lines), size_of(text), now, now),
        )

    def remove(self, db: sqlite3.Connection, paths: Iterable[str]) -> None:
        """Delete files and the writes recorded for them."""
        for path in paths:
            db.execute("DELETE FROM memory_files WHERE path = ?", (path,))
            db.execute("DELETE FROM memory_writes WHERE path = ?", (path,))

    def move(self, db: sqlite3.Connection, old: str, new: str) -> None:
        db.execute("UPDATE memory_files SET path = ? WHERE path = ?", (new, old))
        db.execute("UPDATE memory_writes SET path = ? WHERE path = ?", (new, old))

    def delete_writes(self, db: sqlite3.Connection, ids: Iterable[int]) -> None:
        db.executemany("DELETE FROM memory_writes WHERE id = ?", [(i,) for i in ids])

    # -- the profile each conversation began with ----------------------------------------

    def profile_of(self, conversation_id: str, path: str) -> str:
        """The profile ``conversation_id`` began with; taken now if it has none yet."""
        row = self.store.query_one(
            "SELECT text FROM memory_profiles WHERE conversation_id = ?", (conversation_id,)
        )
        if row is not None:
            return str(row["text"])
        with self.store.transaction() as db:
            profile = self.file(path, db)
            text, lines = (profile.text, profile.lines) if profile else ("", ())
            db.execute(
                "INSERT INTO memory_profiles (conversation_id, text, lines) VALUES (?, ?, ?) "
                "ON CONFLICT (conversation_id) DO NOTHING",
                (conversation_id, text, encode_lines(lines)),
            )
            (kept,) = db.execute(
                "SELECT text FROM memory_profiles WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
        return str(kept)

    def profiles_with(
        self, db: sqlite3.Connection, write_ids: set[int]
    ) -> list[tuple[str, str, Lines]]:
        """The snapshots holding a line of one of ``write_ids``: (conversation, text, lines)."""
        found = []
        for row in db.execute("SELECT conversation_id, text, lines FROM memory_profiles"):
            lines = decode_lines(row["lines"])
            if any(set(ids) & write_ids for ids in lines):
                found.append((row["conversation_id"], row["text"], lines))
        return found

    def set_profile(
        self, db: sqlite3.Connection, conversation_id: str, text: str, lines: Lines
    ) -> None:
        db.execute(
            "UPDATE memory_profiles SET text = ?, lines = ? WHERE conversation_id = ?",
            (text, encode_lines(lines), conversation_id),
        )
