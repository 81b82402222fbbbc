"""Rows 4 and 5: the daemon's CPU per single-turn message and its memory (RSS)."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from smarthole.home import Home
from smarthole.testing import FakeMessagesAPI, RecordedRequest, Reply, delay, echo

from .adapters import message_file
from .procs import (
    CHILDREN,
    Replies,
    child_result,
    context_switches,
    cpu_seconds,
    daemon,
    make_home,
    rss_mib,
)
from .procs import wait_ready as wait_until_ready
from .report import Row

CHUNK = 100  # messages dropped at once while the daemon runs; it answers them, then the next
IDLE_WINDOW = 1.0  # seconds the idle daemon's CPU is sampled over
MODEL_LATENCY = 0.05  # seconds the fake waits before answering, in the "model answering" rows


def feed(home_root: Path, start: int, count: int, channels: int) -> None:
    """Rename ``count`` one-turn messages into the inbox (ids from ``start``)."""
    staging, inbox = home_root / ".staging", home_root / "inbox"
    for n in range(start, start + count):
        name = f"m{n:06d}.md"
        data = message_file(f"ping {n}", message_id=f"m{n:06d}", channel=f"c{n % channels}")
        (staging / name).write_bytes(data)
        os.rename(staging / name, inbox / name)


def answering_after(seconds: float) -> Callable[[RecordedRequest], Reply]:
    """The fake's echo, sent after ``seconds`` (as a model takes its time)."""
    answer = echo()
    return lambda request: delay(seconds, answer(request))


def minimal(body: dict[str, Any], n: int) -> dict[str, Any]:
    """A bare call: the daemon's model and max_tokens, a one-line system and user message."""
    return {
        "model": body.get("model"),
        "max_tokens": body.get("max_tokens"),
        "system": "You answer briefly.",
        "messages": [{"role": "user", "content": f"ping {n}"}],
    }


class SdkLoop:
    """A bare anthropic streaming loop in its own process (``children.py sdk``): each
    :meth:`run` sends a batch of request bodies and returns the CPU seconds of its calls."""

    def __init__(self, url: str, path: Path) -> None:
        self.path = path
        self.calls, self.cpu_seconds, self.switches = 0, 0.0, 0
        command = [sys.executable, str(CHILDREN), "sdk", url]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, bodies: list[dict[str, Any]]) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.path.write_text(json.dumps(bodies))
        self.process.stdin.write(f"{self.path}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the SDK loop exited with {self.process.wait()}")
        result = json.loads(line)
        self.calls += result["calls"]
        self.cpu_seconds += result["cpu_seconds"]
        self.switches += result["switches"]
        return float(result["cpu_seconds"])

    def ms_per_call(self) -> float:
        return self.cpu_seconds / max(1, self.calls) * 1000

    def switches_per_call(self) -> float:
        return self.switches / max(1, self.calls)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


@dataclass
class Paired:
    """The daemon's CPU over some messages, each chunk beside bare loops sending as many
    calls right after it: drift of the machine's speed (minutes apart, a run's bare loop has
    measured 2.3 and 2.8 ms a call) then moves the figure and its baseline alike."""

    messages: int = 0
    daemon_seconds: float = 0.0  # the daemon's idle rate taken off
    daemon_switches: int = 0  # context switches of its threads (idle ones included)
    ratios: list[float] = field(default_factory=list)  # per chunk, to the first loop

    @property
    def ms_per_message(self) -> float:
        return self.daemon_seconds / max(1, self.messages) * 1000

    @property
    def switches_per_message(self) -> float:
        return self.daemon_switches / max(1, self.messages)

    def spread(self) -> dict[str, float]:
        return {
            "chunks": len(self.ratios),
            "min": min(self.ratios),
            "median": statistics.median(self.ratios),
            "max": max(self.ratios),
        }


class Spent(NamedTuple):
    """What the daemon spent on some messages."""

    cpu_seconds: float
    switches: int
    elapsed: float


@dataclass
class Running:
    """The costs daemon while it runs, and what it has answered so far."""

    home: Home
    pid: int
    replies: Replies
    fake: FakeMessagesAPI
    idle_rate: float  # CPU seconds a second, doing nothing
    answered: int = 1  # the warm-up message

    def answer(self, count: int, channels: int) -> Spent:
        """Drop ``count`` messages and wait for their replies."""
        before, switches = cpu_seconds(self.pid), context_switches(self.pid)
        at = time.perf_counter()
        feed(self.home.root, self.answered, count, channels)
        self.answered += count
        self.replies.wait_for(self.answered, 300)
        return Spent(
            cpu_seconds(self.pid) - before,
            context_switches(self.pid) - switches,
            time.perf_counter() - at,
        )

    def paired(self, count: int, channels: int, loops: list[SdkLoop]) -> Paired:
        """``count`` messages CHUNK at a time; after each chunk the first loop sends minimal
        bodies, the others (if any) the daemon's own, as many as the daemon's calls."""
        result = Paired()
        for start in range(0, count, CHUNK):
            n = min(CHUNK, count - start)
            self.fake.reset()
            spent = self.answer(n, channels)
            bodies = [r.body for r in self.fake.requests]
            self.fake.reset()
            bare = loops[0].run([minimal(body, k) for k, body in enumerate(bodies)])
            for loop in loops[1:]:
                loop.run(bodies)
            cpu = spent.cpu_seconds - self.idle_rate * spent.elapsed
            result.messages += n
            result.daemon_seconds += cpu
            result.daemon_switches += spent.switches
            result.ratios.append((cpu / n) / (bare / max(1, len(bodies))))
        return result


def cpu_row(metric: str, paired: Paired, loop: SdkLoop, baseline: str = "bare SDK loop") -> Row:
    """A daemon's CPU per message beside its paired loop's per call, chunk ratios in detail."""
    return Row(
        metric,
        paired.ms_per_message,
        "ms",
        loop.ms_per_call(),
        baseline,
        detail={"messages": paired.messages, "chunk_ratios": paired.spread()},
    )


def costs_rows(
    root: Path,
    fake: FakeMessagesAPI,
    cpu_messages: int,
    marks: list[int],
    channels: int,
    after_backlog: tuple[int, int, float, float | None] | None = None,
) -> list[Row]:
    """Run single-turn messages through one daemon, CHUNK at a time.

    CPU: utime+stime of the daemon over ``cpu_messages`` (after one warm-up message) on
    ``channels`` channels, minus its idle rate times the elapsed time, per message. Baseline:
    a bare anthropic streaming loop in its own process, as many calls as the daemon made, each
    a one-line request, run chunk by chunk beside the daemon's (see :class:`Paired`); also the
    daemon's own request bodies replayed by that loop (so the ratio can be split into "bigger
    requests" and "the daemon's own work"). Then, for the RSS marks, up to ``max(marks)``
    messages; then half of ``cpu_messages`` more on one channel, whose turns run one at a
    time as the bare loop's calls do (with ``channels`` channels, up to four workers run at
    once on two cores, and the GIL passing between them costs CPU of its own). Last, a fifth
    of ``cpu_messages`` (at least a chunk) on ``channels`` channels and as many on one, with
    the fake answering after ``MODEL_LATENCY`` seconds for the daemon and its bare loop alike:
    a real model is never instant, and the row without a wait is the worst case for the
    workers' contention.

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
    with contextlib.ExitStack() as stack:
        loops = [SdkLoop(fake.url, root / name) for name in ("bare.json", "replay.json")]
        solo_loop = SdkLoop(fake.url, root / "solo.json")
        waiting_loop = SdkLoop(fake.url, root / "waiting.json")
        waiting_solo_loop = SdkLoop(fake.url, root / "waiting-solo.json")
        for loop in (*loops, solo_loop, waiting_loop, waiting_solo_loop):
            stack.callback(loop.close)
        process = stack.enter_context(daemon(home, fake.url))
        replies = stack.enter_context(contextlib.closing(Replies(home)))
        wait_until_ready(home, process)
        rss[0] = rss_mib(process.pid)
        feed(home.root, 0, 1, channels)  # warm-up: lazy imports, the first connection
        replies.wait_for(1, 30)
        before, at = cpu_seconds(process.pid), time.perf_counter()
        time.sleep(IDLE_WINDOW)  # a measuring window, not a synchronization
        idle_rate = (cpu_seconds(process.pid) - before) / (time.perf_counter() - at)
        running = Running(home, process.pid, replies, fake, idle_rate)
        many = running.paired(cpu_messages, channels, loops)
        for mark in sorted(marks):
            while running.answered - 1 < mark:
                fake.reset()  # the fake keeps every request; do not let the bench grow
                running.answer(min(CHUNK, mark - (running.answered - 1)), channels)
            rss[mark] = rss_mib(process.pid)
        solo = running.paired(max(1, cpu_messages // 2), 1, [solo_loop])
        fake.default = answering_after(MODEL_LATENCY)
        waited = max(CHUNK, cpu_messages // 5)
        waiting = running.paired(waited, channels, [waiting_loop])
        waiting_solo = running.paired(waited, 1, [waiting_solo_loop])
        fake.default = echo()
        fake.reset()
    bare, replayed = loops
    imports = [child_result("import")["rss_mib"] for _ in range(3)]
    anthropic_rss = statistics.median(imports)
    detail: dict[str, Any] = {
        "messages": cpu_messages,
        "channels": channels,
        "idle_cpu_per_s": running.idle_rate,
        "daemon_cpu_s": many.daemon_seconds,
        "chunk_ratios": many.spread(),
        "sdk_minimal_bodies": {"calls": bare.calls, "cpu_seconds": bare.cpu_seconds},
        "sdk_replayed_bodies": {"calls": replayed.calls, "cpu_seconds": replayed.cpu_seconds},
        "context_switches_per_call": {
            "daemon": many.switches_per_message,
            "daemon_one_channel": solo.switches_per_message,
            "sdk_minimal_bodies": bare.switches_per_call(),
            "sdk_replayed_bodies": replayed.switches_per_call(),
        },
    }
    rows = [
        Row(
            "daemon CPU per single-turn message",
            many.ms_per_message,
            "ms",
            bare.ms_per_call(),
            "bare SDK loop",
            goal="<= 2x",
            max_ratio=2.0,
            detail=detail,
        ),
        Row(
            "daemon CPU per message, vs SDK replaying its bodies",
            many.ms_per_message,
            "ms",
            replayed.ms_per_call(),
            "SDK loop, same bodies",
        ),
        cpu_row("daemon CPU per message, one channel (a turn at a time)", solo, solo_loop),
        cpu_row(
            f"daemon CPU per message, the model answering after {MODEL_LATENCY * 1000:.0f} ms",
            waiting,
            waiting_loop,
            "bare SDK loop, same wait",
        ),
        cpu_row("same, one channel", waiting_solo, waiting_solo_loop, "bare SDK loop, same wait"),
        Row(
            "daemon context switches per message (a thread sleeping on the GIL, a lock, I/O)",
            many.switches_per_message,
            "",
            bare.switches_per_call(),
            "bare SDK loop",
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
