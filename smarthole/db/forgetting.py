"""Forgetting: every row a conversation, or some of its turns, left in the store, erased.

:meth:`ForgetTables.erase` runs inside the caller's transaction and returns what lies outside
the database (outbox, claimed and failed files; attachment blobs) for the caller to remove
after the commit. The same transaction stores a ``forget_jobs`` row naming those files, so a
kill -9 after the commit leaves a job that the next ``forget`` finishes. The bytes go with the
rows: every connection runs with ``secure_delete`` (``opening``), the full-text index is
merged so no deleted token stays in an old segment, and the WAL is checkpointed and truncated.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .records import CONVERSATION_KEY
from .states import TitleState, TurnStatus

if TYPE_CHECKING:
    from .connection import Database

_KEY = f"({CONVERSATION_KEY})"
# Events whose text is derived from the whole conversation (a turn's forget empties them too).
WHOLE_CONVERSATION_EVENTS = ("title_generated", "summary_generated", "conversation_renamed")


@dataclass
class Erased:
    """What one forget removed from the store, and what it left to remove outside it."""

    conversation_id: str
    whole: bool
    turns: list[int] = field(default_factory=list)
    message_ids: set[str] = field(default_factory=set)
    messages: int = 0
    tasks: int = 0
    outbox_files: list[str] = field(default_factory=list)  # names in the outbox folder
    paths: list[str] = field(default_factory=list)  # claimed and failed files, absolute
    blobs: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ForgetJob:
    id: int
    conversation_id: str
    files: tuple[str, ...]
    blobs: tuple[str, ...]


class ForgetTables:
    """The store's side of ``smarthole forget``."""

    def __init__(self, store: Database) -> None:
        self.store = store

    def turn_of_message(self, conversation_id: str, message_id: str) -> int | None:
        row = self.store.query_one(
            f"SELECT number FROM turn_rows WHERE conversation = {_KEY} AND message_id = ?",
            (conversation_id, message_id),
        )
        return int(row[0]) if row else None

    def queued(self, conversation_id: str, message_id: str) -> bool:
        """Whether ``message_id`` is a ledger row of the conversation with no turn yet."""
        return (
            self.store.query_one(
                "SELECT 1 FROM inbox WHERE message_id = ? AND conversation_id = ?",
                (message_id, conversation_id),
            )
            is not None
        )

    def running_turns(self, conversation_id: str, turns: list[int] | None) -> list[int]:
        rows = self.store.query(
            f"SELECT number FROM turn_rows WHERE conversation = {_KEY} "
            f"AND status = {TurnStatus.RUNNING.sql}",
            (conversation_id,),
        )
        return [r[0] for r in rows if turns is None or r[0] in turns]

    def erase(
        self,
        db: sqlite3.Connection,
        conversation_id: str,
        turns: list[int] | None,
        message_ids: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> Erased:
        """Delete the conversation (``turns`` None) or those turns, and the ledger rows of
        ``message_ids`` (messages of it not turned yet), with everything derived from them."""
        whole = turns is None
        erased = Erased(conversation_id, whole, sorted(turns or []))
        key = db.execute(CONVERSATION_KEY, (conversation_id,)).fetchone()
        key = key[0] if key else None
        if whole:
            rows = db.execute("SELECT number FROM turn_rows WHERE conversation = ?", (key,))
            numbers = [r[0] for r in rows]
        else:
            numbers = list(turns or [])
        erased.turns = sorted(numbers)
        in_turns, turn_args = _in(numbers)
        ids = {
            r[0]
            for r in db.execute(
                f"SELECT message_id FROM turn_rows WHERE conversation = ? AND number {in_turns}",
                (key, *turn_args),
            )
        } | set(message_ids)
        if whole:
            ids |= {
                r[0]
                for r in db.execute(
                    "SELECT message_id FROM inbox WHERE conversation_id = ?", (conversation_id,)
                )
            }
        erased.message_ids = ids
        in_ids, id_args = _in(sorted(ids))
        # The ledger rows: their payloads hold the text, their files may still be in the home.
        for row in db.execute(
            f"SELECT payload, claimed_path, failed_path FROM inbox WHERE message_id {in_ids}",
            id_args,
        ):
            erased.blobs |= _hashes(json.loads(row[0]).get("attachments") or [])
            for path in row[1:]:
                if path:
                    erased.paths += [path, path + ".error.txt"]
        db.execute(f"DELETE FROM inbox WHERE message_id {in_ids}", id_args)
        # What the agent said to the person, and the files it wrote in the outbox.
        outbox = db.execute(
            f"SELECT id, file_name FROM outbox WHERE in_reply_to {in_ids} OR "
            f"(conversation_id = ? AND turn {in_turns})",
            (*id_args, conversation_id, *turn_args),
        ).fetchall()
        erased.outbox_files = [r[1] for r in outbox]
        in_outbox, outbox_args = _in([r[0] for r in outbox])
        db.execute(f"DELETE FROM outbox WHERE id {in_outbox}", outbox_args)
        # Messages, their attachments' names, tool calls, approvals, team tasks.
        for (content,) in db.execute(
            "SELECT content FROM message_rows WHERE conversation = ? AND turn "
            f'{in_turns} AND content LIKE \'%"type":"attachment"%\'',
            (key, *turn_args),
        ):
            erased.blobs |= _hashes(json.loads(content))
        erased.messages = db.execute(
            f"DELETE FROM message_rows WHERE conversation = ? AND turn {in_turns}",
            (key, *turn_args),
        ).rowcount
        db.execute(
            f"DELETE FROM tool_calls WHERE conversation_id = ? AND turn {in_turns}",
            (conversation_id, *turn_args),
        )
        db.execute(
            f"DELETE FROM approvals WHERE conversation_id = ? AND turn {in_turns}",
            (conversation_id, *turn_args),
        )
        tasks = [
            r[0]
            for r in db.execute(
                f"SELECT id FROM tasks WHERE conversation_id = ? AND turn {in_turns}",
                (conversation_id, *turn_args),
            )
        ]
        in_tasks, task_args = _in(tasks)
        for (content,) in db.execute(
            f"SELECT content FROM task_messages WHERE task_id {in_tasks} "
            'AND content LIKE \'%"type":"attachment"%\'',
            task_args,
        ):
            erased.blobs |= _hashes(json.loads(content))
        db.execute(f"DELETE FROM search_docs WHERE task_id {in_tasks}", task_args)
        for table in ("task_messages", "task_turns", "task_tool_calls"):
            db.execute(f"DELETE FROM {table} WHERE task_id {in_tasks}", task_args)
        erased.tasks = db.execute(f"DELETE FROM tasks WHERE id {in_tasks}", task_args).rowcount
        db.execute(
            f"DELETE FROM turn_rows WHERE conversation = ? AND number {in_turns}",
            (key, *turn_args),
        )
        # Events stay, with their ids and types: their text goes.
        derived, derived_args = _in(WHOLE_CONVERSATION_EVENTS)
        db.execute(
            f"UPDATE events SET data = '{{}}' WHERE message_id {in_ids} OR (conversation_id = ? "
            f"AND (turn {in_turns} OR type {derived} OR ?))",
            (*id_args, conversation_id, *turn_args, *derived_args, whole),
        )
        # Plugin data: the pending question, the channels' records of these messages.
        pending = db.execute(
            "SELECT value FROM plugin_data WHERE plugin = 'smarthole' AND key = ?",
            (conversation_id,),
        ).fetchone()
        if pending and (whole or _pending_from(pending[0], ids)):
            db.execute(
                "DELETE FROM plugin_data WHERE plugin = 'smarthole' AND key = ?", (conversation_id,)
            )
        _forget_channel_records(db, conversation_id, ids, [r[0] for r in outbox], whole=whole)
        if whole:
            db.execute("DELETE FROM search_docs WHERE conversation = ?", (key,))
            db.execute("DELETE FROM memory_profiles WHERE conversation_id = ?", (conversation_id,))
            db.execute("DELETE FROM schedules WHERE conversation_id = ?", (conversation_id,))
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
        elif numbers:
            # Title and summary came from every turn: made again from what is left.
            db.execute(
                "UPDATE conversations SET summary = NULL, summary_state = CASE WHEN ended_at "
                f"IS NULL THEN {TitleState.NONE.sql} ELSE {TitleState.PENDING.sql} END "
                "WHERE id = ?",
                (conversation_id,),
            )
            db.execute(
                f"UPDATE conversations SET title = NULL, title_state = {TitleState.PENDING.sql} "
                "WHERE id = ? AND NOT title_pinned",
                (conversation_id,),
            )
        return erased

    # -- jobs: what a committed forget removes after its commit --------------------------

    def add_job(self, db: sqlite3.Connection, erased: Erased, files: list[str]) -> int:
        cursor = db.execute(
            "INSERT INTO forget_jobs (conversation_id, files, blobs, created_at) "
            "VALUES (?, ?, ?, ?)",
            (
                erased.conversation_id,
                json.dumps(files),
                json.dumps(sorted(erased.blobs)),
                self.store.now(),
            ),
        )
        return int(cursor.lastrowid or 0)

    def jobs(self) -> list[ForgetJob]:
        rows = self.store.query("SELECT * FROM forget_jobs ORDER BY id")
        return [
            ForgetJob(
                r["id"],
                r["conversation_id"],
                tuple(json.loads(r["files"])),
                tuple(json.loads(r["blobs"])),
            )
            for r in rows
        ]

    def finish_job(self, job_id: int) -> None:
        self.store.write("DELETE FROM forget_jobs WHERE id = ?", (job_id,))

    def generation(self) -> int:
        """How many forgets have ever committed: a reader's cache of history is stale when
        this changes."""
        row = self.store.query_one("SELECT seq FROM sqlite_sequence WHERE name = 'forget_jobs'")
        return int(row[0]) if row else 0

    # -- the bytes -------------------------------------------------------------------------

    def merge_index(self, db: sqlite3.Connection) -> None:
        """Merge the full-text index into one segment: a deleted row's tokens leave the old
        segments (which ``secure_delete`` then zeroes)."""
        db.execute("INSERT INTO search_index (search_index) VALUES ('optimize')")

    def checkpoint(self, timeout: float = 30.0) -> bool:
        """Copy the WAL into the database and truncate it to nothing; False if readers kept
        it busy for ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            row: Any = self.store.query_one("PRAGMA wal_checkpoint(TRUNCATE)")
            if row is not None and row[0] == 0:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def _forget_channel_records(
    db: sqlite3.Connection,
    conversation_id: str,
    ids: Collection[str],
    outbox: list[str],
    *,
    whole: bool,
) -> None:
    """Every channel's records of these messages and replies (``channels.records``: the
    message, its external id, each delivery with its text), and, for a whole conversation,
    any record of a channel's own that names it (the email channel's thread of a reply)."""
    owners = {r[0] for r in db.execute("SELECT key FROM plugin_data WHERE plugin = 'channels'")}
    owners.add("desktop")  # a bridge of a version before the channels' registry
    in_owners, owner_args = _in(sorted(owners))
    keys = [f"message:{i}" for i in ids]
    keys += [f"{kind}:{outbox_id}" for outbox_id in outbox for kind in ("delivery", "reply")]
    in_keys, key_args = _in(keys)
    in_ids, id_args = _in(sorted(ids))
    db.execute(
        f"DELETE FROM plugin_data WHERE plugin {in_owners} AND (key {in_keys} "
        f"OR (key LIKE 'external:%' AND json_valid(value) "
        f"AND json_extract(value, '$.message_id') {in_ids}) "
        "OR (? AND json_valid(value) AND json_extract(value, '$.conversation') = ?))",
        (*owner_args, *key_args, *id_args, whole, conversation_id),
    )


def _in(values: list[Any] | tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """``IN (?, ?)`` and its parameters (``IN (NULL)``, which matches nothing, for none)."""
    values = tuple(values)
    return f"IN ({', '.join('?' * len(values)) or 'NULL'})", values


def _hashes(blocks: list[Any]) -> set[str]:
    found: set[str] = set()
    for block in blocks:
        if isinstance(block, dict):
            found.update(v for k in ("sha256", "sent") if isinstance(v := block.get(k), str))
    return found


def _pending_from(value: str, ids: set[str]) -> bool:
    try:
        return json.loads(value).get("original_message_id") in ids
    except (ValueError, AttributeError):
        return True  # unreadable: gone with what it may hold
