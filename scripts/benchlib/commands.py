"""Row 14: message commands (issue 45) — a command file's arrival to its reply in outbox/.

A real daemon (``python -m smarthole run``); each round renames a ``/status`` file into the
inbox and times it until the command's reply file is in the outbox (the claim, the command's
commit, the reply's file and the commit that marks it done). Twice: on an idle channel, and on
a channel whose turn is running (the fake holds its model call), where the command does not
wait for the turn but takes the daemon's fast lane.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from smarthole.pipeline.lifecycle import final_reply_id
from smarthole.pipeline.message import render_message_file
from smarthole.testing import FakeMessagesAPI, hold, text

from .procs import daemon, make_home, poll_until, wait_ready
from .report import Row, percentile


def _time_commands(home: Any, rounds: int, channel: str, tag: str) -> list[float]:
    staging = home.root / ".staging"
    latencies: list[float] = []
    for n in range(rounds + 1):  # round 0 warms up (lazy imports, the first command)
        message = f"{tag}{n:04d}"
        (staging / f"{message}.md").write_bytes(
            render_message_file("/status", id=message, channel=channel)
        )
        reply = final_reply_id(message, 0)
        arrived = time.perf_counter()
        os.rename(staging / f"{message}.md", home.inbox / f"{message}.md")
        poll_until(lambda reply=reply: any(home.outbox.glob(f"*-{reply}.md")), 30, 0.0005)
        if n:
            latencies.append(time.perf_counter() - arrived)
    return latencies


def command_rows(root: Path, fake: FakeMessagesAPI, rounds: int) -> list[Row]:
    home = make_home(root / "commands", inbox={"rescan_seconds": 5.0})
    gate = threading.Event()
    ms = 1000
    with daemon(home, fake.url) as process:
        wait_ready(home, process)
        idle = _time_commands(home, rounds, "idle", "c")
        fake.add(hold(gate, text("at last")))
        (home.root / ".staging" / "busy.md").write_bytes(
            render_message_file("a long question", id="busy", channel="busy")
        )
        os.rename(home.root / ".staging" / "busy.md", home.inbox / "busy.md")
        poll_until(lambda: fake.requests, 30)
        try:
            busy = _time_commands(home, rounds, "busy", "b")
        finally:
            gate.set()
    rows = []
    for name, samples in (("idle channel", idle), ("behind a running turn", busy)):
        detail = {"rounds": len(samples), "max_ms": max(samples) * ms}
        rows += [
            Row(f"command reply ({name}), p50", percentile(samples, 0.5) * ms, "ms",
                detail=detail),
            Row(f"command reply ({name}), p99", percentile(samples, 0.99) * ms, "ms"),
        ]  # fmt: skip
    return rows
