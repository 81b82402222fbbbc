"""The memory part (``--only memory``): the profile in the system prompt costs no cache miss.

A real daemon holds a 10-turn conversation that begins with a 1,500-character profile in
``/memories/profile.md``; at turns 3 and 7 the model changes the profile with the memory tool
before it answers. The profile in the system prompt is the one the conversation began with,
so every request keeps the same system blocks and tools, and turn t+1 reuses turn t's cache
as a conversation without memory does (the ``cache`` rows). Measured from the fake's request
log with :mod:`benchlib.cache`, beside the same conversation with ``[memory] enabled = false``.
"""

from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path
from typing import Any

from smarthole.daemon.runtime import Runtime
from smarthole.testing import FakeMessagesAPI, RecordedRequest, Reply, memory_call, text

from .adapters import message_file, random_texts
from .cache import reuse
from .procs import daemon, make_home, poll_until, replies, wait_ready
from .report import Row

TURNS = 10
CHANGES = (3, 7)  # turns that rewrite the profile before answering
TURN = re.compile(r"bench-turn-(\d+)\b")
PROFILE = random_texts(1, 1_500, seed=21)[0]
ANSWER = random_texts(1, 800, seed=22)[0]
ASK = random_texts(1, 200, seed=23)[0]


def script(request: RecordedRequest) -> Reply:
    """A profile change (one tool call) at the turns of CHANGES, then the answer."""
    turn, calls = 0, 0
    for message in reversed(request.messages):
        found = TURN.search(str(message.get("content"))) if message["role"] == "user" else None
        if found:
            turn = int(found.group(1))
            break
        calls += message["role"] == "assistant"
    if turn in CHANGES and calls == 0:
        return memory_call(
            "str_replace", path="/memories/profile.md", old_str=PROFILE[:40], new_str=f"t{turn}"
        )
    return text(f"Answer to turn {turn}. {ANSWER}")


def conversation(root: Path, fake: FakeMessagesAPI, *, memory: bool) -> list[dict[str, Any]]:
    home = make_home(root / f"memory-{memory}", memory={"enabled": memory})
    if memory:
        runtime = Runtime.for_home(home)
        with runtime.store.transaction() as db:
            runtime.memory.edit(db, "/memories/profile.md", PROFILE)
        runtime.close()
    fake.reset()
    fake.default = script
    with daemon(home, fake.url) as process:
        wait_ready(home, process)
        for turn in range(1, TURNS + 1):
            name = f"turn-{turn:03d}.md"
            body = f"bench-turn-{turn} Please follow up. {ASK}"
            staged = home.root / ".staging" / name
            staged.write_bytes(message_file(body, message_id=f"turn{turn}", channel="memory"))
            staged.rename(home.inbox / name)
            poll_until(functools.partial(lambda n: replies(home) >= n, turn), 60, interval=0.005)
    return [r.body for r in fake.requests]


def turn_reuse(bodies: list[dict[str, Any]]) -> list[float]:
    """Per turn pair: reused bytes of turn t's last request by turn t+1's first."""
    firsts: dict[int, dict[str, Any]] = {}
    lasts: dict[int, dict[str, Any]] = {}
    for body in bodies:
        turn = next(
            int(m.group(1))
            for message in reversed(body["messages"])
            if message["role"] == "user" and (m := TURN.search(str(message["content"])))
        )
        firsts.setdefault(turn, body)
        lasts[turn] = body
    turns = sorted(firsts)
    return [
        reuse(lasts[a], firsts[b]).reused_bytes / reuse(lasts[a], firsts[b]).previous_bytes
        for a, b in itertools.pairwise(turns)
    ]


def memory_rows(root: Path, fake: FakeMessagesAPI) -> list[Row]:
    with_memory = conversation(root, fake, memory=True)
    without = conversation(root, fake, memory=False)
    shares, baseline = turn_reuse(with_memory), turn_reuse(without)
    systems = {str(body["system"]) for body in with_memory}
    detail = {
        "turns": TURNS,
        "profile_changes_at_turns": list(CHANGES),
        "requests": len(with_memory),
        "turn_reuse": shares,
        "turn_reuse_without_memory": baseline,
        "distinct_system_prompts": len(systems),
        "profile_in_system_prompt": all(PROFILE[:100] in str(b["system"]) for b in with_memory),
        "profile_changes_made": sum(
            1 for b in with_memory for m in b["messages"] if "has been edited" in str(m)
        ),
    }
    return [
        Row(
            f"memory: turn t+1 vs t reused, profile changed at turns {CHANGES} (min)",
            min(shares, default=None),
            "%",
            baseline=min(baseline, default=None),
            baseline_name="memory off",
            goal=">= 90%",
            min_value=0.90,
            detail=detail,
        ),
        Row(
            "memory: system prompts in the conversation (the profile as it began)",
            float(len(systems)),
            "",
            goal="1",
            max_value=1,
        ),
    ]
