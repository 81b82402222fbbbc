"""The daemon's memory as it answers messages: RSS idle and after each mark, with its parts.

    python scripts/rssprobe.py [--marks 1000,5000,10000] [--channels 10] [--env K=V ...]
                               [--keep] [--json FILE]

Runs the real ``python -m smarthole run`` against the fake Messages API, feeds one-turn
messages 100 at a time as the benchmark's costs rows do (scripts/benchlib/costs.py), and
prints at each mark VmRSS and /proc/PID/smaps_rollup's anonymous and file-backed parts, plus
the largest mappings' growth since idle, and the daemon's CPU seconds so far. For A/B runs
of a memory change: run both variants side by side, the machine's load moves CPU figures.
``--env`` passes settings to the daemon (e.g. GLIBC_TUNABLES=...); ``--keep`` keeps the home
and a copy of /proc/PID/smaps at each mark.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import procs
from benchlib.costs import CHUNK, feed
from benchlib.procs import Replies, make_home, rss_mib, wait_ready

from smarthole.testing import FakeMessagesAPI, echo


def rollup(pid: int) -> dict[str, float]:
    """smaps_rollup's fields in MiB (Rss, Anonymous, Rss of file-backed pages...)."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value, *_ = line.split()
        fields[key.rstrip(":")] = int(value) / 1024
    fields["File"] = fields["Rss"] - fields["Anonymous"]
    return fields


def mappings(pid: int) -> dict[str, float]:
    """RSS per mapping name, in MiB; anonymous regions grouped by size: [anon 1M] (a lone
    pymalloc arena), [anon big] (8 MiB or more: merged arenas, large heaps), [anon]."""
    sizes: dict[str, float] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if match := re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line):
            parts = line.split(None, 5)
            name = parts[5] if len(parts) > 5 else "[anon]"
            if name == "[anon]":
                span = int(match.group(2), 16) - int(match.group(1), 16)
                if span == 1 << 20:
                    name = "[anon 1M]"
                elif span >= 8 << 20:
                    name = "[anon big]"
        elif line.startswith("Rss:"):
            sizes[name] = sizes.get(name, 0.0) + int(line.split()[1]) / 1024
    return sizes


def show(label: str, pid: int, base: dict[str, float] | None) -> dict[str, float]:
    """Print one line of figures; returns the mappings' sizes."""
    parts = rollup(pid)
    maps = mappings(pid)
    threads = len(os.listdir(f"/proc/{pid}/task"))
    line = (
        f"{label:>8}: RSS {rss_mib(pid):6.1f} MiB  anon {parts['Anonymous']:6.1f}"
        f"  file {parts['File']:5.1f}  threads {threads}  cpu {procs.cpu_seconds(pid):6.1f} s"
    )
    if base is not None:
        grown = sorted(((v - base.get(k, 0.0), k) for k, v in maps.items()), reverse=True)[:4]
        line += "  grew: " + ", ".join(f"{Path(k).name or k} +{d:.1f}" for d, k in grown if d > 0.2)
    print(line, flush=True)
    return maps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marks", default="1000,5000,10000")
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--env", action="append", default=[], help="K=V for the daemon")
    parser.add_argument("--keep", action="store_true", help="keep the home; print its path")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    marks = sorted(int(m) for m in args.marks.split(","))
    extra = dict(kv.split("=", 1) for kv in args.env)
    original = procs.daemon_env
    procs.daemon_env = lambda url: {**original(url), **extra}  # type: ignore[assignment]
    root = Path(tempfile.mkdtemp(prefix="rssprobe-"))
    figures: dict[str, float] = {}
    with FakeMessagesAPI() as fake:
        fake.default = echo()
        home = make_home(root / "home")
        with (
            procs.daemon(home, fake.url) as process,
            contextlib.closing(Replies(home)) as replies,
        ):
            pid = process.pid
            wait_ready(home, process)
            time.sleep(0.5)  # let start-up's last allocations land; a reading, not a sync
            figures["idle"] = rss_mib(pid)
            base = show("idle", pid, None)
            if args.keep:
                (root / "smaps-0").write_text(Path(f"/proc/{pid}/smaps").read_text())
            answered = 0
            for mark in marks:
                while answered < mark:
                    count = min(CHUNK, mark - answered)
                    feed(home.root, answered, count, args.channels)
                    answered += count
                    replies.wait_for(answered, 300)
                    fake.reset()
                time.sleep(0.5)
                figures[str(mark)] = rss_mib(pid)
                if args.keep:
                    (root / f"smaps-{mark}").write_text(Path(f"/proc/{pid}/smaps").read_text())
                show(f"{mark}", pid, base)
    print(json.dumps(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures))
    if args.keep:
        print(root)
    else:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
