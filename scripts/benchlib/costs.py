"""Rows 4 and 5: the daemon's CPU per single-turn message and its memory (RSS)."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from smarthole.testing import FakeMessagesAPI, echo

from .adapters import message_file
from .procs import Replies, child_result, cpu_seconds, daemon, make_home, rss_mib
from .procs import wait_ready as wait_until_ready
from .report import Row

CHUNK = 100  # messages dropped at once while the daemon runs; it answers them, then the next
IDLE_WINDOW = 1.0  # seconds the idle daemon's CPU is sampled over


def feed(home_root: Path, start: int, count: int, channels: int) -> None:
    """Rename ``count`` one-turn messages into the inbox (ids from ``start``)."""
    staging, inbox = home_root / ".staging", home_root / "inbox"
    for n in range(start, start + count):
        name = f"m{n:06d}.md"
        data = message_file(f"ping {n}", message_id=f"m{n:06d}", channel=f"c{n % channels}")
        (staging / name).write_bytes(data)
        os.rename(staging / name, inbox / name)


def minimal(body: dict[str, Any], n: int) -> dict[str, Any]:
    """A bare call: the daemon's model and max_tokens, a one-line system and user message."""
    return {
        "model": body.get("model"),
        "max_tokens": body.get("max_tokens"),
        "system": "You answer briefly.",
        "messages": [{"role": "user", "content": f"ping {n}"}],
    }


def sdk_loop(path: Path, url: str, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """CPU of a bare anthropic streaming loop over ``bodies``, in its own process."""
    path.write_text(json.dumps(bodies))
    return child_result("sdk", url, str(path))


def costs_rows(
    root: Path,
    fake: FakeMessagesAPI,
    cpu_messages: int,
    marks: list[int],
    channels: int,
    after_backlog: tuple[int, int, float, float | None] | None = None,
) -> list[Row]:
    """Run ``max(marks)`` single-turn messages through one daemon, CHUNK at a time.

    CPU: utime+stime of the daemon over the first ``cpu_messages`` (after one warm-up
    message), minus its idle rate times the elapsed time, per message. Baseline: a bare
    anthropic streaming loop in its own process, as many calls as the daemon made, each a
    one-line request; also the daemon's own request bodies replayed by that loop (so the
    ratio can be split into "bigger requests" and "the daemon's own work").

    ``after_backlog`` is (files, messages answered, RSS, RSS at rest) of the backlog daemon of
    row 2 once it has drained (or at its drain deadline), and once it has let go of what it
    keeps for a busy time (None if not waited for): the "after 10,000 messages" figures come
    from there, so the full run does not push 10,000 messages through two daemons (it would take
    over 10 minutes). The goal applies to a 10,000-file backlog even if it did not drain in
    time (the row names how many were answered): memory only grows with the count.
    """
    home = make_home(root / "costs")
    fake.reset()
    fake.default = echo()
    rss: dict[int, float] = {}
    with daemon(home, fake.url) as process, contextlib.closing(Replies(home)) as answered_so_far:
        pid = process.pid
        wait_until_ready(home, process)
        rss[0] = rss_mib(pid)
        feed(home.root, 0, 1, channels)  # warm-up: lazy imports, the first connection
        answered_so_far.wait_for(1, 30)
        before, at = cpu_seconds(pid), time.perf_counter()
        time.sleep(IDLE_WINDOW)  # a measuring window, not a synchronization
        idle_rate = (cpu_seconds(pid) - before) / (time.perf_counter() - at)
        fake.reset()
        answered = 1  # the warm-up
        before, at = cpu_seconds(pid), time.perf_counter()
        cpu: dict[str, float] = {}
        bodies: list[dict[str, Any]] = []
        for mark in sorted({cpu_messages, *marks}):
            while answered - 1 < mark:
                count = min(CHUNK, mark - (answered - 1))
                feed(home.root, answered, count, channels)
                answered += count
                answered_so_far.wait_for(answered, 300)
                if cpu:
                    fake.reset()  # the fake keeps every request; do not let the bench grow
            if mark == cpu_messages:
                cpu = {"total": cpu_seconds(pid) - before, "elapsed": time.perf_counter() - at}
                bodies = [r.body for r in fake.requests]
                fake.reset()
            if mark in marks:
                rss[mark] = rss_mib(pid)
    per_message = (cpu["total"] - idle_rate * cpu["elapsed"]) / cpu_messages
    bare = [minimal(body, n) for n, body in enumerate(bodies)]
    sdk = sdk_loop(root / "bare.json", fake.url, bare)
    replayed = sdk_loop(root / "replay.json", fake.url, bodies)
    imports = [child_result("import")["rss_mib"] for _ in range(3)]
    anthropic_rss = statistics.median(imports)
    ms = 1000
    detail: dict[str, Any] = {
        "messages": cpu_messages,
        "channels": channels,
        "idle_cpu_per_s": idle_rate,
        "daemon_cpu_s": cpu["total"],
        "elapsed_s": cpu["elapsed"],
        "sdk_minimal_bodies": sdk,
        "sdk_replayed_bodies": replayed,
    }
    rows = [
        Row(
            "daemon CPU per single-turn message",
            per_message * ms,
            "ms",
            sdk["cpu_seconds"] / max(1, sdk["calls"]) * ms,
            "bare SDK loop",
            goal="<= 2x",
            max_ratio=2.0,
            detail=detail,
        ),
        Row(
            "daemon CPU per message, vs SDK replaying its bodies",
            per_message * ms,
            "ms",
            replayed["cpu_seconds"] / max(1, replayed["calls"]) * ms,
            "SDK loop, same bodies",
        ),
        Row(
            "RSS idle, after ready",
            rss[0],
            "MiB",
            anthropic_rss,
            "import anthropic",
            goal="<= baseline + 10 MiB",
            max_value=anthropic_rss + 10,
            detail={"rss_mib": rss, "import_anthropic_runs": imports},
        ),
    ]
    for mark in marks:
        rows.append(
            Row(
                f"RSS after {mark:,} messages",
                rss[mark],
                "MiB",
                rss[0],
                "idle",
                goal="<= idle + 8 MiB" if mark == 10_000 else "",
                max_value=rss[0] + 8 if mark == 10_000 else None,
            )
        )
    if after_backlog is not None:
        files, answered, mib, rest = after_backlog
        big = files >= 10_000
        rows.append(
            Row(
                f"RSS after {answered:,} messages (the backlog daemon), as the last is answered",
                mib,
                "MiB",
                rss[0],
                "idle",
                goal="<= idle + 8 MiB" if big and rest is None else "",
                max_value=rss[0] + 8 if big and rest is None else None,
            )
        )
        if rest is not None:
            rows.append(
                Row(
                    f"RSS after {answered:,} messages (the backlog daemon), at rest",
                    rest,
                    "MiB",
                    rss[0],
                    "idle",
                    goal="<= idle + 8 MiB" if big else "",
                    max_value=rss[0] + 8 if big else None,
                )
            )
    return rows
