"""Which attachment blobs the store still names (for the blob store's housekeeping).

A blob is needed while a message not yet answered names it in the ledger (queued, running,
deferred, dead and so retryable), or a stored conversation or task message does. A done
message's ledger row does not keep its blobs: its conversation's rows do, until it is pruned.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .states import MessageStatus

if TYPE_CHECKING:
    from .connection import Database

_LEDGER = (
    f"SELECT payload FROM inbox WHERE status != {MessageStatus.DONE.sql} "
    "AND payload LIKE '%\"attachments\":%'"
)
_STORED = (
    'SELECT content FROM message_rows WHERE content LIKE \'%"type":"attachment"%\' '
    "UNION ALL "
    'SELECT content FROM task_messages WHERE content LIKE \'%"type":"attachment"%\''
)


def referenced_blobs(store: Database) -> set[str]:
    """The hashes of every blob a message still names."""
    hashes: set[str] = set()
    for row in store.query(_LEDGER):
        _collect(json.loads(row[0]).get("attachments") or [], hashes)
    for row in store.query(_STORED):
        blocks = json.loads(row[0])
        _collect(
            [b for b in blocks if isinstance(b, dict) and b.get("type") == "attachment"], hashes
        )
    return hashes


def _collect(attachments: list[Any], hashes: set[str]) -> None:
    for attachment in attachments:
        if isinstance(attachment, dict):
            hashes.update(
                value for key in ("sha256", "sent") if isinstance(value := attachment.get(key), str)
            )


def named_attachment(store: Database, sha256: str) -> dict[str, Any] | None:
    """The attachment (as stored: name, media_type, size, sha256) of a conversation message
    whose original bytes are blob ``sha256``; None if no stored message names it so."""
    rows = store.query(
        "SELECT content FROM message_rows WHERE content LIKE ? LIMIT 20",
        (f'%"sha256":"{sha256}"%',),
    )
    for row in rows:
        for block in json.loads(row[0]):
            if isinstance(block, dict) and block.get("sha256") == sha256:
                return block
    return None
