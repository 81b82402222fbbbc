"""Benchmark every goal of issue 13 against a baseline measured in the same run.

    python scripts/bench.py [--quick] [--json PATH] [--only pickup,backlog,...,schedules]

Opt-in (never part of the test suite); exits 0 whatever the figures: the table says, for
each row, whether its goal is met. ``--quick`` runs small sizes in under 2 minutes;
the full run takes about 10. Nothing else heavy should run at the same time.

Rows, each beside its baseline where one applies (see benchlib/ for the details of each):

1. pickup p50/p99: a file renamed into inbox/ of a real ``python -m smarthole run`` (fake
   Messages API on 127.0.0.1, titles off) until it left inbox/ (claimed), read with raw
   inotify so the bench adds no delay. Arrivals are open-loop, 20-80 ms apart. Baselines: a
   bare watchdog Observer in a subprocess that claims the same way, with watchdog's default
   move pairing and with it off (InotifyMoveEventGrouper.delay = 0), on the same schedule.
2. first reply with N files (10,000; quick 1,000) over 10 channels waiting at start: spawn
   -> first file in outbox/; baseline spawn -> ``ready`` in daemon.json with an empty inbox.
   Then whether each channel's turns began in file order (the drain).
3. history in a 10,000-message conversation built through the store's API: the build a turn
   does before each model call at the default budget, and a full reload; baselines raw
   ``SELECT content`` and SELECT + json.loads of the same rows.
4. daemon CPU per single-turn message (utime+stime from /proc, idle rate subtracted);
   baseline: a bare anthropic streaming loop run beside it, chunk by chunk, with one-line
   requests (and replaying the daemon's own bodies). Also on one channel, with the fake
   answering after 50 ms (daemon and loop alike), and the context switches per message.
5. RSS (VmRSS) idle after ready and after 1,000 messages, and of the backlog daemon of row 2
   as it answers the last of its 10,000 (quick: 1,000) and, in a full run, at rest: once,
   quiet for a minute, it has let go of what it keeps for a busy time (the goal's row).
   Baseline a process that only imports anthropic.
6. DB size of the 10,000 x 200-char conversation (WAL checkpointed) vs a raw table.
7. prompt cache, from the fake's request log of a 20-turn conversation with tool loops:
   reuse between consecutive calls of a tool loop and between turns (benchlib/cache.py
   documents the arithmetic), and whether retried requests are byte-identical.
8. desktop burst: 5,000 (quick 1,000) messages sent back to back by a fake SmartHole desktop
   to a real daemon's bridge: how many were acked, ack latency p50/p99/max (the desktop waits
   30 s), reconnects, acks/s (benchlib/desktopburst.py).
9. web view (issue 34): event -> DOM latency p50/p95 over 200 events, opening a 10,000-message
   conversation, and the view's CPU with 20 idle pages open (benchlib/web.py; needs Chromium).
10. search (issue 37): p95 of a two-word query over 100,000 messages (quick 20,000), a
   message's store time and the database's size with the index beside the same store
   without it (benchlib/searchbench.py).
11. approvals (issue 35): an answer file renamed into inbox/ of a real daemon whose call waits
   for approval, until the approved tool starts, p50/p99 over 100 rounds (quick 20)
   (benchlib/approvals.py). Information only: no goal was set.
12. attachments (issue 36): the daemon's peak RSS growth while a 30 MiB PDF goes through, as
   a multiple of its size (goal under 4x), and drop -> request for a 10 MiB photo
   (benchlib/attachments.py).
13. schedules (issue 37): how late a schedule ``every = "1s"`` fires (slot -> message in the
   ledger), p50/p99/max, while files arrive on ten other channels, 25 a second, for 120 s
   (quick: 30 s) (benchlib/schedules.py).
14. fork (issue 47): ``smarthole fork``'s work on a 10,000-message conversation (every turn,
   and its middle turn), beside reading that conversation through the store; goal at most
   2x; and the same with random-letter words, the search index's worst case
   (benchlib/forkbench.py).
15. memory (issue 43): a 10-turn conversation that begins with a 1,500-character profile
   and changes it at turns 3 and 7: turn t+1's reuse of turn t's cache (min), beside the same
   conversation with memory off, and the distinct system prompts (goal 1)
   (benchlib/memorybench.py).
16. budget (issue 44): what reserving a model call's cost adds to the call, in process over a
   real store with a conversation, a day and a month cap (goal at most 0.2 ms), after 1,000
   calls that day (quick: 200) (benchlib/budget.py).
17. commands (issue 45): a ``/status`` file renamed into inbox/ until its reply is in outbox/,
   p50/p99 over 100 rounds (quick 20), on an idle channel and behind a running turn (the fast
   lane) (benchlib/commands.py). Information only: no goal was set.
18. email (issue 46): a mail's arrival in a real Dovecot folder until its reply reaches the
   SMTP server, p50/p95 over 100 rounds (quick 20), beside the same turn from a file
   (benchlib/emailbench.py; needs dovecot-imapd). Information only: no goal was set.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib.adapters import random_texts
from benchlib.approvals import approval_rows
from benchlib.attachments import attachment_rows
from benchlib.budget import budget_rows
from benchlib.cachebench import cache_rows
from benchlib.commands import command_rows
from benchlib.costs import costs_rows
from benchlib.desktopburst import burst_rows
from benchlib.emailbench import email_rows
from benchlib.forkbench import fork_rows
from benchlib.latency import backlog_rows, pickup_rows
from benchlib.memorybench import memory_rows
from benchlib.report import Row, markdown, save_json, table
from benchlib.schedules import schedule_rows
from benchlib.searchbench import search_rows
from benchlib.storage import storage_rows
from benchlib.web import web_rows

import smarthole
from smarthole import __version__
from smarthole.testing import FakeMessagesAPI, echo

PARTS = (
    "pickup",
    "backlog",
    "history",
    "costs",
    "cache",
    "burst",
    "web",
    "search",
    "approvals",
    "attachments",
    "schedules",
    "fork",
    "memory",
    "budget",
    "commands",
    "email",
)


@dataclass(frozen=True)
class Sizes:
    arrivals: int
    backlog: int
    drain_timeout: float
    ready_runs: int
    history_messages: int
    history_repeats: int
    reload_repeats: int
    cpu_messages: int
    rss_marks: tuple[int, ...]
    rest_timeout: float  # for the backlog daemon to let go once quiet; 0: not waited for
    channels: int = 10
    turns: int = 20
    burst: int = 5_000
    search_messages: int = 100_000
    store_samples: int = 400
    approvals: int = 100
    schedule_seconds: float = 120.0
    budget_prior: int = 1_000
    emails: int = 100


FULL = Sizes(400, 10_000, 360.0, 3, 10_000, 200, 10, 1_000, (1_000,), 120.0)
QUICK = Sizes(
    100,
    1_000,
    20.0,
    1,
    10_000,
    50,
    5,
    200,
    (1_000,),
    0.0,
    burst=1_000,
    search_messages=20_000,
    approvals=20,
    schedule_seconds=30.0,
    budget_prior=200,
    emails=20,
)


def measure(
    part: str, sizes: Sizes, root: Path, fake: FakeMessagesAPI, shared: dict[str, Any]
) -> list[Row]:
    """The rows of one part; ``shared`` carries the backlog daemon's RSS to the costs rows."""
    fake.reset()
    fake.default = echo()
    runs: dict[str, Callable[[], list[Row]]] = {
        "pickup": lambda: pickup_rows(root, sizes.arrivals, seed=13),
        "backlog": lambda: backlog_rows(
            root,
            fake.url,
            sizes.backlog,
            sizes.channels,
            sizes.drain_timeout,
            sizes.ready_runs,
            sizes.rest_timeout,
        ),
        "history": lambda: storage_rows(
            root,
            random_texts(sizes.history_messages, 200),
            sizes.history_repeats,
            sizes.reload_repeats,
        ),
        "costs": lambda: costs_rows(
            root,
            fake,
            sizes.cpu_messages,
            list(sizes.rss_marks),
            sizes.channels,
            after_backlog=shared.get("backlog"),
        ),
        "cache": lambda: cache_rows(root, fake, sizes.turns),
        "burst": lambda: burst_rows(root, sizes.burst),
        "web": lambda: web_rows(root),
        "search": lambda: search_rows(root, sizes.search_messages, sizes.store_samples),
        "approvals": lambda: approval_rows(root, fake, sizes.approvals),
        "attachments": lambda: attachment_rows(root, fake),
        "schedules": lambda: schedule_rows(root, sizes.schedule_seconds),
        "fork": lambda: fork_rows(root, sizes.history_messages, sizes.reload_repeats),
        "memory": lambda: memory_rows(root, fake),
        "budget": lambda: budget_rows(root, 2_000, sizes.budget_prior),
        "commands": lambda: command_rows(root, fake, sizes.approvals),
        "email": lambda: email_rows(root, fake, sizes.emails),
    }
    rows = runs[part]()
    if part == "backlog":
        detail = rows[0].detail
        shared["backlog"] = (
            detail["files"],
            detail["replies_at_rss"],
            detail["rss_after_mib"],
            detail["rss_at_rest_mib"],
        )
    return rows


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        )
    except OSError:
        return "?"
    return done.stdout.strip() or "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, under 2 minutes")
    parser.add_argument("--json", type=Path, help="where to write the JSON (default: run folder)")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run")
    parser.add_argument("--keep", action="store_true", help="keep the run folder")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    sizes = QUICK if args.quick else FULL
    root = Path(tempfile.mkdtemp(prefix="smarthole-bench-"))
    meta: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "commit": commit(),
        "version": __version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_before": load(),
        "sizes": sizes.__dict__,
        "seconds": {},
    }
    # The daemons start from bytecode, as an installed smarthole does (pip compiles it). With
    # PYTHONDONTWRITEBYTECODE set, a source checkout would compile every module at each
    # start instead: a quarter of a second of start-up that no user pays.
    compileall.compile_dir(Path(smarthole.__file__).parent, quiet=1)
    rows: list[Row] = []
    shared: dict[str, Any] = {}
    started = time.perf_counter()
    with FakeMessagesAPI() as fake:
        for part in parts:
            at = time.perf_counter()
            print(f"[bench] {part}...", file=sys.stderr, flush=True)
            # The backlog part leaves 10,000 files and a database in the page cache: written
            # back during the next part, they were timed with it (reload 1.32x alone, 1.65x
            # right after the backlog).
            os.sync()
            try:
                rows += measure(part, sizes, root, fake, shared)
            except Exception as exc:  # one broken part must not hide the others' figures
                print(f"[bench] {part} failed: {exc!r}", file=sys.stderr, flush=True)
                rows.append(Row(f"{part}: FAILED ({type(exc).__name__}: {exc})", None, ""))
            meta["seconds"][part] = round(time.perf_counter() - at, 1)
    meta["seconds"]["total"] = round(time.perf_counter() - started, 1)
    meta["load_after"] = load()
    path = args.json or root / "bench.json"
    save_json(path, rows, meta)
    print(table(rows))
    if args.markdown:
        print()
        print(markdown(rows))
    print(
        f"\n{meta['mode']} run of {meta['commit']} in {meta['seconds']['total']:.0f}s; "
        f"load {meta['load_before']} -> {meta['load_after']}; JSON: {path}"
    )
    if not args.keep:  # the homes go; the JSON stays
        for entry in root.iterdir():
            if entry.resolve() != path.resolve():
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        if not any(root.iterdir()):
            root.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
