"""Row 10: approvals (issue 35) — from an answer file's arrival to the approved tool's start.

A real daemon (``python -m smarthole run``) whose ``[approvals] tools`` names a bench tool that
writes the wall-clock time it started; each round a message makes the model call it, the call
waits (its message deferred in the ledger, no worker held), and the answer file is renamed into
the inbox. The time between that rename and the tool's own stamp is the figure: the claim, the
decision's commit, the dispatch of the message made due, the turn's resumption and the loop
reaching the call.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from smarthole.pipeline.message import render_message_file
from smarthole.testing import FakeMessagesAPI, text, tool_use

from .procs import daemon, make_home, poll_until, wait_ready
from .report import Row, percentile

TOOL = '''
import time

from smarthole import hookimpl
from smarthole.tools import ToolContext


def stamp(n: int, *, context: ToolContext) -> str:
    """Write when this call started.

    :param n: The round.
    """
    started = time.time()
    (context.app.home.root / f"stamp-{n}").write_text(repr(started))
    return "stamped"


@hookimpl
def register_tools(register):
    register(stamp)
'''


def _status(database: Path, message_id: str) -> str | None:
    with sqlite3.connect(database) as db:
        row = db.execute("SELECT status FROM inbox WHERE message_id = ?", (message_id,)).fetchone()
    return row[0] if row else None


def _approval(outbox: Path, round_: int) -> str | None:
    for path in outbox.glob("*.md"):
        content = path.read_text()
        if 'kind = "approval"' in content and f'"n": {round_}' in content:
            return content.split('approval = "', 1)[1].split('"', 1)[0]
    return None


def approval_rows(root: Path, fake: FakeMessagesAPI, rounds: int) -> list[Row]:
    home = make_home(
        root / "approvals",
        plugins={"paths": ["plugins"]},
        approvals={"tools": ["stamp"]},
        inbox={"rescan_seconds": 5.0},
    )
    (home.root / "plugins").mkdir(exist_ok=True)
    (home.root / "plugins" / "benchtool.py").write_text(TOOL)
    staging = home.root / ".staging"
    latencies: list[float] = []
    with daemon(home, fake.url) as process:
        wait_ready(home, process)
        for n in range(rounds + 1):  # round 0 warms up (lazy imports, first turn)
            fake.add(tool_use("stamp", {"n": n}))
            fake.add(text(f"stamped {n}"))
            message = f"m{n:04d}"
            (staging / f"{message}.md").write_bytes(
                render_message_file(f"stamp {n}", id=message, channel="a")
            )
            os.rename(staging / f"{message}.md", home.inbox / f"{message}.md")
            approval = poll_until(lambda n=n: _approval(home.outbox, n), 30)
            poll_until(lambda m=message: _status(home.database, m) == "deferred", 30)
            answer = f"a{n:04d}.md"
            (staging / answer).write_bytes(
                render_message_file("", id=f"a{n:04d}", approve=approval)
            )
            arrived = time.time()
            os.rename(staging / answer, home.inbox / answer)
            stamp = home.root / f"stamp-{n}"
            poll_until(stamp.exists, 30, interval=0.0005)
            poll_until(lambda stamp=stamp: stamp.read_text().strip(), 5)
            if n:
                latencies.append(float(stamp.read_text()) - arrived)
            poll_until(lambda m=message: _status(home.database, m) == "done", 30)
    ms = 1000
    detail: dict[str, Any] = {"rounds": len(latencies), "max_ms": max(latencies) * ms}
    return [
        Row("approval: answer file -> tool start, p50", percentile(latencies, 0.5) * ms, "ms",
            detail=detail),
        Row("approval: answer file -> tool start, p99", percentile(latencies, 0.99) * ms, "ms"),
    ]  # fmt: skip
