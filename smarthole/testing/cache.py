"""The fake's prompt cache: realistic ``usage`` for replies that do not script their own.

It follows the Messages API's prompt caching closely enough for tests and benchmarks to see
what a request would cost. A request is the sequence of blocks tools → system → messages
(each tool, each system block, each content block of each message). A block carrying
``cache_control`` is a breakpoint. The prefix up to and including a breakpoint (compared
without ``cache_control`` keys, for the same model) is read from the cache when an earlier
request wrote it at a breakpoint; as in the API, the 20 block boundaries before each
breakpoint are checked too, and the longest prefix found is read. The rest up to the last
breakpoint is written to the cache; what follows the last breakpoint is plain input. A
top-level ``cache_control`` (automatic caching) makes the last block a breakpoint. Tokens are
bytes of canonical JSON / 4, rounded up, per part. Unlike the real service there is no minimum
cacheable length and no expiry.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

LOOKBACK = 20
"""How many blocks before a breakpoint are also checked for a hit, as the API does."""


def tokens(size: int) -> int:
    """Bytes to tokens: four bytes a token, rounded up."""
    return -(-size // 4)


class PromptCache:
    """The prefixes written so far (for the fake's lifetime); thread-safe."""

    def __init__(self) -> None:
        self._written: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any], output: list[dict[str, Any]]) -> dict[str, int]:
        """The usage of answering ``body`` with ``output``; writes its breakpoints' prefixes."""
        sizes: list[int] = []
        prefixes: list[str] = []
        breakpoints: list[int] = []
        digest = hashlib.sha256(json.dumps(body.get("model", "")).encode())
        for index, (block, cached) in enumerate(_blocks(body)):
            data = _canonical(block)
            digest.update(b"%d:" % len(data) + data)
            sizes.append(len(data))
            prefixes.append(digest.copy().hexdigest())
            if cached:
                breakpoints.append(index)
        if body.get("cache_control") is not None and sizes:  # automatic: the last block
            breakpoints = sorted({*breakpoints, len(sizes) - 1})
        with self._lock:
            hit = max(
                (
                    i
                    for b in breakpoints
                    for i in range(b, max(-1, b - LOOKBACK - 1), -1)
                    if prefixes[i] in self._written
                ),
                default=-1,
            )
            self._written.update(prefixes[i] for i in breakpoints)
        last = breakpoints[-1] if breakpoints else -1
        return {
            "input_tokens": tokens(sum(sizes[last + 1 :])),
            "output_tokens": max(1, tokens(len(_canonical(output)))),
            "cache_creation_input_tokens": tokens(sum(sizes[hit + 1 : last + 1])),
            "cache_read_input_tokens": tokens(sum(sizes[: hit + 1])),
        }


def _blocks(body: dict[str, Any]) -> Iterator[tuple[Any, bool]]:
    """Each block of a request in cache order, and whether it is a breakpoint."""
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for section in (body.get("tools") or [], system):
        for block in section if isinstance(section, list) else [section]:
            yield block, _marked(block)
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            yield message, False
            continue
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for position, block in enumerate(content if isinstance(content, list) else [content]):
            # The role opens each message, so moving a block between messages changes the prefix.
            yield (
                ({"role": message.get("role")} if position == 0 else {}) | {"block": block},
                (_marked(block)),
            )


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and block.get("cache_control") is not None


def _canonical(value: Any) -> bytes:
    """``value`` as compact, key-sorted JSON, with every ``cache_control`` key left out."""
    data = _dumps(value)
    if '"cache_control"' in data:  # rare: the walk costs ten times the dump
        data = _dumps(_without_cache_control(value))
    return data.encode()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value
