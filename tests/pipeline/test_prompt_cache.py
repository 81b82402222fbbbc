"""Requests the prompt cache can reuse: each one is the previous one plus what is new."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from smarthole.testing import server_error, text, tool_use
from tests.helpers import drop, run_once, write_config

START = datetime(2026, 11, 23, 9, 0, 30, tzinfo=UTC)


def canonical(value):
    """``value`` as the cache compares it: without ``cache_control`` keys."""
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def extends(later, earlier) -> bool:
    """Whether ``later`` is ``earlier`` plus more messages (same tools, system and model)."""
    same = all(canonical(later.body[k]) == canonical(earlier.body[k]) for k in ("tools", "system"))
    n = len(earlier.messages)
    return same and canonical(later.messages[:n]) == canonical(earlier.messages)


def breakpoints(request) -> list[str]:
    marked = [f"system[{i}]" for i, b in enumerate(request.body["system"]) if "cache_control" in b]
    last = request.messages[-1]["content"][-1]
    return marked + (["last message"] if "cache_control" in last else [])


def test_the_time_and_turn_start_each_user_message_not_the_system_prompt(home, fake, env):
    fake.add(text("Hello."))
    drop(home, "Hi", "m1")
    run_once(home, env)
    (request,) = fake.requests
    assert "turn 1" not in request.system_text.lower()
    context, words = request.messages[0]["content"]
    assert context["text"].startswith("<context>Turn 1, sent ")
    assert words["text"] == "Hi" and request.last_user_text == "Hi"
    assert breakpoints(request) == ["system[0]", "system[1]", "last message"]


def test_each_call_and_each_turn_extends_the_request_before_it(home, fake, env):
    fake.add(tool_use("list_files", {}))
    fake.add(tool_use("list_files", {}))
    fake.add(text("Nothing there."))
    drop(home, "What is in my workspace?", "m1")
    run_once(home, env)
    fake.add(text("You are welcome."))
    drop(home, "Thanks", "m2")
    run_once(home, env)
    first, second, third, next_turn = fake.requests
    assert extends(second, first) and extends(third, second), "the tool loop"
    assert extends(next_turn, third), "the next turn"
    assert len(next_turn.messages) == len(third.messages) + 2  # the reply, then "Thanks"


def test_a_pending_question_is_the_last_system_block_of_the_turn_it_answers(home, fake, env):
    fake.add(tool_use("send_message", {"message": "Which list?", "is_question": True}))
    fake.add(text("I asked."))
    drop(home, "Add milk", "m1")
    run_once(home, env)
    fake.add(text("Added."))
    drop(home, "Groceries", "m2")
    run_once(home, env)
    fake.add(text("Sure."))
    drop(home, "And eggs", "m3")
    run_once(home, env)
    asked, answering, after = fake.requests[1], fake.requests[2], fake.requests[3]
    assert answering.body["system"][:2] == asked.body["system"]
    assert answering.body["system"][-1]["text"].startswith("## Pending Context")
    assert "cache_control" not in answering.body["system"][-1]
    assert after.body["system"] == asked.body["system"], "gone once answered"


def test_a_retry_is_byte_identical_even_minutes_later(home, fake, env):
    write_config(home, retry={"base_delay_seconds": 0.0})
    moments = iter(START + timedelta(seconds=61 * n) for n in range(10_000))
    fake.add(server_error())
    fake.add(text("Hello."))
    drop(home, "Hi", "m1")
    run_once(home, env, clock=lambda: next(moments))
    first, retry = fake.requests
    assert retry.retry_count == 0, "the daemon's own retry, a new attempt"
    assert json.dumps(retry.body, sort_keys=True) == json.dumps(first.body, sort_keys=True)
