"""The messages read from the desktop and not yet stored, between the reader and the storer.

The connection reads frames without pause (so the keepalive's pings and pongs are never stuck
behind a burst) and puts each message here; the storer takes everything waiting, up to a
batch, and stores it at once. Bounded by the frames' size, not their count: a desktop that
sends faster than the disk can keep up is held back by TCP before it can fill the memory.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

MAX_WAITING_BYTES = 16 * 1024 * 1024  # about 60,000 spoken messages


class Backlog:
    """A first-in first-out queue of message payloads, bounded in bytes (one asyncio loop)."""

    def __init__(self, max_bytes: int = MAX_WAITING_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: deque[tuple[dict[str, Any], int]] = deque()
        self._bytes = 0
        self._changed = asyncio.Condition()

    def __len__(self) -> int:
        return len(self._items)

    async def put(self, payload: dict[str, Any], size: int) -> None:
        """Add a payload of ``size`` bytes; waits while it would not fit (one always does)."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: not self._items or self._bytes + size <= self.max_bytes
            )
            self._items.append((payload, size))
            self._bytes += size
            self._changed.notify_all()

    async def take(self, most: int) -> list[dict[str, Any]]:
        """Everything waiting, oldest first, up to ``most``; waits while nothing is."""
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._items))
            batch: list[dict[str, Any]] = []
            while self._items and len(batch) < most:
                payload, size = self._items.popleft()
                self._bytes -= size
                batch.append(payload)
            self._changed.notify_all()
            return batch
