"""The benchmark's own arithmetic (scripts/benchlib): cache reuse, percentiles, the report.

The benchmark itself is opt-in (``python scripts/bench.py``); these checks are pure and fast.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time
from types import ModuleType

import pytest

from tests.helpers import REPO


def load(name: str) -> ModuleType:
    """A stand-alone module of scripts/benchlib (no relative imports in these)."""
    path = REPO / "scripts" / "benchlib" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"benchlib_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


cache = load("cache")
procs = load("procs")
report = load("report")

CC = {"cache_control": {"type": "ephemeral"}}
TOOL = {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}


def text(words: str, *, mark: bool = False) -> dict:
    return {"type": "text", "text": words, **(CC if mark else {})}


def body(*messages: tuple[str, list[dict]], system=None, model="m", tools=(TOOL,)) -> dict:
    return {
        "model": model,
        "max_tokens": 100,
        "tools": list(tools),
        "system": system if system is not None else [text("stable", mark=True), text("turn 1")],
        "messages": [{"role": role, "content": content} for role, content in messages],
    }


def size(block: dict) -> int:
    return len(cache.canonical(block).encode())


# -- blocks and bytes ----------------------------------------------------------------------


def test_a_request_is_tools_then_system_then_message_blocks():
    request = body(("user", [text("hi"), text("there")]), ("assistant", [text("hello")]))
    blocks = cache.request_blocks(request)
    assert [b.key.split("\n")[0] for b in blocks] == [
        "tools", "system", "system", "message 0 user", "message 0 user", "message 1 assistant"
    ]  # fmt: skip
    assert [b.breakpoint for b in blocks] == [False, True, False, False, False, False]


def test_cache_control_is_no_part_of_a_blocks_bytes():
    assert cache.canonical(text("abc", mark=True)) == cache.canonical(text("abc"))
    assert cache.canonical({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'


def test_a_string_system_or_content_is_one_text_block():
    as_strings = body(("user", "hi"), system="be brief")
    as_blocks = body(("user", [text("hi")]), system=[text("be brief")])
    assert [b.key for b in cache.request_blocks(as_strings)] == [
        b.key for b in cache.request_blocks(as_blocks)
    ]


def test_request_bytes_count_blocks_not_the_envelope():
    request = body(("user", [text("hi")]))
    expected = size(TOOL) + size(text("stable")) + size(text("turn 1")) + size(text("hi"))
    assert cache.request_bytes(request) == expected
    assert cache.request_bytes({**request, "max_tokens": 5, "stream": True}) == expected


# -- reuse -----------------------------------------------------------------------------------


def test_reuse_stops_at_the_last_breakpoint_of_the_earlier_call_inside_the_common_prefix():
    first = body(("user", [text("question")]))
    second = body(("user", [text("question")]), ("assistant", [text("answer")]))
    result = cache.reuse(first, second)
    assert result.common_blocks == 4  # tool, two system blocks, the question
    # Only the tool and system[0] lie before first's breakpoint: system[1] is not cached.
    assert result.reused_bytes == size(TOOL) + size(text("stable"))
    assert result.current_bytes == cache.request_bytes(second)
    assert result.previous_bytes == cache.request_bytes(first)


def test_a_breakpoint_on_the_last_message_makes_the_whole_earlier_call_reusable():
    first = body(("user", [text("question", mark=True)]))
    second = body(
        ("user", [text("question")]), ("assistant", [text("answer")]), ("user", [text("more")])
    )
    result = cache.reuse(first, second)
    assert result.reused_bytes == cache.request_bytes(first)
    assert result.reachable is False  # second has no breakpoint at or after that point


def test_a_change_before_the_last_breakpoint_cuts_reuse_back_to_an_earlier_one():
    first = body(("user", [text("question", mark=True)]))
    moved = body(
        ("user", [text("question", mark=True)]),
        system=[text("stable", mark=True), text("turn 2")],
    )
    assert cache.reuse(first, moved).common_blocks == 2
    assert cache.reuse(first, moved).reused_bytes == size(TOOL) + size(text("stable"))


def test_no_breakpoint_in_the_earlier_call_means_nothing_is_reused():
    plain = body(("user", [text("q")]), system=[text("stable")])
    assert cache.reuse(plain, plain).reused_bytes == 0
    assert cache.reuse(plain, plain).common_blocks == 3


def test_the_breakpoint_that_counts_is_the_earlier_calls_not_the_later_ones():
    first = body(("user", [text("q")]), system=[text("stable")])
    second = body(("user", [text("q", mark=True)]), system=[text("stable")])
    assert cache.reuse(first, second).reused_bytes == 0  # first wrote no cache
    assert cache.reuse(second, first).reused_bytes == cache.request_bytes(first)


def test_another_model_has_another_cache():
    assert cache.reuse(body(("user", "q")), body(("user", "q"), model="other")).reused_bytes == 0


def test_the_same_block_under_another_role_or_place_does_not_match():
    first = body(("user", [text("same", mark=True)]))
    second = body(("assistant", [text("same", mark=True)]))
    assert cache.reuse(first, second).common_blocks == 3


@pytest.mark.parametrize(
    ("later_marks", "reachable"),
    [((), False), ((0,), True), ((18,), True), ((19,), False), ((25, 2), True)],
)
def test_reachable_needs_a_later_breakpoint_within_the_lookback(later_marks, reachable):
    """first cached up to system[0] (block 1); message block i of second is block 3 + i, so
    a breakpoint on blocks 1..21 (i <= 18) finds it, 20 blocks back at most."""
    first = body(("user", [text(f"b{i}") for i in range(30)]))
    marked = [text(f"b{i}", mark=i in later_marks) for i in range(30)]
    second = body(("user", marked), system=[text("stable"), text("turn 1")])
    assert cache.reuse(first, second).reachable is reachable


def test_identical_ignores_key_order_and_nothing_else():
    a = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    b = json.loads(json.dumps({"messages": a["messages"], "model": "m"}))
    assert cache.identical(a, b)
    assert not cache.identical(a, {**a, "model": "n"})


# -- report ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "expected"), [(0.5, 5.0), (0.9, 9.0), (0.99, 10.0), (0.01, 1.0), (1.0, 10.0)]
)
def test_percentile_is_nearest_rank(q, expected):
    assert report.percentile([float(n) for n in range(10, 0, -1)], q) == expected


@pytest.mark.parametrize(
    ("row", "met"),
    [
        (dict(value=4.0, max_value=5.0, baseline=1.0, max_ratio=5.0), True),
        (dict(value=4.0, max_value=5.0, baseline=0.5, max_ratio=5.0), False),
        (dict(value=6.0, max_value=5.0), False),
        (dict(value=0.96, min_value=0.95), True),
        (dict(value=0.5, min_value=0.95), False),
        (dict(value=1.0), None),
        (dict(value=None, max_value=1.0, goal="<= 1"), False),
    ],
)
def test_a_row_is_met_against_every_bound_it_names(row, met):
    assert report.Row("m", unit="ms", **row).met() is met


def test_the_table_and_json_carry_ratio_and_verdict():
    rows = [
        report.Row("pickup p99", 436.0, "ms", 0.9, "bare", goal="<= 5 ms", max_value=5.0),
        report.Row("cache reuse", 0.291, "%", goal=">= 90%", min_value=0.9),
    ]
    printed = report.table(rows).splitlines()
    assert printed[0].split() == ["metric", "smarthole", "baseline", "ratio", "goal", "met?"]
    assert "436 ms" in printed[2] and "484.44x" in printed[2] and printed[2].endswith("NO")
    assert "29.1%" in printed[3]
    saved = report.to_json(rows, {"mode": "quick"})
    assert saved["rows"][0]["ratio"] == pytest.approx(436 / 0.9)
    assert [r["met"] for r in saved["rows"]] == [False, False]
    assert "| pickup p99 | 436 ms |" in report.markdown(rows)


def test_context_switches_count_the_sleeps_of_every_thread():
    slept, done = threading.Event(), threading.Event()

    def sleeper() -> None:
        for _ in range(5):
            time.sleep(0.001)  # each one a voluntary switch of this thread
        slept.set()
        done.wait(10)

    before = procs.context_switches(os.getpid())
    thread = threading.Thread(target=sleeper)
    thread.start()
    try:
        assert slept.wait(10)
        assert procs.context_switches(os.getpid()) - before >= 5
    finally:
        done.set()
        thread.join()


# -- desktop burst ---------------------------------------------------------------------------


@pytest.fixture
def desktopburst(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """benchlib.desktopburst, imported as the bench imports it (it has relative imports)."""
    import importlib

    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    return importlib.import_module("benchlib.desktopburst")


def test_the_burst_desktop_times_each_messages_first_ack_and_counts_every_frame(desktopburst):
    desktop = desktopburst.BurstDesktop()
    try:
        assert desktop._received({"type": "registration", "payload": {}}) is True
        for kind in ("ack", "ack", "reject", "notification"):
            frame = {"type": "response", "payload": {"type": kind, "messageId": "m1"}}
            assert desktop._received(frame) is False
    finally:
        desktop.close()
    seen = desktop.seen
    assert (seen.registrations, seen.acks) == (1, 2)
    assert (seen.rejected, seen.notified) == ({"m1": ""}, {"m1": 1})
    assert list(seen.acked) == ["m1"]


@pytest.mark.parametrize(
    ("found", "verdicts"),
    [
        ({"acked": 10, "max": 2.0, "reconnects": 0}, [True, True, True]),
        ({"acked": 9, "max": 2.0, "reconnects": 0}, [False, True, True]),
        ({"acked": 10, "max": 31.0, "reconnects": 0}, [True, False, True]),
        ({"acked": 10, "max": 2.0, "reconnects": 1}, [True, True, False]),
    ],
)
def test_the_burst_rows_want_every_ack_within_30_seconds_on_one_connection(
    desktopburst, monkeypatch, found, verdicts
):
    figures = {"p50": 0.5, "p99": 1.5, "acks_per_second": 100.0, **found}
    monkeypatch.setattr(desktopburst, "measure_burst", lambda root, count: figures)
    rows = desktopburst.burst_rows(REPO, 10)
    assert [row.met() for row in rows if row.goal] == verdicts
    assert [row.value for row in rows if "p99" in row.metric] == [1500.0]
