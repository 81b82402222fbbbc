"""How much of a Messages API request the prompt cache could reuse from the request before it.

A model of the API's cache order, applied to the request bodies the fake server recorded:

* A request is one sequence of blocks: each tool definition, then each system block (a plain
  string system prompt is one text block), then each content block of each message in order
  (a string content is one text block). A message block carries its message's role and index,
  so a block only matches the same block in the same place of the conversation.
* Each block is serialized canonically, ``json.dumps(block, sort_keys=True)`` with its
  ``cache_control`` key removed, so adding or moving a breakpoint changes no block's bytes.
  The bytes of a block are the UTF-8 length of that text; the bytes of a request are the sum
  over its blocks (the envelope — model, max_tokens, stream — is not counted).
* A breakpoint is a block that had a ``cache_control`` key.
* Reuse of ``previous`` by ``current``: take the longest common prefix of their block
  sequences (k blocks equal). The cache that ``previous`` wrote ends at its breakpoints; the
  part ``current`` can read is the prefix up to and including the last breakpoint of
  ``previous`` that lies inside the common prefix (index < k). Reused bytes are the bytes of
  ``current``'s blocks up to there; 0 if no breakpoint of ``previous`` is inside, or if the two
  requests name different models (each model has its own cache).

The fraction reported for consecutive calls of one tool loop is reused / bytes of the later
call; for turn t+1 against turn t it is reused / bytes of turn t's last request. ``reachable``
adds what the real API also needs for a read: the later request must itself have a breakpoint
at or at most :data:`LOOKBACK` blocks after the end of the reused prefix (the API looks for
earlier cache entries only that far back from each breakpoint).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

LOOKBACK = 20
"""Blocks before a breakpoint at which the API still finds an earlier cache entry."""


@dataclass(frozen=True)
class Block:
    """One block of a request, as the cache sees it."""

    key: str  # where it sits (tools / system / role and message index) and its canonical JSON
    size: int  # bytes of the canonical JSON
    breakpoint: bool


@dataclass(frozen=True)
class Reuse:
    """What ``current`` could read from the cache ``previous`` wrote."""

    common_blocks: int  # length of the identical block prefix
    reused_bytes: int  # bytes up to the last breakpoint of ``previous`` inside that prefix
    previous_bytes: int
    current_bytes: int
    reachable: bool  # ``current`` has a breakpoint close enough after it to look it up


def canonical(block: Any) -> str:
    """A block's JSON with sorted keys and without ``cache_control``."""
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, ensure_ascii=False)


def _block(where: str, raw: Any) -> Block:
    text = canonical(raw)
    marked = isinstance(raw, dict) and "cache_control" in raw
    return Block(f"{where}\n{text}", len(text.encode()), marked)


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def request_blocks(body: dict[str, Any]) -> list[Block]:
    """The request ``body`` as the cache's sequence: tools, system blocks, message blocks."""
    blocks = [_block("tools", tool) for tool in body.get("tools") or []]
    blocks += [_block("system", b) for b in _as_blocks(body.get("system"))]
    for index, message in enumerate(body.get("messages") or []):
        where = f"message {index} {message.get('role')}"
        blocks += [_block(where, b) for b in _as_blocks(message.get("content"))]
    return blocks


def request_bytes(body: dict[str, Any]) -> int:
    return sum(b.size for b in request_blocks(body))


def reuse(previous: dict[str, Any], current: dict[str, Any]) -> Reuse:
    """How much of ``current`` the cache written by ``previous`` covers (see the module doc)."""
    before, after = request_blocks(previous), request_blocks(current)
    common = 0
    for a, b in zip(before, after, strict=False):
        if a.key != b.key:
            break
        common += 1
    same_model = previous.get("model") == current.get("model")
    marks = [i for i in range(common) if before[i].breakpoint] if same_model else []
    end = marks[-1] if marks else -1
    reused = sum(b.size for b in after[: end + 1])
    reachable = end >= 0 and any(
        end <= i <= end + LOOKBACK for i, b in enumerate(after) if b.breakpoint
    )
    return Reuse(
        common_blocks=common,
        reused_bytes=reused,
        previous_bytes=sum(b.size for b in before),
        current_bytes=sum(b.size for b in after),
        reachable=reachable,
    )


def identical(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two request bodies are byte-identical once serialized with sorted keys."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
