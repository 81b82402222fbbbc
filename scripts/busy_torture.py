"""Kill the daemon at random moments while bursts of messages arrive, under one busy policy.

    python scripts/busy_torture.py --policy steer --messages 120 --kills 30

Bursts of 1 to ``--burst`` messages are dropped into one channel at random moments, while a
real ``smarthole run`` subprocess runs and is killed with SIGKILL at random moments, again and
again; then a last daemon (``--once``) answers what is left. The fake model answers a new text
with a (slow) tool call and a tool result with text, so turns have tool-call boundaries for
``steer`` and safe points for ``interrupt``, and bursts arrive while turns run.

Checks (and prints): each message's text reached the model as new content in exactly one
request sequence (counted in the fake's request log: the last user message, once per distinct
request, so a request sent again after a kill counts once), each message has exactly one final
reply (its own, or a shared one that lists it in ``answers``), and every message is done.
Exit status 0 when all hold. ``tests/commands/test_busy_torture.py`` runs small ones.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from smarthole.formats import dumps_toml
from smarthole.home import Home
from smarthole.pipeline.inbox import drop_message
from smarthole.testing import FakeMessagesAPI, RecordedRequest, Reply, delay, text, tool_use

TEST_PLUGINS = Path(__file__).resolve().parent.parent / "tests" / "plugins"
POLICIES = ("queue", "collect", "steer", "interrupt")


@dataclass
class Result:
    policy: str
    messages: int
    kills: int
    seconds: float
    lost: int  # texts that never reached the model as new content
    doubled: int  # texts given as new content in more than one request sequence
    no_final: int
    many_finals: int
    unfinished: int
    requests: int

    @property
    def ok(self) -> bool:
        return not (
            self.lost or self.doubled or self.no_final or self.many_finals or self.unfinished
        )


def busy_torture(
    *,
    policy: str,
    messages: int,
    kills: int,
    seed: int,
    root: Path,
    burst: int = 5,
    max_gap: float = 0.6,
    quiet: bool = False,
) -> Result:
    rng = random.Random(seed)
    home = Home(root / "home")
    home.ensure()
    write_config(home, policy)
    said = {f"b{i:03d}": f"busy-{seed}-{i:03d}-text" for i in range(messages)}
    bursts = _bursts(list(said), rng, burst)
    started = time.monotonic()
    with FakeMessagesAPI(default=_responder(random.Random(seed + 1))) as fake:
        env = {**os.environ, "ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": fake.url}
        command = [sys.executable, "-m", "smarthole", "run", "--home", str(home.root)]
        log = root / "daemon.log"
        for kill in range(kills):
            process = _start(command, env, log)
            deadline = time.monotonic() + rng.uniform(0.1, max_gap)
            while time.monotonic() < deadline:
                if bursts and rng.random() < 0.35:
                    _drop(home, bursts.pop(0), said)
                time.sleep(rng.uniform(0.01, 0.06))
            process.send_signal(signal.SIGKILL)
            process.wait()
            if not quiet:
                print(f"kill {kill + 1}/{kills}: {len(bursts)} burst(s) still to come", flush=True)
        while bursts:
            _drop(home, bursts.pop(0), said)
        last = subprocess.run(
            [*command, "--once"], env=env, capture_output=True, text=True, timeout=600
        )
        if last.returncode != 0:
            raise SystemExit(f"the last daemon failed:\n{last.stderr}")
        counts = new_content(fake.requests, said)
        requests = len(fake.requests)
    finals = finals_per_message(home, list(said))
    statuses = _statuses(home)
    result = Result(
        policy=policy,
        messages=messages,
        kills=kills,
        seconds=round(time.monotonic() - started, 1),
        lost=sum(1 for m in said if counts[m] == 0),
        doubled=sum(1 for m in said if counts[m] > 1),
        no_final=sum(1 for m in said if finals[m] == 0),
        many_finals=sum(1 for m in said if finals[m] > 1),
        unfinished=sum(1 for m in said if statuses.get(m) != "done"),
        requests=requests,
    )
    if not quiet:
        print(result, flush=True)
    return result


def write_config(home: Home, policy: str) -> None:
    config = {
        "inbox": {"rescan_seconds": 0.3},
        "retry": {"base_delay_seconds": 0.05, "max_delay_seconds": 1.0},
        "titles": {"enabled": False},
        "plugins": {"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        "channels": {"busy": policy},
    }
    home.config_file.write_text(dumps_toml(config))


def _responder(rng: random.Random):
    def answer(request: RecordedRequest) -> Reply:
        if request.tool_results:
            return delay(rng.uniform(0.0, 0.05), text("done"))
        call = tool_use("snapshot", {"label": "x"})
        return delay(rng.uniform(0.02, 0.15), call)

    return answer


def _bursts(ids: list[str], rng: random.Random, most: int) -> list[list[str]]:
    bursts = []
    while ids:
        size = rng.randint(1, most)
        bursts.append(ids[:size])
        ids = ids[size:]
    return bursts


def _drop(home: Home, burst: list[str], said: dict[str, str]) -> None:
    for message_id in burst:
        drop_message(home.inbox, said[message_id], message_id=message_id, channel="phone")


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as sink:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    while "is watching" not in log.read_text():
        if process.poll() is not None:
            raise SystemExit(f"the daemon exited before it started:\n{log.read_text()}")
        time.sleep(0.01)
    return process


def new_content(requests: list[RecordedRequest], said: dict[str, str]) -> Counter[str]:
    """How many distinct requests had each text in their last user message."""
    seen: set[str] = set()
    counts: Counter[str] = Counter()
    for request in requests:
        key = json.dumps(request.messages, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        last = request.last_user_text
        counts.update(m for m, words in said.items() if words in last)
    return counts


def finals_per_message(home: Home, ids: list[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    wanted = set(ids)
    for path in home.outbox.glob("*.md"):
        header = tomllib.loads(path.read_text().split("+++\n", 2)[1])
        if header["kind"] in ("response", "error", "command"):
            answered = header.get("answers") or [header["in_reply_to"]]
            counts.update(m for m in answered if m in wanted)
    return counts


def _statuses(home: Home) -> dict[str, str]:
    with sqlite3.connect(home.database) as connection:
        return dict(connection.execute("SELECT message_id, status FROM inbox"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", choices=POLICIES, action="append")
    parser.add_argument("--messages", type=int, default=120)
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--burst", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    ok = True
    for policy in args.policy or POLICIES:
        with tempfile.TemporaryDirectory() as folder:
            result = busy_torture(
                policy=policy,
                messages=args.messages,
                kills=args.kills,
                seed=args.seed,
                root=Path(folder),
                burst=args.burst,
            )
        ok = ok and result.ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
