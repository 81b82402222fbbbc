"""Benchmarks with printed numbers (no pass/fail): pickup latency and per-message costs.

    python scripts/bench.py [--messages 200]

1. Pickup latency: a real `smarthole run` subprocess watches the inbox; each message is
   renamed into inbox/ and the clock stops when the daemon has claimed it (the file is gone
   from inbox/). Also the time to the final reply, against the fake model on 127.0.0.1.
2. Storing a message: the cost of appending one message row to a conversation that already
   holds 10, 1,000 and 20,000 turns (it should not grow with the length).
3. Building the model's history for a turn, for the same conversation lengths (bounded by the
   history budget, so it should not grow either).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smarthole.db.store import Store
from smarthole.formats import dumps_toml, utc_now
from smarthole.fsutil import atomic_write
from smarthole.home import Home
from smarthole.pipeline.message import render_message_file
from smarthole.testing import FakeMessagesAPI, echo


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return (
        f"p50 {at(0.5):7.2f} ms   p90 {at(0.9):7.2f} ms   p99 {at(0.99):7.2f} ms   "
        f"max {ordered[-1] * 1000:7.2f} ms   (n={len(ordered)})"
    )


def bench_pickup(root: Path, messages: int) -> None:
    home = Home(root / "pickup")
    home.ensure()
    home.config_file.write_text(dumps_toml({"titles": {"enabled": False}}))
    pickup, reply = [], []
    with FakeMessagesAPI() as fake:
        fake.default = echo()
        env = {**os.environ, "ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": fake.url}
        log = root / "daemon.log"
        with log.open("w") as sink:  # a file, not a pipe: an undrained pipe would stall it
            daemon = subprocess.Popen(
                [sys.executable, "-m", "smarthole", "run", "--home", str(home.root)],
                env=env,
                stderr=sink,
            )
        try:
            while "is watching" not in log.read_text():
                time.sleep(0.01)
            for n in range(messages):
                name = f"bench-{n:05d}.md"
                staging = home.root / f".{name}.tmp"
                atomic_write(staging, render_message_file(f"ping {n}", id=f"b{n}"))
                start = time.perf_counter()
                os.rename(staging, home.inbox / name)
                while (home.inbox / name).exists():
                    pass
                pickup.append(time.perf_counter() - start)
                while len(fake.requests) <= n or not any(home.outbox.glob("*")):
                    time.sleep(0.0005)
                while len(list(home.outbox.glob("*.md"))) <= n:
                    time.sleep(0.0005)
                reply.append(time.perf_counter() - start)
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    print(f"pickup (rename into inbox/ -> claimed): {percentiles(pickup)}")
    print(f"reply  (rename into inbox/ -> final outbox file, fake model): {percentiles(reply)}")


def bench_store(root: Path) -> None:
    store = Store.open(root / "store.db", clock=utc_now)
    block = [{"type": "text", "text": "x" * 400}]
    for length in (10, 1_000, 20_000):
        conversation = store.create_conversation(f"c{length}")
        with store.transaction() as db:  # `length` earlier turns, one message each
            for turn in range(length):
                number = store.start_turn(db, conversation.id, f"m{length}-{turn}")
                store.append_message(conversation.id, number, "user", "user", block, db=db)
        appends = []
        for _ in range(200):
            start = time.perf_counter()
            store.append_message(conversation.id, number, "assistant", "assistant", block)
            appends.append(time.perf_counter() - start)
        histories = []
        for _ in range(50):
            start = time.perf_counter()
            store.recent_history(conversation.id, current_turn=number, budget_chars=240_000)
            histories.append(time.perf_counter() - start)
        print(
            f"conversation of {length:6d} turns: store one message "
            f"{statistics.median(appends) * 1000:6.2f} ms (median, fsync'd commit); "
            f"build history {statistics.median(histories) * 1000:6.2f} ms"
        )
    store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smarthole-bench-") as folder:
        bench_pickup(Path(folder), args.messages)
        bench_store(Path(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
