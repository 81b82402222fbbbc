"""Named positions in an append-only table, kept in ``meta``: how far a follower has read.

One row per follower (``cursor:<name>``). A cursor only moves forward.
"""

from __future__ import annotations

from .store import Store

PREFIX = "cursor:"


class Cursors:
    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, name: str) -> int | None:
        row = self.store.query_one("SELECT value FROM meta WHERE key = ?", (PREFIX + name,))
        return int(row["value"]) if row else None

    def set(self, name: str, position: int, *, durable: bool = True) -> None:
        """Move cursor ``name`` to ``position`` (never back).

        ``durable=False`` for a move that may be made again after a power cut without harm
        (a process crash keeps it either way: it is in the WAL).
        """
        with self.store.transaction(durable=durable) as db:
            db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
                "SET value = excluded.value WHERE CAST(value AS INTEGER) < excluded.value",
                (PREFIX + name, str(position)),
            )
