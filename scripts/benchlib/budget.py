"""Row 14: budget (issue 44) — what reserving a model call's cost adds to the call.

In process, over a home's real store: a ``CallMeter`` held to every cap at once (its
conversation's, the day's, the month's) reserves a bound before each call — the check of the
caps and the stored reservation, one transaction — and its reply's transaction replaces it by
the real cost. The spend table already holds ``prior`` answered calls of the same day, spread
over 50 conversations (the caps' running totals make that number not matter). The figure is
the reservation's CPU time per call (the thread's, p50): on a machine shared with other work
its wall time also counts waiting for a core; that is in the detail, with the p99, the mean
and the settle's CPU time (a durable commit here; in the daemon it joins the reply's).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from smarthole.agent.budget import CallMeter
from smarthole.agent.client import ModelReply
from smarthole.app import App
from smarthole.db.spend import Spend, SpendPlace
from smarthole.home import Home

from .report import Row, percentile

USAGE = {
    "input_tokens": 900,
    "output_tokens": 120,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 2000,
}
CONFIG = """
[budget]
per_conversation = 1000.0
per_day = 100000.0
per_month = 1000000.0
"""


def budget_rows(root: Path, calls: int, prior: int) -> list[Row]:
    home = Home(root / "budget-home")
    home.ensure()
    home.config_file.write_text(CONFIG)
    app = App.load(home)
    try:
        spend = Spend(app.store)
        reply = ModelReply(
            content=[], stop_reason="end_turn", usage=USAGE, model="claude-haiku-4-5"
        )
        for n in range(prior):  # a busy day so far, over many conversations
            meter = CallMeter(app, spend, SpendPlace("turn", conversation_id=f"c{n % 50}", turn=1))
            meter.reserve("claude-haiku-4-5", 512, 8_000)
            with app.store.transaction() as db:
                meter.settle(reply, None, db)
        meter = CallMeter(app, spend, SpendPlace("turn", conversation_id="bench", turn=1))
        reserving, cpu, settling = [], [], []
        for _ in range(calls):
            started, started_cpu = time.perf_counter(), time.thread_time()
            meter.reserve("claude-haiku-4-5", 512, 8_000)
            reserved, reserved_cpu = time.perf_counter(), time.thread_time()
            with app.store.transaction() as db:
                meter.settle(reply, None, db)
            settling.append(time.thread_time() - reserved_cpu)
            reserving.append(reserved - started)
            cpu.append(reserved_cpu - started_cpu)
    finally:
        app.close()
    ms = 1000.0
    return [
        Row(
            f"budget: reservation per model call, CPU ({prior:,} calls already today)",
            percentile(cpu, 0.5) * ms,
            "ms",
            goal="<= 0.2 ms",
            max_value=0.2,
            detail={
                "calls": calls,
                "prior_calls_today": prior,
                "reserve_cpu_p99_ms": percentile(cpu, 0.99) * ms,
                "reserve_cpu_mean_ms": statistics.fmean(cpu) * ms,
                "reserve_wall_p50_ms": percentile(reserving, 0.5) * ms,
                "reserve_wall_p99_ms": percentile(reserving, 0.99) * ms,
                "settle_cpu_p50_ms": percentile(settling, 0.5) * ms,
                "load_average": os.getloadavg()[0],
            },
        )
    ]
