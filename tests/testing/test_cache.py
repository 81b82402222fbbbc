"""The fake's prompt cache: realistic usage for replies that script none, through the SDK."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from smarthole.testing import FakeMessagesAPI, text, tool_use
from smarthole.testing.cache import PromptCache, tokens

MODEL = "claude-test"
TOOL = {
    "name": "get_weather",
    "description": "Weather for a city. " * 20,
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
RULES = "You are a careful assistant. " * 40
CACHED = {"type": "ephemeral"}


def size(value: Any) -> int:
    return len(json.dumps(value, sort_keys=True, separators=(",", ":")).encode())


def system(*, mark: bool = True, volatile: str = "turn 1") -> list[dict[str, Any]]:
    first = {"type": "text", "text": RULES} | ({"cache_control": CACHED} if mark else {})
    return [first, {"type": "text", "text": volatile}]


@pytest.fixture
def client(fake: FakeMessagesAPI) -> Any:
    with anthropic.Anthropic(api_key="test", base_url=fake.url, max_retries=0) as sdk:
        yield sdk


def usage(client: Any, fake: FakeMessagesAPI, **request: Any) -> dict[str, int]:
    fake.add(text("Fine."))
    params = {"model": MODEL, "max_tokens": 100, "tools": [TOOL], "system": system()}
    params |= {"messages": [{"role": "user", "content": "hi"}]} | request
    with client.messages.stream(**params) as events:
        counted = events.get_final_message().usage
    return {
        "input": counted.input_tokens,
        "write": counted.cache_creation_input_tokens,
        "read": counted.cache_read_input_tokens,
        "output": counted.output_tokens,
    }


def test_without_breakpoints_everything_is_input(client, fake):
    first = usage(client, fake, system=system(mark=False))
    again = usage(client, fake, system=system(mark=False))
    assert first == again
    assert (first["write"], first["read"]) == (0, 0) and first["input"] > 0


def test_the_first_request_writes_its_prefix_and_the_next_reads_it(client, fake):
    first = usage(client, fake)
    second = usage(client, fake, system=system(volatile="turn 2"))
    cached = tokens(size(TOOL) + size({"type": "text", "text": RULES}))
    assert (first["write"], first["read"]) == (cached, 0)
    assert (second["write"], second["read"]) == (0, cached)
    assert second["input"] == first["input"] > 0  # "turn 1" and "turn 2" are as long


def test_a_changed_prefix_misses(client, fake):
    usage(client, fake)
    changed = usage(client, fake, tools=[{**TOOL, "description": "Another tool."}])
    assert changed["read"] == 0 and changed["write"] > 0


def test_the_cache_is_per_model(client, fake):
    usage(client, fake)
    assert usage(client, fake, model="claude-other")["read"] == 0


def test_breakpoints_compare_without_their_cache_control(client, fake):
    """A breakpoint moved later reads the earlier prefix and writes only what it adds."""
    usage(client, fake)
    later = system()
    later[1]["cache_control"] = CACHED
    moved = usage(client, fake, system=later)
    assert moved["read"] == tokens(size(TOOL) + size({"type": "text", "text": RULES}))
    assert moved["write"] == tokens(size({"type": "text", "text": "turn 1"}))


def test_a_tool_loop_reads_what_the_previous_call_wrote(client, fake):
    """A breakpoint on the last message: each call of a tool loop reads the one before."""
    said = {"type": "text", "text": "What is the weather in Paris? " * 30, "cache_control": CACHED}
    first = usage(client, fake, messages=[{"role": "user", "content": [said]}])
    call = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "P"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}
    loop = [
        {"role": "user", "content": [{k: v for k, v in said.items() if k != "cache_control"}]},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result | {"cache_control": CACHED}]},
    ]
    second = usage(client, fake, messages=loop)
    assert second["read"] == first["read"] + first["write"]
    assert second["write"] > 0 and second["input"] == first["input"] == 0


def test_automatic_caching_puts_the_breakpoint_on_the_last_block(client, fake):
    plain = system(mark=False)
    first = usage(client, fake, system=plain, extra_body={"cache_control": CACHED})
    second = usage(client, fake, system=plain, extra_body={"cache_control": CACHED})
    assert first["input"] == 0 and first["write"] > 0
    assert (second["read"], second["write"]) == (first["write"], 0)


def test_scripted_usage_is_sent_as_it_is(client, fake):
    fake.add(text("hi", usage={"input_tokens": 7, "cache_read_input_tokens": 5120}))
    message = client.messages.create(
        model=MODEL, max_tokens=10, system=system(), messages=[{"role": "user", "content": "hi"}]
    )
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 5)
    assert message.usage.cache_read_input_tokens == 5120


def test_output_tokens_follow_the_reply(client, fake):
    fake.add(tool_use("get_weather", {"city": "Paris " * 100}))
    message = client.messages.create(
        model=MODEL, max_tokens=1000, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.usage.output_tokens >= tokens(len("Paris " * 100))


def test_prompt_cache_counts_tokens_from_bytes():
    cache = PromptCache()
    body = {"model": "m", "system": "x" * 8, "messages": []}
    assert cache.usage(body, [])["input_tokens"] == tokens(size({"type": "text", "text": "x" * 8}))
    assert [tokens(n) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
