"""smarthole.testing: the fake Messages API, driven by the real anthropic SDK."""

from __future__ import annotations

import threading

import anthropic
import httpx2
import pytest

from smarthole.testing import (
    FakeMessagesAPI,
    drop,
    echo,
    error,
    hold,
    invalid_history,
    overloaded,
    prompt_too_long,
    rate_limited,
    server_error,
    stream_error,
    text,
    tool_use,
    truncated,
)

USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def client(fake):
    sdk = anthropic.Anthropic(api_key="test", base_url=fake.url, max_retries=0)
    yield sdk
    sdk.close()


def create(client, messages=USER, **extra):
    return client.messages.create(model="claude-test", max_tokens=100, messages=messages, **extra)


def stream(client, messages=USER):
    with client.messages.stream(model="claude-test", max_tokens=100, messages=messages) as events:
        return events.get_final_message()


def test_text_reply_in_both_transports(fake, client):
    fake.add(text("Hello!"), times=2)
    assert create(client).content[0].text == "Hello!"
    final = stream(client)
    assert final.content[0].text == "Hello!" and final.stop_reason == "end_turn"
    assert [r.stream for r in fake.requests] == [False, True]


def test_replies_pass_the_sdks_strict_validation(fake):
    strict = anthropic.Anthropic(
        api_key="test", base_url=fake.url, max_retries=0, _strict_response_validation=True
    )
    fake.add(tool_use("look", {"q": "x"}, text="Looking."), times=2)
    assert create(strict).content[1].input == {"q": "x"}
    assert stream(strict).content[1].input == {"q": "x"}
    strict.close()


def test_a_tool_round_trip_is_recorded(fake, client):
    fake.add(tool_use("get_weather", {"city": "Paris"}, id="toolu_1"))
    fake.add(text("Sunny."))
    first = stream(client)
    assert first.stop_reason == "tool_use"
    messages = [
        *USER,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}],
        },
    ]
    assert stream(client, messages).content[0].text == "Sunny."
    assert fake.requests[1].tool_results[0]["content"] == "18C"
    assert fake.requests[1].last_user_text == ""


def test_sdk_retries_a_429_with_retry_after_ms(fake):
    sdk = anthropic.Anthropic(api_key="test", base_url=fake.url, max_retries=2)
    fake.add(rate_limited(retry_after_ms=20))
    fake.add(text("ok"))
    assert create(sdk).content[0].text == "ok"
    assert [r.retry_count for r in fake.requests] == [0, 1]
    sdk.close()


@pytest.mark.parametrize(
    ("reply", "exception"),
    [
        (rate_limited(retry_after=3600), anthropic.RateLimitError),
        (overloaded(), anthropic.OverloadedError),
        (server_error(), anthropic.InternalServerError),
        (prompt_too_long(), anthropic.BadRequestError),
        (error(401, "authentication_error", "bad key"), anthropic.AuthenticationError),
        (drop(), anthropic.APIConnectionError),
    ],
)
def test_errors_reach_the_sdk_as_the_right_class(fake, client, reply, exception):
    fake.add(reply)
    with pytest.raises(exception) as caught:
        create(client)
    if isinstance(caught.value, anthropic.RateLimitError):
        assert caught.value.response.headers["retry-after"] == "3600"
    if isinstance(caught.value, anthropic.BadRequestError):
        assert caught.value.api_message.startswith("prompt is too long")


def test_stream_faults(fake, client):
    fake.add(truncated(text("half")))
    assert stream(client).stop_reason is None
    fake.add(stream_error("overloaded_error"))
    with pytest.raises(anthropic.APIStatusError) as caught:
        stream(client)
    assert caught.value.type == "overloaded_error"


def test_hold_answers_once_released(fake, client):
    release = threading.Event()
    fake.add(hold(release, text("late")))
    result: list[str] = []
    caller = threading.Thread(target=lambda: result.append(create(client).content[0].text))
    caller.start()
    fake.wait_for_requests(1)
    assert result == []
    release.set()
    caller.join(10)
    assert result == ["late"]


def test_when_times_default_and_callables(fake, client):
    fake.add(text("for bob"), when=lambda r: "bob" in r.last_user_text)
    fake.add(text("twice"), times=2)
    assert fake.pending() == 3
    assert create(client, [{"role": "user", "content": "I am bob"}]).content[0].text == "for bob"
    assert [create(client).content[0].text for _ in range(2)] == ["twice", "twice"]
    with pytest.raises(anthropic.InternalServerError, match="script exhausted"):
        create(client)
    fake.default = echo()
    assert create(client).content[0].text == "echo: hi"
    fake.add(lambda request: text(request.model))
    assert create(client).content[0].text == "claude-test"


def test_wait_for_requests_says_how_many_arrived(fake):
    with pytest.raises(AssertionError, match="expected 1 request"):
        fake.wait_for_requests(1, timeout=0.05)


def test_auth_paths_and_count_tokens(fake):
    no_auth = httpx2.post(f"{fake.url}/v1/messages", json={})
    assert no_auth.status_code == 401
    headers = {"x-api-key": "test"}
    assert httpx2.post(f"{fake.url}/v1/other", json={}, headers=headers).status_code == 404
    counted = httpx2.post(
        f"{fake.url}/v1/messages/count_tokens", json={"messages": USER}, headers=headers
    )
    assert counted.json()["input_tokens"] > 0


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([], "at least one message"),
        ([{"role": "assistant", "content": "x"}], "first message"),
        ([*USER, {"role": "user", "content": "again"}], "alternate"),
        (
            [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
                },
                {"role": "user", "content": "no result"},
            ],
            "matching tool_result",
        ),
        (
            [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "first"},
                        {"type": "tool_result", "tool_use_id": "t1"},
                    ],
                },
            ],
            "before text",
        ),
        ([{"role": "user", "content": [{"type": "text", "text": "  "}]}], "non-empty"),
    ],
)
def test_invalid_history_is_refused_like_the_real_api(fake, client, messages, problem):
    assert problem in invalid_history(messages)
    fake.add(text("never used"))
    with pytest.raises(anthropic.BadRequestError, match=problem):
        create(client, messages)
    assert fake.requests[-1].invalid_reason and fake.pending() == 1


def test_stop_leaves_no_threads():
    before = set(threading.enumerate())
    with FakeMessagesAPI() as fake:
        fake.add(text("x"))
    assert set(threading.enumerate()) <= before
