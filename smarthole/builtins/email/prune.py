"""Forgetting the channel's own records that would otherwise grow for ever: at the first
connection after the start, then once a day.

- ``refused:<folder>/<uidvalidity>/<uid>`` keeps a refused mail from being counted again
  while it sits unread in the folder. It matters only while that UID can be offered again: the
  same UIDVALIDITY, the mail still in the folder. Gone (deleted, moved to ``refused_folder``)
  or renumbered, the record goes; one of another folder (``folder`` changed) goes after
  ``KEEP_MESSAGES``, as nothing can tell whether that folder still holds the mail.
- ``sent:<Message-ID>`` lets a reply to one of our mails continue its conversation. It is kept
  ``KEEP_MESSAGES`` (30 days, as long as the host keeps the messages it took in); a reply to an
  older mail starts a new conversation.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ...channels.records import KEEP_MESSAGES
from ...formats import parse_time
from .intake import REFUSED, SENT

if TYPE_CHECKING:
    from ...channels import ChannelHost
    from .imap import Mailbox

logger = logging.getLogger(__name__)

PRUNE_EVERY = timedelta(days=1)


class Pruner:
    """Prunes the records of one channel host when a day has passed since it last did."""

    def __init__(self, host: ChannelHost) -> None:
        self.host = host
        self.last: datetime | None = None

    def due(self, now: datetime) -> bool:
        return self.last is None or now - self.last >= PRUNE_EVERY

    def maybe(self, box: Mailbox) -> int:
        """Prune if due (with ``box``: the folder's UIDVALIDITY and UIDs); how many went."""
        now = self.host.now()
        if not self.due(now):
            return 0
        removed = prune_records(self.host, box, now) + self.host.records.prune(now)
        self.last = now
        if removed:
            logger.info("email: forgot %d records that can no longer matter", removed)
        return removed


def prune_records(host: ChannelHost, box: Mailbox, now: datetime) -> int:
    """Drop the refused and thread records that can no longer matter; how many."""
    data = host.records.data
    present: set[int] | None = None  # the folder's UIDs, asked for once, only if needed
    removed = 0
    for key, value in data.items():
        if key.startswith(SENT):
            expired = _older(value, now - KEEP_MESSAGES)
        elif key.startswith(REFUSED):
            folder, _, rest = key.removeprefix(REFUSED).rpartition("/")
            folder, _, validity = folder.rpartition("/")
            if folder != box.folder:
                expired = _older(value, now - KEEP_MESSAGES)
            else:
                present = set(box.uids()) if present is None else present
                expired = validity != str(box.uidvalidity) or not _member(rest, present)
        else:
            continue
        if expired:
            data.delete(key)
            removed += 1
    return removed


def _member(uid: str, present: set[int]) -> bool:
    return uid.isdigit() and int(uid) in present


def _older(value: Any, cutoff: datetime) -> bool:
    """Whether the record was written before ``cutoff`` (one without a readable time: yes)."""
    stamp = value.get("at") if isinstance(value, dict) else None
    try:
        return not isinstance(stamp, str) or parse_time(stamp) < cutoff
    except ValueError:
        return True
