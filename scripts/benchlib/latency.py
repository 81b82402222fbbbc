"""Rows 1 and 2: pickup latency of a live daemon, and the first reply on a backlog at start."""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .adapters import message_file
from .procs import (
    IN_DELETE,
    IN_MOVED_FROM,
    FolderEvents,
    Replies,
    Timeout,
    child,
    daemon,
    fake_server_process,
    make_home,
    poll_until,
    replies,
    rss_mib,
    wait_ready,
)
from .report import Row, percentile

CLAIM_TIMEOUT = 10.0  # seconds after the last arrival; the daemon rescans every 5 s anyway


def schedule(count: int, seed: int, low: float, high: float) -> list[float]:
    """Arrival times (seconds from the start), gaps drawn uniformly from [low, high]."""
    rng = random.Random(seed)
    times, at = [], 0.0
    for _ in range(count):
        at += rng.uniform(low, high)
        times.append(at)
    return times


def arrive(inbox: Path, staging: Path, times: list[float], prefix: str) -> dict[str, Any]:
    """Rename a staged file into ``inbox`` at each of ``times`` (open loop: an arrival never
    waits for an earlier claim) and time each until it leaves ``inbox`` (raw inotify)."""
    names = [f"{prefix}-{n:05d}.md" for n in range(len(times))]
    for n, name in enumerate(names):
        (staging / name).write_bytes(message_file(f"ping {n}", message_id=name[:-3], channel="p"))
    events = FolderEvents(inbox, IN_MOVED_FROM | IN_DELETE)
    started: dict[str, float] = {}
    done: dict[str, float] = {}
    origin = time.perf_counter() + 0.05
    give_up = origin + times[-1] + CLAIM_TIMEOUT
    index = 0
    try:
        while len(done) < len(names):
            now = time.perf_counter()
            if index < len(names) and now >= origin + times[index]:
                name = names[index]
                started[name] = time.perf_counter()
                os.rename(staging / name, inbox / name)
                index += 1
                continue
            if now > give_up:
                break
            until = origin + times[index] if index < len(names) else give_up
            for _mask, name, at in events.read(until - now):
                if name in started and name not in done:
                    done[name] = at
    finally:
        events.close()
    latencies = [done.get(n, give_up) - started[n] for n in started]
    return {
        "n": len(latencies),
        "missed": len(started) - len(done),
        "p50": percentile(latencies, 0.5),
        "p90": percentile(latencies, 0.9),
        "p99": percentile(latencies, 0.99),
        "max": max(latencies),
        "mean": statistics.fmean(latencies),
    }


def daemon_pickup(root: Path, url: str, times: list[float]) -> dict[str, Any]:
    home = make_home(root / "pickup")
    staging = home.root / ".staging"
    with daemon(home, url) as process:
        wait_ready(home, process)
        warm = arrive(home.inbox, staging, [0.0], "warm")  # first claim and turn: lazy imports
        poll_until(lambda: replies(home) >= 1, 30)
        result = arrive(home.inbox, staging, times, "bench")
        result["warm_up_seconds"] = warm["max"]
        poll_until(lambda: replies(home) >= len(times) + 1, 60, interval=0.02)
    return result


def watchdog_pickup(root: Path, times: list[float], pairing: str) -> dict[str, Any]:
    folder, claimed, staging = (root / f"watchdog-{pairing}" / n for n in ("in", "out", "stage"))
    for path in (folder, claimed, staging):
        path.mkdir(parents=True)
    process = child("watchdog", str(folder), str(claimed), pairing)
    try:
        assert process.stdout is not None and process.stdin is not None
        json.loads(process.stdout.readline())  # {"ready": true}
        arrive(folder, staging, [0.0], "warm")
        return arrive(folder, staging, times, "bench")
    finally:
        if process.stdin:
            process.stdin.close()
        process.wait(timeout=30)


def pickup_rows(root: Path, count: int, seed: int) -> list[Row]:
    """Row 1. Arrivals 20-80 ms apart, so earlier claims (renames out of inbox/, each an
    IN_MOVED_FROM) happen between arrivals: that is what meets watchdog's move pairing.

    The daemon's replies come from a fake server in a process of its own, so that this
    process does nothing but time the claims, as it does for the bare watchdog baseline.
    """
    times = schedule(count, seed, 0.020, 0.080)
    with fake_server_process() as url:
        ours = daemon_pickup(root, url, times)
    paired = watchdog_pickup(root, times, "default")
    bare = watchdog_pickup(root, times, "off")
    detail = {"smarthole": ours, "watchdog_default": paired, "watchdog_pairing_off": bare}
    ms = 1000
    return [
        Row(
            "pickup p50, rename into inbox -> claimed",
            ours["p50"] * ms,
            "ms",
            bare["p50"] * ms,
            "bare watchdog, pairing off",
            detail=detail,
        ),
        Row(
            "pickup p99",
            ours["p99"] * ms,
            "ms",
            bare["p99"] * ms,
            "bare watchdog, pairing off",
            goal="<= 5 ms and <= 5x",
            max_value=5.0,
            max_ratio=5.0,
        ),
        Row(
            "pickup p99, bare watchdog (default pairing)",
            paired["p99"] * ms,
            "ms",
            bare["p99"] * ms,
            "pairing off",
        ),
    ]


# -- row 2: a backlog at start ------------------------------------------------------------


def write_backlog(home_inbox: Path, staging: Path, count: int, channels: int) -> None:
    """``count`` files over ``channels`` channels, written in name order (so mtime order too)."""
    for n in range(count):
        name = f"{n:06d}-backlog.md"
        data = message_file(f"backlog {n}", message_id=f"b{n:06d}", channel=f"c{n % channels}")
        (staging / name).write_bytes(data)
        os.rename(staging / name, home_inbox / name)


def channel_order(database: Path) -> dict[str, int]:
    """Per channel, whether turns began in file order: pairs checked and pairs out of order."""
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT c.channel, t.message_id FROM turns t JOIN conversations c "
            "ON c.id = t.conversation_id ORDER BY c.channel, c.created_at, t.number"
        ).fetchall()
    seen: dict[str, int] = {}
    checked = violations = 0
    for channel, message_id in rows:
        index = int(message_id.lstrip("b"))
        if channel in seen:
            checked += 1
            violations += index < seen[channel]
        seen[channel] = index
    return {"turns": len(rows), "pairs_checked": checked, "violations": violations}


LET_GO = "let go of the kept history"  # smarthole/daemon/upkeep.py, once it has been quiet


def backlog_rows(
    root: Path,
    url: str,
    count: int,
    channels: int,
    drain_timeout: float,
    ready_runs: int,
    rest_timeout: float = 0.0,
) -> list[Row]:
    """Row 2: spawn -> first outbox file with ``count`` waiting; baseline spawn -> ready.

    Its RSS is read twice: as the last reply appears, and (given a ``rest_timeout``) once the
    quiet daemon has let go of what it keeps for a busy time (``[daemon]
    idle_release_seconds``, 60 s by default), as the log says.
    """
    home = make_home(root / "backlog")
    write_backlog(home.inbox, home.root / ".staging", count, channels)
    found: dict[str, float] = {}
    spawned = time.perf_counter()
    backlog_spawned = spawned
    with daemon(home, url) as process:

        def first_reply() -> bool:
            if "ready" not in found and (home.state / "daemon.json").exists():
                data = json.loads((home.state / "daemon.json").read_text() or "{}")
                if data.get("ready") and data.get("pid") == process.pid:
                    found["ready"] = time.perf_counter()
            return replies(home) >= 1

        poll_until(first_reply, 120)
        first = time.perf_counter() - spawned
        answered = Replies(home)
        try:
            answered.wait_for(count, drain_timeout)
            drained: float | None = time.perf_counter() - spawned
        except Timeout:
            drained = None
        finally:
            answered.close()
        rss_after = rss_mib(process.pid)  # the RSS rows "after 10,000 messages" (see costs.py)
        rss_rest = None
        if drained and rest_timeout:
            log = home.root / "daemon.log"
            with contextlib.suppress(Timeout):
                poll_until(lambda: LET_GO in log.read_text(), rest_timeout, interval=0.5)
                rss_rest = rss_mib(process.pid)
    order = channel_order(home.database)
    ready, sdk_import = [], []
    for run in range(ready_runs):
        empty = make_home(root / f"empty-{run}")
        spawned = time.perf_counter()
        with daemon(empty, url) as process:
            ready.append(wait_ready(empty, process) - spawned)
        sdk_import.append(import_seconds("anthropic"))  # in turn: a drift hits both alike
    detail = {
        "files": count,
        "channels": channels,
        "ready_with_backlog_s": found["ready"] - backlog_spawned if "ready" in found else None,
        "drained_s": drained,
        "drain_timeout_s": drain_timeout,
        "replies_at_rss": len(answered.names),
        "rss_after_mib": rss_after,
        "rss_at_rest_mib": rss_rest,
        "order": order,
        "ready_empty_runs_s": ready,
        "import_anthropic_runs_s": sdk_import,
    }
    done = "all drained" if drained else f"{order['turns']:,} of {count:,} begun in time"
    return [
        Row(
            f"first reply, {count:,} files waiting at start",
            first,
            "s",
            statistics.median(ready),
            "spawn -> ready, empty inbox",
            goal="<= 2 s",
            max_value=2.0,
            detail=detail,
        ),
        Row(
            "spawn -> ready, empty inbox",
            statistics.median(ready),
            "s",
            statistics.median(sdk_import),
            "python -c 'import anthropic' alone",
            goal="<= baseline + 0.15 s",
            max_value=statistics.median(sdk_import) + 0.15,
            detail={"ready_runs_s": ready, "import_runs_s": sdk_import},
        ),
        Row(
            "backlog drains in per-channel order (violations)",
            float(order["violations"]),
            "",
            goal=f"0 ({done})",
            max_value=0.0,
            detail={**order, "drained_s": drained},
        ),
    ]


def import_seconds(module: str) -> float:
    """Spawn -> exit of a Python that imports ``module`` and nothing else."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
    return time.perf_counter() - started
