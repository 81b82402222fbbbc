"""The SQLite store: conversations, turns, messages, tool calls, plugin data.

One database file per home (``.smarthole/smarthole.db``) in WAL mode. Every message of a
conversation is one appended row, committed the moment it exists, so storing a message costs
the same however long the conversation is. The ledger of inbox messages, the outbox record and
the event log live in the same file (see ``ledger``, ``outbox`` and ``events``).

A database SQLite cannot read is moved aside as ``smarthole.db.corrupt-<UTC time>`` (when the
caller may recover, i.e. the daemon) and a fresh one is created, with a loud warning.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import CorruptStoreError, StoreError
from .message import iso, parse_time

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    title TEXT,
    title_pinned INTEGER NOT NULL DEFAULT 0,
    title_state TEXT NOT NULL DEFAULT 'none',
    summary TEXT,
    summary_state TEXT NOT NULL DEFAULT 'none',
    turns INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at TEXT,
    end_reason TEXT
);
CREATE INDEX IF NOT EXISTS conversations_by_channel
    ON conversations (channel, ended_at, updated_at);
CREATE INDEX IF NOT EXISTS conversations_by_update ON conversations (updated_at);
CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    message_id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    error TEXT,
    note TEXT,
    end_requested TEXT,
    PRIMARY KEY (conversation_id, number)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_use_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, turn, id);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_tool_use
    ON messages (tool_use_id, kind) WHERE tool_use_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS tool_calls (
    tool_use_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    runs INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS plugin_data (
    plugin TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (plugin, key)
);
CREATE TABLE IF NOT EXISTS plugin_data_corrupt (
    plugin TEXT NOT NULL, key TEXT NOT NULL, value TEXT, found_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inbox (
    message_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    source_name TEXT NOT NULL,
    claimed_path TEXT,
    payload TEXT NOT NULL,
    channel TEXT NOT NULL,
    conversation_id TEXT,
    turn INTEGER,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_error TEXT,
    sort_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    failed_path TEXT
);
CREATE INDEX IF NOT EXISTS inbox_by_status ON inbox (status, channel, sort_at);
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT PRIMARY KEY,
    in_reply_to TEXT NOT NULL,
    conversation_id TEXT,
    channel TEXT NOT NULL,
    turn INTEGER,
    kind TEXT NOT NULL,
    waiting_for_reply INTEGER NOT NULL,
    text TEXT NOT NULL,
    file_name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    state TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_by_reply ON outbox (in_reply_to, created_at);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    at TEXT NOT NULL,
    conversation_id TEXT,
    channel TEXT,
    turn INTEGER,
    message_id TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_conversation ON events (conversation_id, id);
"""


def new_id() -> str:
    """A short random id; people type prefixes of these."""
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Conversation:
    """A conversation as stored; ``turns`` counts its user messages."""

    id: str
    channel: str
    title: str | None
    title_pinned: bool
    summary: str | None
    turns: int
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    end_reason: str | None
    title_state: str = "none"
    summary_state: str = "none"

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Conversation:
        return cls(
            id=row["id"],
            channel=row["channel"],
            title=row["title"],
            title_pinned=bool(row["title_pinned"]),
            summary=row["summary"],
            turns=row["turns"],
            created_at=parse_time(row["created_at"]),
            updated_at=parse_time(row["updated_at"]),
            ended_at=parse_time(row["ended_at"]) if row["ended_at"] else None,
            end_reason=row["end_reason"],
            title_state=row["title_state"],
            summary_state=row["summary_state"],
        )


@dataclass(frozen=True)
class Turn:
    conversation_id: str
    number: int
    message_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    error: str | None
    note: str | None
    end_requested: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Turn:
        return cls(
            conversation_id=row["conversation_id"],
            number=row["number"],
            message_id=row["message_id"],
            status=row["status"],
            started_at=parse_time(row["started_at"]),
            finished_at=parse_time(row["finished_at"]) if row["finished_at"] else None,
            error=row["error"],
            note=row["note"],
            end_requested=row["end_requested"],
        )


@dataclass(frozen=True)
class StoredMessage:
    """One stored conversation message.

    ``kind`` is ``user``, ``assistant`` or ``tool_result`` (these form the Messages API
    history), or ``agent_message`` (a ``send_message`` text), ``error`` or ``note`` (transcript
    only). ``content`` is a list of Messages API content blocks.
    """

    id: int
    conversation_id: str
    turn: int
    role: str
    kind: str
    content: list[dict[str, Any]]
    created_at: datetime
    tool_use_id: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> StoredMessage:
        return cls(
            id=row["id"],
            conversation_id=row["conversation_id"],
            turn=row["turn"],
            role=row["role"],
            kind=row["kind"],
            content=json.loads(row["content"]),
            created_at=parse_time(row["created_at"]),
            tool_use_id=row["tool_use_id"],
        )


class Store:
    """The database of one home. Thread-safe: one connection, one lock."""

    def __init__(self, connection: sqlite3.Connection, path: Path, clock: Any) -> None:
        self.path = path
        self.clock = clock
        self._db = connection
        self._lock = threading.RLock()
        self._after_commit: list[Callable[[], None]] = []

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, clock: Any, recover: bool = False) -> Store:
        """Open (creating if needed) the database at ``path``.

        With ``recover``, a database that cannot be read is moved aside and replaced by a
        fresh one; without, ``CorruptStoreError`` is raised.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls(_connect(path, check=recover), path, clock)
        except sqlite3.DatabaseError as exc:
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
            return cls(_connect(path, check=True), path, clock)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write; nested calls join the outer transaction."""
        with self._lock:
            if self._db.in_transaction:
                yield self._db
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                self._after_commit.clear()
                raise
            self._db.execute("COMMIT")
            callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction commits (now, if there is none).

        Hooks are called this way, so a plugin never sees a row that is later rolled back.
        """
        with self._lock:
            if self._db.in_transaction:
                self._after_commit.append(callback)
                return
        callback()

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

    # -- conversations -----------------------------------------------------------------------

    def create_conversation(self, channel: str) -> Conversation:
        now = self.now()
        conversation_id = new_id()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO conversations (id, channel, created_at, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (conversation_id, channel, now, now),
            )
        conversation = self.conversation(conversation_id)
        assert conversation is not None
        return conversation

    def conversation(self, conversation_id: str) -> Conversation | None:
        row = self.query_one("SELECT * FROM conversations WHERE id = ?", (conversation_id,))
        return Conversation.from_row(row) if row else None

    def conversations_with_prefix(self, prefix: str) -> list[Conversation]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.query(
            "SELECT * FROM conversations WHERE id LIKE ? ESCAPE '\\' LIMIT 10", (pattern,)
        )
        return [Conversation.from_row(r) for r in rows]

    def active_conversation(self, channel: str) -> Conversation | None:
        row = self.query_one(
            "SELECT * FROM conversations WHERE channel = ? AND ended_at IS NULL "
            "ORDER BY updated_at DESC LIMIT 1",
            (channel,),
        )
        return Conversation.from_row(row) if row else None

    def recent_conversations(
        self, *, channel: str | None = None, ended_only: bool = False, limit: int | None = None
    ) -> list[Conversation]:
        clauses: list[str] = []
        params: list[Any] = []
        if channel is not None:
            clauses.append("channel = ?")
            params.append(channel)
        if ended_only:
            clauses.append("ended_at IS NOT NULL")
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        order = "ended_at DESC" if ended_only else "updated_at DESC"
        sql = f"SELECT * FROM conversations {where} ORDER BY {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [Conversation.from_row(r) for r in self.query(sql, params)]

    def open_conversations(self) -> list[Conversation]:
        rows = self.query("SELECT * FROM conversations WHERE ended_at IS NULL")
        return [Conversation.from_row(r) for r in rows]

    def touch_conversation(self, conversation_id: str) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?",
                (self.now(), conversation_id),
            )

    def end_conversation(self, conversation_id: str, reason: str) -> bool:
        """Mark a conversation ended (its summary becomes due). False if it already was."""
        now = self.now()
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE conversations SET ended_at = ?, end_reason = ?, summary_state = "
                "CASE WHEN turns > 0 THEN 'pending' ELSE 'none' END "
                "WHERE id = ? AND ended_at IS NULL",
                (now, reason, conversation_id),
            )
        return cursor.rowcount > 0

    def reopen_conversation(self, conversation_id: str) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE conversations SET ended_at = NULL, end_reason = NULL, "
                "updated_at = ? WHERE id = ?",
                (self.now(), conversation_id),
            )

    def set_title(
        self, conversation_id: str, title: str | None, *, pinned: bool = False, state: str = "done"
    ) -> bool:
        """Set the title; a pinned (user-set) title is only replaced by another pinned one."""
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE conversations SET title = ?, title_state = ?, "
                "title_pinned = MAX(title_pinned, ?) WHERE id = ? AND (title_pinned = 0 OR ?)",
                (title, state, int(pinned), conversation_id, int(pinned)),
            )
        return cursor.rowcount > 0

    def set_summary(self, conversation_id: str, summary: str | None, *, state: str) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE conversations SET summary = ?, summary_state = ? WHERE id = ?",
                (summary, state, conversation_id),
            )

    def conversations_needing(self, what: str, limit: int = 20) -> list[Conversation]:
        """Conversations whose ``title`` or ``summary`` is due (state ``pending``)."""
        column = {"title": "title_state", "summary": "summary_state"}[what]
        rows = self.query(
            f"SELECT * FROM conversations WHERE {column} = 'pending' ORDER BY updated_at LIMIT ?",
            (limit,),
        )
        return [Conversation.from_row(r) for r in rows]

    def delete_conversation(self, conversation_id: str) -> None:
        with self.transaction() as db:
            for table, column in (
                ("messages", "conversation_id"),
                ("turns", "conversation_id"),
                ("tool_calls", "conversation_id"),
                ("events", "conversation_id"),
            ):
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (conversation_id,))
            db.execute(
                "DELETE FROM plugin_data WHERE plugin = 'smarthole' AND key = ?", (conversation_id,)
            )
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- turns -------------------------------------------------------------------------------

    def start_turn(self, db: sqlite3.Connection, conversation_id: str, message_id: str) -> int:
        """Number and insert the next turn; call inside a transaction."""
        now = self.now()
        db.execute(
            "UPDATE conversations SET turns = turns + 1, updated_at = ? WHERE id = ?",
            (now, conversation_id),
        )
        (number,) = db.execute(
            "SELECT turns FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        db.execute(
            "INSERT INTO turns (conversation_id, number, message_id, status, started_at) "
            "VALUES (?, ?, ?, 'running', ?)",
            (conversation_id, number, message_id, now),
        )
        return int(number)

    def turn(self, conversation_id: str, number: int) -> Turn | None:
        row = self.query_one(
            "SELECT * FROM turns WHERE conversation_id = ? AND number = ?",
            (conversation_id, number),
        )
        return Turn.from_row(row) if row else None

    def turn_for_message(self, message_id: str) -> Turn | None:
        row = self.query_one("SELECT * FROM turns WHERE message_id = ?", (message_id,))
        return Turn.from_row(row) if row else None

    def turns(self, conversation_id: str) -> list[Turn]:
        rows = self.query(
            "SELECT * FROM turns WHERE conversation_id = ? ORDER BY number", (conversation_id,)
        )
        return [Turn.from_row(r) for r in rows]

    def update_turn(self, conversation_id: str, number: int, **values: Any) -> None:
        allowed = {"status", "finished_at", "error", "note", "end_requested"}
        assert set(values) <= allowed, values
        assignments = ", ".join(f"{key} = ?" for key in values)
        with self.transaction() as db:
            db.execute(
                f"UPDATE turns SET {assignments} WHERE conversation_id = ? AND number = ?",
                (*values.values(), conversation_id, number),
            )

    def interrupt_running_turns(self) -> list[Turn]:
        """Mark every turn left ``running`` by a stopped daemon as ``interrupted``."""
        with self.transaction() as db:
            rows = db.execute("SELECT * FROM turns WHERE status = 'running'").fetchall()
            db.execute("UPDATE turns SET status = 'interrupted' WHERE status = 'running'")
        return [Turn.from_row(r) for r in rows]

    # -- messages ----------------------------------------------------------------------------

    def append_message(
        self,
        conversation_id: str,
        turn: int,
        role: str,
        kind: str,
        content: list[dict[str, Any]],
        *,
        tool_use_id: str | None = None,
        db: sqlite3.Connection | None = None,
    ) -> StoredMessage:
        """Append one message row and commit (or join the caller's transaction)."""
        now = self.now()
        with contextlib.ExitStack() as stack:
            connection = db or stack.enter_context(self.transaction())
            cursor = connection.execute(
                "INSERT INTO messages (conversation_id, turn, role, kind, content, tool_use_id, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    turn,
                    role,
                    kind,
                    json.dumps(content, ensure_ascii=False),
                    tool_use_id,
                    now,
                ),
            )
            connection.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
            )
        return StoredMessage(
            id=int(cursor.lastrowid or 0),
            conversation_id=conversation_id,
            turn=turn,
            role=role,
            kind=kind,
            content=content,
            created_at=parse_time(now),
            tool_use_id=tool_use_id,
        )

    def messages(self, conversation_id: str, *, turn: int | None = None) -> list[StoredMessage]:
        sql = "SELECT * FROM messages WHERE conversation_id = ?"
        params: list[Any] = [conversation_id]
        if turn is not None:
            sql += " AND turn = ?"
            params.append(turn)
        return [StoredMessage.from_row(r) for r in self.query(sql + " ORDER BY id", params)]

    def recent_history(
        self, conversation_id: str, *, current_turn: int, budget_chars: int
    ) -> list[StoredMessage]:
        """The API-history messages of the current turn plus whole earlier turns, newest first
        until ``budget_chars`` is spent; returned oldest first.

        Reads backwards, so the cost follows the budget, not the conversation's length.
        """
        kept: list[StoredMessage] = []
        spent = 0
        with self._lock:
            cursor = self._db.execute(
                "SELECT * FROM messages WHERE conversation_id = ? AND turn <= ? AND kind IN "
                "('user', 'assistant', 'tool_result') ORDER BY turn DESC, id DESC",
                (conversation_id, current_turn),
            )
            for turn, rows in itertools.groupby(cursor, key=lambda row: row["turn"]):
                batch = list(rows)
                size = sum(len(row["content"]) for row in batch)
                if turn != current_turn and spent + size > budget_chars:
                    break
                spent += size
                kept.extend(StoredMessage.from_row(row) for row in batch)
            cursor.close()
        kept.reverse()
        return kept

    # -- tool calls --------------------------------------------------------------------------

    def record_tool_start(
        self, tool_use_id: str, conversation_id: str, turn: int, name: str
    ) -> None:
        """The intent row: written before a tool runs, so a crash leaves it 'in doubt'."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO tool_calls (tool_use_id, conversation_id, turn, name, started_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tool_use_id) DO UPDATE SET runs = runs + 1",
                (tool_use_id, conversation_id, turn, name, self.now()),
            )

    def started_tool_calls(self, conversation_id: str, turn: int) -> dict[str, int]:
        """Tool calls of a turn that were started, with how many times each was run."""
        rows = self.query(
            "SELECT tool_use_id, runs FROM tool_calls WHERE conversation_id = ? AND turn = ?",
            (conversation_id, turn),
        )
        return {row["tool_use_id"]: row["runs"] for row in rows}

    # -- plugin data -------------------------------------------------------------------------

    def plugin_data(self, plugin: str) -> PluginData:
        return PluginData(self, plugin)


class PluginData:
    """JSON values of one plugin, one row per key, each write its own transaction."""

    def __init__(self, store: Store, plugin: str) -> None:
        self.store = store
        self.plugin = plugin

    def get(self, key: str, default: Any = None) -> Any:
        row = self.store.query_one(
            "SELECT value FROM plugin_data WHERE plugin = ? AND key = ?", (self.plugin, key)
        )
        if row is None:
            return default
        return self._decode(key, row["value"], default)

    def set(self, key: str, value: Any) -> None:
        encoded = json.dumps(value, ensure_ascii=False)  # raises TypeError if not JSON-able
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO plugin_data (plugin, key, value, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (plugin, key) DO UPDATE SET "
                "value = excluded.value, updated_at = excluded.updated_at",
                (self.plugin, key, encoded, self.store.now()),
            )

    def delete(self, key: str) -> None:
        with self.store.transaction() as db:
            db.execute("DELETE FROM plugin_data WHERE plugin = ? AND key = ?", (self.plugin, key))

    def items(self) -> list[tuple[str, Any]]:
        rows = self.store.query(
            "SELECT key, value FROM plugin_data WHERE plugin = ? ORDER BY key", (self.plugin,)
        )
        result = []
        for row in rows:
            value = self._decode(row["key"], row["value"], _MISSING)
            if value is not _MISSING:
                result.append((row["key"], value))
        return result

    def _decode(self, key: str, raw: str, default: Any) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            logger.warning(
                "CORRUPT plugin data %s/%s: moved the value aside to table "
                "plugin_data_corrupt and treated it as missing",
                self.plugin,
                key,
            )
            with self.store.transaction() as db:
                db.execute(
                    "INSERT INTO plugin_data_corrupt (plugin, key, value, found_at) "
                    "VALUES (?, ?, ?, ?)",
                    (self.plugin, key, raw, self.store.now()),
                )
                db.execute(
                    "DELETE FROM plugin_data WHERE plugin = ? AND key = ?", (self.plugin, key)
                )
            return default


_MISSING = object()


def _stamp(moment: datetime) -> str:
    return iso(moment).replace(":", "").replace("-", "")[:15] + "Z"


def _connect(path: Path, *, check: bool) -> sqlite3.Connection:
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
        _migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _migrate(db: sqlite3.Connection) -> None:
    # CREATE ... IF NOT EXISTS is idempotent, so two processes opening a new database at once
    # are harmless; the busy timeout serialises them.
    db.executescript(SCHEMA)
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        db.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    elif int(row[0]) > SCHEMA_VERSION:
        raise StoreError(
            f"the database was written by a newer smarthole (schema {row[0]} > {SCHEMA_VERSION})"
        )
