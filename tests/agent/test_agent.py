"""The model client: every way a call can fail becomes a ModelError that says what to do."""

from __future__ import annotations

import email.utils
import time

import pytest

from smarthole.agent.client import KEPT_TOOL_LISTS, ModelClient, _retry_after
from smarthole.config import ModelSettings
from smarthole.errors import ConfigError, ModelError
from smarthole.testing import (
    Reply,
    drop,
    error,
    overloaded,
    prompt_too_long,
    rate_limited,
    server_error,
    stream_error,
    text,
    truncated,
)
from tests.helpers import drop as drop_message
from tests.helpers import finals, run_once, wait_for


@pytest.fixture
def client(fake):
    model = ModelClient(ModelSettings(), api_key="test", base_url=fake.url)
    yield model
    model.close()


def call(client):
    return client.complete(system="s", messages=[{"role": "user", "content": "hi"}])


def spend_limit() -> Reply:
    reply = error(429, "rate_limit_error", "spend limit reached")
    reply.body["error"]["details"] = {"error_code": "enforced_spend_limit_reached"}
    return reply


@pytest.mark.parametrize(
    ("reply", "retryable", "kind"),
    [
        (rate_limited(retry_after=7), True, "rate_limit"),
        (overloaded(), True, "overloaded"),
        (server_error(503), True, "server"),
        (error(408, "timeout_error", "slow"), True, "server"),
        (drop(), True, "connection"),
        (truncated(text("half")), True, "stream"),
        (stream_error("overloaded_error"), True, "overloaded_error"),
        (prompt_too_long(), False, "prompt_too_long"),
        (error(400, "invalid_request_error", "bad"), False, "invalid_request"),
        (error(401, "authentication_error", "bad key"), False, "auth"),
        (error(403, "permission_error", "no"), False, "auth"),
        (spend_limit(), False, "spend_limit"),
    ],
)
def test_failures_are_classified(fake, client, reply, retryable, kind):
    fake.add(reply)
    with pytest.raises(ModelError) as caught:
        call(client)
    assert (caught.value.retryable, caught.value.kind) == (retryable, kind)
    assert len(fake.requests) == 1, "the SDK's own retries are off by default"


def test_the_servers_retry_after_is_kept(fake, client):
    fake.add(rate_limited(retry_after_ms=1500, retry_after=9))
    with pytest.raises(ModelError) as caught:
        call(client)
    assert caught.value.retry_after == pytest.approx(1.5)


def test_retry_after_parsing():
    assert _retry_after({"retry-after": "3600"}) == 3600
    assert _retry_after({"retry-after-ms": "250"}) == 0.25
    assert _retry_after({"retry-after": "soon"}) is None
    assert _retry_after({}) is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < _retry_after({"retry-after": later}) <= 30


def test_a_reply_comes_back_as_plain_blocks(fake, client):
    fake.add(text("Hello"))
    reply = call(client)
    assert reply.content == [{"type": "text", "text": "Hello"}]
    assert reply.stop_reason == "end_turn" and reply.model == ModelSettings().name


def tool(name: str) -> dict:
    return {"name": name, "description": "é", "input_schema": {"type": "object"}}


def test_the_request_is_the_json_the_sdk_would_send(fake, client):
    fake.default = text("ok")
    messages = [{"role": "user", "content": "naïve ☃"}]
    client.complete(system="s", messages=messages, tools=[tool("a")], max_tokens=7)
    (request,) = fake.requests
    assert list(request.body.items()) == [
        ("messages", messages),
        ("model", ModelSettings().name),
        ("max_tokens", 7),
        ("system", "s"),
        ("tools", [tool("a")]),
        ("stream", True),
    ]


def test_each_call_sends_the_tools_it_is_given(fake, client):
    """A tool list's JSON is kept from one call to the next; a new list is sent as it is."""
    fake.default = text("ok")
    first, second = [tool("a")], [tool("a"), tool("b")]
    for tools in (first, first, second, [], first):
        client.complete(system="s", messages=[{"role": "user", "content": "hi"}], tools=tools)
    many = [[tool(f"t{n}")] for n in range(40)]  # more lists than a client keeps
    for tools in many:
        client.complete(system="s", messages=[{"role": "user", "content": "hi"}], tools=tools)
    sent = [request.body.get("tools") for request in fake.requests]
    assert sent == [first, first, second, None, first, *many]
    assert len(client._encoded_tools) <= KEPT_TOOL_LISTS, "what it keeps stays bounded"


def test_a_reply_carries_the_usage_the_api_reported(fake, client):
    fake.add(text("Hello", usage={"input_tokens": 12, "output_tokens": 3}))
    usage = call(client).usage
    assert (usage["input_tokens"], usage["output_tokens"]) == (12, 3)
    assert usage["cache_read_input_tokens"] == 0


def test_the_key_comes_from_the_environment():
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        ModelClient.from_environment(ModelSettings(), env={})


def test_base_url_from_config_wins_over_the_environment(fake):
    client = ModelClient.from_environment(
        ModelSettings(base_url=fake.url),
        env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    )
    fake.add(text("via config"))
    assert call(client).text == "via config"
    client.close()


def test_a_broken_stream_defers_the_message_then_it_is_answered(home, fake, env):
    fake.add(truncated(text("half")))
    fake.add(text("Whole answer."))
    drop_message(home, "hello", "m1")
    run_once(home, env)
    assert finals(home) == [], "--once leaves a deferral that is not yet due"
    # Each try starts a daemon (seconds on a busy machine) until the deferral is due.
    wait_for(lambda: run_once(home, env) and finals(home), 30, "the retry")
    assert [f.text for f in finals(home)] == ["Whole answer."]
