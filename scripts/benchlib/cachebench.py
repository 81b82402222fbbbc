"""Row 7: how much of each model request the prompt cache could reuse, and retried requests.

A real daemon holds a 20-turn conversation on one channel (each message a follow-up); some
turns run a tool loop (reading a 3,000-character workspace note), and some first attempts
get a 429/529/500 that the daemon retries. Messages are of ordinary size: 200 characters
asked, 800 answered. The fake's request log is then read with the arithmetic of
:mod:`benchlib.cache`.
"""

from __future__ import annotations

import functools
import itertools
import re
import statistics
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from smarthole.formats import utc_now
from smarthole.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    Reply,
    overloaded,
    rate_limited,
    server_error,
    text,
    tool_use,
)

from .adapters import message_file, random_texts, start_daemon_thread
from .cache import identical, request_blocks, request_bytes, reuse
from .procs import daemon, daemon_env, make_home, poll_until, replies, wait_ready
from .report import Row

TURN = re.compile(r"bench-turn-(\d+)\b")
TOOL_ROUNDS = {3: 2, 6: 3, 9: 1, 12: 2, 15: 3, 18: 2}  # turn -> tool calls before the answer
ERRORS = {  # (turn, call index in the turn) -> the first attempt's error
    (5, 0): lambda: rate_limited(retry_after_ms=20),
    (12, 1): overloaded,
    (16, 0): server_error,
}
RETRY = {"base_delay_seconds": 0.05, "max_delay_seconds": 1.0}
NOTES = random_texts(1, 3_000, seed=7)[0]  # the workspace file the tool loops read
ANSWER = random_texts(1, 800, seed=8)[0]  # an answer of ordinary length
ASK = random_texts(1, 200, seed=9)[0]


def where(request: RecordedRequest) -> tuple[int, int]:
    """(turn, calls already made in it): from the newest user message with text in it."""
    messages = request.messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        found = TURN.search(str(message.get("content"))) if message.get("role") == "user" else None
        if found:
            after = messages[index + 1 :]
            return int(found.group(1)), sum(1 for m in after if m.get("role") == "assistant")
    return 0, 0


class Script:
    """The fake's answers: tool calls for the planned rounds, errors once, then text."""

    def __init__(self) -> None:
        self.labels: list[tuple[str, int, int]] = []  # per request: ok/error, turn, call
        self._failed: set[tuple[int, int]] = set()
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        turn, call = where(request)
        with self._lock:
            if (turn, call) in ERRORS and (turn, call) not in self._failed:
                self._failed.add((turn, call))
                self.labels.append(("error", turn, call))
                return ERRORS[(turn, call)]()
            self.labels.append(("ok", turn, call))
        if call < TOOL_ROUNDS.get(turn, 0):
            return tool_use("read_file", {"path": "notes.md"})
        return text(f"Answer to turn {turn}. {ANSWER}")


def conversation(root: Path, fake: FakeMessagesAPI, turns: int) -> tuple[list[Any], Script]:
    home = make_home(root / "cache", retry=RETRY)
    (home.workspace / "notes.md").write_text(NOTES)
    script = Script()
    fake.reset()
    fake.default = script
    with daemon(home, fake.url) as process:
        wait_ready(home, process)
        for turn in range(1, turns + 1):
            name = f"turn-{turn:03d}.md"
            body = f"bench-turn-{turn} Please follow up on what we said. {ASK}"
            staged = home.root / ".staging" / name
            staged.write_bytes(message_file(body, message_id=f"turn{turn}", channel="cache"))
            staged.rename(home.inbox / name)
            answered = functools.partial(lambda n: replies(home) >= n, turn)
            poll_until(answered, 60, interval=0.005)
    return fake.requests, script


def minute_retry(root: Path, fake: FakeMessagesAPI) -> bool:
    """A retry after the clock's minute changed: the daemon runs in this process with a clock
    that steps 61 s ahead when the first attempt is refused (as a long retry-after would)."""
    home = make_home(root / "clock", retry=RETRY)
    offset = [timedelta(0)]
    refused = threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        if not refused.is_set():
            refused.set()
            offset[0] = timedelta(seconds=61)
            return rate_limited(retry_after_ms=20)
        return text("ok")

    fake.reset()
    fake.default = answer
    staged = home.root / ".staging" / "clock.md"
    staged.write_bytes(message_file("bench-turn-1 What time is it?", message_id="c1", channel="t"))
    staged.rename(home.inbox / "clock.md")
    stop = start_daemon_thread(home, daemon_env(fake.url), lambda: utc_now() + offset[0])
    try:
        poll_until(lambda: replies(home) >= 1, 60, interval=0.005)
    finally:
        stop()
    first, second = fake.requests[:2]
    return identical(first.body, second.body)


def cache_rows(root: Path, fake: FakeMessagesAPI, turns: int) -> list[Row]:
    requests, script = conversation(root, fake, turns)
    assert len(requests) == len(script.labels), (len(requests), len(script.labels))
    calls: dict[int, list[dict[str, Any]]] = {}
    retried = []
    labelled = list(zip(requests, script.labels, strict=True))
    for index, (request, (label, turn, _call)) in enumerate(labelled):
        if label == "ok":
            calls.setdefault(turn, []).append(request.body)
        elif index + 1 < len(requests):  # one channel: the next request is the retry
            retried.append(identical(request.body, requests[index + 1].body))
    loop = [reuse(a, b) for bodies in calls.values() for a, b in pairs(bodies)]
    loop_share = [r.reused_bytes / r.current_bytes for r in loop]
    loop_common = [_common_share(a, b, of=b) for bodies in calls.values() for a, b in pairs(bodies)]
    ordered = [calls[t] for t in sorted(calls)]
    across = [reuse(a[-1], b[0]) for a, b in pairs(ordered)]
    across_share = [r.reused_bytes / r.previous_bytes for r in across]
    across_common = [_common_share(a[-1], b[0], of=a[-1]) for a, b in pairs(ordered)]
    later_minute = minute_retry(root, fake)
    same = sum(retried) + later_minute
    detail: dict[str, Any] = {
        "turns": turns,
        "requests": len(requests),
        "tool_loop_pairs": len(loop),
        "tool_loop_min": min(loop_share, default=None),
        "tool_loop_reachable": sum(r.reachable for r in loop),
        "tool_loop_identical_prefix_mean": statistics.fmean(loop_common) if loop_common else None,
        "turn_pairs": len(across),
        "turn_min": min(across_share, default=None),
        "turn_reachable": sum(r.reachable for r in across),
        "turn_identical_prefix_mean": statistics.fmean(across_common) if across_common else None,
        "breakpoints_last_request": _breakpoints(requests[-1].body) if requests else None,
        "bytes_first_request": request_bytes(requests[0].body) if requests else None,
        "bytes_last_request": request_bytes(requests[-1].body) if requests else None,
        "reused_bytes_last_turn_pair": across[-1].reused_bytes if across else None,
        "retries_same_minute_identical": f"{sum(retried)}/{len(retried)}",
        "retry_after_minute_change_identical": later_minute,
    }
    share = statistics.fmean
    return [
        Row(
            "cache: consecutive calls of one tool loop, reused (mean)",
            share(loop_share) if loop_share else None,
            "%",
            goal=">= 95%",
            min_value=0.95,
            detail=detail,
        ),
        Row(
            "cache: same, worst pair (min)",
            min(loop_share, default=None),
            "%",
            goal=">= 95%",
            min_value=0.95,
        ),
        Row(
            "cache: same, identical leading bytes (the most any breakpoint could reuse)",
            share(loop_common) if loop_common else None,
            "%",
        ),
        Row(
            f"cache: turn t+1 vs turn t, {turns} turns, reused (mean)",
            share(across_share) if across_share else None,
            "%",
            goal=">= 90%",
            min_value=0.90,
        ),
        Row(
            "cache: same, worst pair (min)",
            min(across_share, default=None),
            "%",
            goal=">= 90%",
            min_value=0.90,
        ),
        Row(
            f"retried requests byte-identical ({same}/{len(retried) + 1})",
            same / (len(retried) + 1),
            "%",
            goal="100%",
            min_value=1.0,
        ),
    ]


def pairs(items: list[Any]) -> list[tuple[Any, Any]]:
    return list(itertools.pairwise(items))


def _common_share(
    previous: dict[str, Any], current: dict[str, Any], *, of: dict[str, Any]
) -> float:
    """Identical leading bytes, breakpoints or not, as a share of request ``of``."""
    common = request_blocks(current)[: reuse(previous, current).common_blocks]
    return sum(b.size for b in common) / request_bytes(of)


def _breakpoints(body: dict[str, Any]) -> list[int]:
    return [i for i, b in enumerate(request_blocks(body)) if b.breakpoint]
