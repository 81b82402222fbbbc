"""smarthole.testing: the fake Messages API, driven by the real anthropic SDK over HTTP.

``fake`` is the shared fixture from conftest.py: a started FakeMessagesAPI, stopped after.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from smarthole.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    delay,
    drop,
    echo,
    error,
    garbled,
    hold,
    invalid_history,
    max_tokens,
    overloaded,
    prompt_too_long,
    rate_limited,
    server_error,
    stream_error,
    text,
    tool_use,
    tool_uses,
    truncated,
    unclosed,
)

MODEL = "claude-test"
HI = [{"role": "user", "content": "hi"}]
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def sdk(fake: FakeMessagesAPI, max_retries: int = 0, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test", base_url=fake.url, max_retries=max_retries, **options
    )


@pytest.fixture
def client(fake: FakeMessagesAPI) -> Iterator[anthropic.Anthropic]:
    with sdk(fake) as sdk_client:
        yield sdk_client


def create(
    client: anthropic.Anthropic, messages: Any = HI, **extra: Any
) -> anthropic.types.Message:
    return client.messages.create(model=MODEL, max_tokens=100, messages=messages, **extra)


def stream(
    client: anthropic.Anthropic, messages: Any = HI, **extra: Any
) -> anthropic.types.Message:
    with client.messages.stream(model=MODEL, max_tokens=100, messages=messages, **extra) as events:
        return events.get_final_message()


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def said(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def call(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "get_weather", "input": {}}


def result(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "18C"}


def in_background(work: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    thread.start()
    return thread, outcome


# -- replies -----------------------------------------------------------------------------------


def test_a_text_reply_has_the_full_message_shape(fake, client):
    fake.add(text("Hello!"))
    message = create(client)
    assert message.content[0].text == "Hello!"
    assert (message.type, message.role, message.model) == ("message", "assistant", MODEL)
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    assert message.id.startswith("msg_")
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert message.usage.cache_creation_input_tokens == 0
    assert message.usage.cache_read_input_tokens == 0


def test_usage_can_be_scripted(fake, client):
    fake.add(text("hi", usage={"input_tokens": 7, "cache_read_input_tokens": 5120}))
    usage = create(client).usage
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (7, 5120)


def test_a_tool_round_trip_is_recorded(fake, client):
    fake.add(tool_use("get_weather", {"city": "Paris"}, text="Let me check."))
    fake.add(text("Sunny."))
    first = create(client, [{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER_TOOL])
    assert first.stop_reason == "tool_use"
    checking, called = first.content
    assert checking.text == "Let me check."
    assert (called.name, called.input) == ("get_weather", {"city": "Paris"})
    assert called.id.startswith("toolu_")

    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": first.content},
        user({"type": "tool_result", "tool_use_id": called.id, "content": "18C sunny"}),
    ]
    assert create(client, history, tools=[WEATHER_TOOL]).content[0].text == "Sunny."

    second = fake.requests[1]
    assert second.invalid_reason is None
    assert second.messages[1] == assistant(
        said("Let me check."),
        {"type": "tool_use", "id": called.id, "name": "get_weather", "input": {"city": "Paris"}},
    )
    assert second.tool_results == [
        {"type": "tool_result", "tool_use_id": called.id, "content": "18C sunny"}
    ]
    assert second.last_user_text == ""
    assert second.tools == ["get_weather"]


def test_tool_ids_are_fresh_for_every_reply(fake, client):
    fake.add(tool_use("get_weather", {}), times=2)
    fake.add(tool_use("get_weather", {}, id="toolu_mine"))
    ids = [create(client).content[0].id for _ in range(3)]
    assert ids[0] != ids[1] and ids[2] == "toolu_mine"


def test_a_text_stream_arrives_in_deltas(fake, client):
    fake.add(text("Hello, streaming world!"))
    with client.messages.stream(model=MODEL, max_tokens=100, messages=HI) as events:
        parts = list(events.text_stream)
        final = events.get_final_message()
    assert len(parts) == 2 and "".join(parts) == "Hello, streaming world!"
    assert final.content[0].text == "Hello, streaming world!"
    assert (final.stop_reason, final.model) == ("end_turn", MODEL)
    assert final.usage.output_tokens > 0
    assert fake.requests[0].stream
    assert fake.requests[0].headers["x-stainless-helper-method"] == "stream"


def test_a_tool_use_stream_parses_the_input(fake, client):
    fake.add(tool_uses([("get_weather", {"city": "Paris"}), ("note", {"n": [1, 2]})], "Both."))
    final = stream(client)
    assert final.stop_reason == "tool_use"
    assert final.content[0].text == "Both."
    assert [(b.name, b.input) for b in final.content[1:]] == [
        ("get_weather", {"city": "Paris"}),
        ("note", {"n": [1, 2]}),
    ]


@pytest.mark.parametrize("transport", [create, stream])
@pytest.mark.parametrize(
    "reply",
    [text("Hello!"), tool_use("look", {"q": "x"}, text="Looking."), truncated(text("half"))],
    ids=["text", "tool_use", "truncated"],
)
def test_replies_pass_the_sdks_strict_validation(fake, transport, reply):
    fake.add(reply)
    with sdk(fake, _strict_response_validation=True) as strict:
        message = transport(strict)
    assert message.content and message.usage.output_tokens > 0


def test_the_sdk_finds_the_fake_through_the_environment(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    fake.default = echo()
    with anthropic.Anthropic(max_retries=0) as from_env:
        assert create(from_env).content[0].text == "echo: hi"
    assert fake.requests[0].headers["authorization"] == "Bearer test"


# -- errors and retries ------------------------------------------------------------------------


def test_the_sdk_retries_a_429_after_retry_after_ms(fake):
    fake.add(rate_limited(retry_after_ms=20))
    fake.add(text("ok"))
    with sdk(fake, max_retries=2) as retrying:
        assert create(retrying).content[0].text == "ok"
    assert [r.retry_count for r in fake.requests] == [0, 1]
    assert fake.requests[1].time - fake.requests[0].time >= 0.02


def test_a_429_carries_its_retry_after_header(fake, client):
    fake.add(rate_limited(retry_after=3600))
    with pytest.raises(anthropic.RateLimitError) as caught:
        create(client)
    assert caught.value.response.headers["retry-after"] == "3600"
    assert caught.value.type == "rate_limit_error"
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("reply", "exception", "status", "kind"),
    [
        (overloaded(), anthropic.OverloadedError, 529, "overloaded_error"),
        (server_error(), anthropic.InternalServerError, 500, "api_error"),
        (server_error(503), anthropic.ServiceUnavailableError, 503, "api_error"),
        (prompt_too_long(), anthropic.BadRequestError, 400, "invalid_request_error"),
        (error(403, "permission_error", "no"), anthropic.PermissionDeniedError, 403, None),
    ],
    ids=["overloaded", "500", "503", "prompt_too_long", "403"],
)
def test_errors_reach_the_sdk_as_the_right_class(fake, client, reply, exception, status, kind):
    fake.add(reply)
    with pytest.raises(exception) as caught:
        create(client)
    assert caught.value.status_code == status
    assert caught.value.type == (kind or "permission_error")
    assert caught.value.request_id == caught.value.body["request_id"]
    assert caught.value.request_id.startswith("req_")


def test_prompt_too_long_says_how_long(fake, client):
    fake.add(prompt_too_long(208_656, 200_000))
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(client)
    assert caught.value.api_message == "prompt is too long: 208656 tokens > 200000 maximum"


def test_a_dropped_connection_is_a_connection_error(fake, client):
    fake.add(drop())
    with pytest.raises(anthropic.APIConnectionError):
        create(client)


def test_a_stream_dropped_midway_is_a_protocol_error(fake, client):
    fake.add(drop(text("never finished")))
    with pytest.raises(httpx2.RemoteProtocolError):
        stream(client)


def test_a_truncated_reply_has_no_stop_reason(fake, client):
    fake.add(truncated(text("half")), times=2)
    assert stream(client).stop_reason is None
    assert create(client).stop_reason is None


def test_an_error_event_mid_stream(fake, client):
    fake.add(stream_error("overloaded_error"))
    with pytest.raises(anthropic.APIStatusError) as caught:
        stream(client)
    assert (caught.value.status_code, caught.value.type) == (200, "overloaded_error")


def test_a_stream_error_without_streaming_is_an_http_error(fake, client):
    fake.add(stream_error("overloaded_error"))
    with pytest.raises(anthropic.OverloadedError):
        create(client)


def test_a_garbled_event_is_a_json_error_in_the_sdk(fake, client):
    fake.add(garbled(text("never parsed")))
    with pytest.raises(json.JSONDecodeError):
        stream(client)


def test_a_garbled_reply_without_streaming_is_not_json(fake):
    fake.add(garbled(text("x")))
    response = httpx2.post(
        f"{fake.url}/v1/messages", json={"model": MODEL, "messages": HI}, headers={"x-api-key": "k"}
    )
    assert response.status_code == 200
    with pytest.raises(ValueError):
        response.json()


def test_max_tokens_stops_the_last_block_half_way(fake, client):
    fake.add(max_tokens(tool_use("get_weather", {"city": "Paris", "units": "metric"}, text="Hm.")))
    final = stream(client)
    assert final.stop_reason == "max_tokens"
    assert final.content[0].text == "Hm.", "earlier blocks are whole"
    cut = final.content[1]
    assert cut.type == "tool_use" and cut.input != {"city": "Paris", "units": "metric"}
    assert fake.requests[0].stream


def test_max_tokens_in_text_sends_half_the_text(fake, client):
    fake.add(max_tokens(text("sent, not sent")))
    final = stream(client)
    assert (final.stop_reason, final.content[0].text) == ("max_tokens", "sent, n")


def test_max_tokens_without_streaming_is_the_stop_reason(fake, client):
    fake.add(max_tokens(text("whole")))
    assert create(client).stop_reason == "max_tokens"


def test_an_unclosed_block_looks_complete_to_the_sdk(fake, client):
    fake.add(unclosed(tool_use("get_weather", {"city": "Paris", "units": "metric"})))
    with client.messages.stream(model=MODEL, max_tokens=100, messages=HI) as events:
        kinds = [event.type for event in events]
        final = events.get_final_message()
    assert "content_block_start" in kinds and "content_block_stop" not in kinds
    assert final.stop_reason == "tool_use"
    assert final.content[0].input != {"city": "Paris", "units": "metric"}


# -- faults in time ----------------------------------------------------------------------------


def test_hold_answers_once_the_event_is_set(fake, client):
    release = threading.Event()
    fake.add(hold(release, text("late")))
    caller, outcome = in_background(lambda: create(client).content[0].text)
    fake.wait_for_requests(1)
    assert outcome == [] and caller.is_alive()
    release.set()
    caller.join(5)
    assert outcome == ["late"]


def test_stop_releases_a_held_reply():
    fake = FakeMessagesAPI().start()
    fake.add(hold(threading.Event(), text("released by stop")))
    with sdk(fake) as held:
        caller, outcome = in_background(lambda: create(held).content[0].text)
        fake.wait_for_requests(1)
        fake.stop()
        caller.join(5)
    assert outcome == ["released by stop"]


def test_delay_answers_after_the_delay(fake, client):
    fake.add(delay(0.05, text("slow")))
    started = time.monotonic()
    assert create(client).content[0].text == "slow"
    assert time.monotonic() - started >= 0.05


# -- the script --------------------------------------------------------------------------------


def test_the_first_matching_scripted_reply_wins(fake, client):
    fake.add(text("for bob"), when=lambda request: "bob" in request.last_user_text)
    fake.add(text("for anyone"))
    assert create(client).content[0].text == "for anyone"
    assert create(client, [{"role": "user", "content": "I am bob"}]).content[0].text == "for bob"
    assert fake.pending() == 0


def test_times_repeats_a_reply_then_the_script_is_exhausted(fake, client):
    fake.add(server_error(), times=3)
    assert fake.pending() == 3
    for _ in range(3):
        with pytest.raises(anthropic.InternalServerError, match="Internal server error"):
            create(client)
    assert fake.pending() == 0
    with pytest.raises(anthropic.InternalServerError, match="fake: script exhausted"):
        create(client)


def test_times_must_be_positive(fake):
    with pytest.raises(ValueError, match="times"):
        fake.add(text("x"), times=0)


def test_echo_and_callables_compute_replies_from_the_request(fake, client):
    fake.default = echo()
    assert create(client).content[0].text == "echo: hi"
    fake.default = echo(prefix="> ")
    assert create(client).content[0].text == "> hi"
    fake.add(lambda request: text(f"{request.model} has {len(request.messages)} message(s)"))
    assert create(client).content[0].text == "claude-test has 1 message(s)"


@pytest.mark.parametrize(
    "script",
    [
        lambda fake: setattr(fake, "default", lambda request: text(request.messages[5])),
        lambda fake: fake.add(text("x"), when=lambda request: request.messages[5]),
    ],
    ids=["responder", "when"],
)
def test_a_failing_callable_is_a_500_naming_the_error(fake, client, script):
    script(fake)
    with pytest.raises(anthropic.InternalServerError, match="IndexError"):
        create(client)


def test_wait_for_requests_returns_them_or_says_how_many_arrived(fake, client):
    fake.default = echo()
    create(client)
    assert [r.last_user_text for r in fake.wait_for_requests(1)] == ["hi"]
    with pytest.raises(AssertionError, match=r"expected 2 request\(s\) within 0.05s, 1 arrived"):
        fake.wait_for_requests(2, timeout=0.05)


def test_reset_forgets_the_script_and_the_requests(fake, client):
    fake.add(text("a"), times=2)
    create(client)
    fake.reset()
    assert (fake.pending(), fake.requests) == (0, [])


def test_the_recorded_request_reads_the_body(fake, client):
    fake.default = echo()
    system = [said("You are smarthole."), said("Be brief.")]
    history = [
        {"role": "user", "content": "Weather?"},
        assistant(call("toolu_a")),
        user(result("toolu_a"), said("and then"), said("thanks")),
    ]
    create(client, history, system=system, tools=[WEATHER_TOOL])
    [request] = fake.requests
    assert isinstance(request, RecordedRequest)
    assert (request.path, request.model, request.stream) == ("/v1/messages", MODEL, False)
    assert request.system_text == "You are smarthole.\n\nBe brief."
    assert request.last_user_text == "and then\nthanks"
    assert request.tool_results == [result("toolu_a")]
    assert request.tools == ["get_weather"]
    assert request.messages == history
    assert request.body["max_tokens"] == 100
    assert request.retry_count == 0
    assert request.headers["content-type"] == "application/json"


# -- history validation ------------------------------------------------------------------------

BAD_HISTORIES = {
    "empty": ([], "at least one message is required"),
    "assistant first": ([assistant(said("hello"))], 'first message must use the "user" role'),
    "two user messages": ([*HI, user(said("again"))], "roles must alternate"),
    "two assistant messages": (
        [*HI, assistant(said("a")), assistant(said("b"))],
        "roles must alternate",
    ),
    "tool_use without result": (
        [*HI, assistant(call("toolu_a")), user(said("no result"))],
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a",
    ),
    "one of two tool_uses answered": (
        [*HI, assistant(call("toolu_a"), call("toolu_b")), user(result("toolu_a"))],
        "immediately after: toolu_b",
    ),
    "tool_use ending the history": ([*HI, assistant(call("toolu_a"))], "immediately after"),
    "result answering nothing": (
        [*HI, assistant(said("no tools")), user(result("toolu_x"))],
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_x",
    ),
    "text before tool_result": (
        [*HI, assistant(call("toolu_a")), user(said("first"), result("toolu_a"))],
        "`tool_result` blocks must come before any text",
    ),
    "tool_use id reused": (
        [
            *HI,
            assistant(call("toolu_a")),
            user(result("toolu_a")),
            assistant(call("toolu_a")),
            user(result("toolu_a")),
        ],
        "ids must be unique",
    ),
    "blank text block": ([user(said("  "))], "text content blocks must be non-empty"),
    "empty content": ([user()], "must have non-empty content"),
}


@pytest.mark.parametrize(("messages", "problem"), BAD_HISTORIES.values(), ids=list(BAD_HISTORIES))
def test_a_history_that_breaks_the_api_rules_is_refused(fake, client, messages, problem):
    fake.add(text("never used"))
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(client, messages)
    assert problem in caught.value.api_message
    assert caught.value.type == "invalid_request_error"
    [request] = fake.requests
    assert request.invalid_reason == invalid_history(messages) == caught.value.api_message
    assert fake.pending() == 1


def test_a_valid_tool_round_trip_is_accepted(fake, client):
    history = [*HI, assistant(said("Checking."), call("toolu_a")), user(result("toolu_a"))]
    assert invalid_history(history) is None
    fake.add(text("done"))
    assert create(client, history).content[0].text == "done"


def test_validation_can_be_switched_off(client, fake):
    fake.validate = False
    fake.add(text("anything goes"))
    assert create(client, [assistant(said("hello"))]).content[0].text == "anything goes"
    assert fake.requests[0].invalid_reason is None


# -- HTTP edges --------------------------------------------------------------------------------


def test_a_request_without_credentials_is_refused(fake):
    response = httpx2.post(f"{fake.url}/v1/messages", json={"messages": HI})
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert fake.requests == []


@pytest.mark.parametrize(("method", "path"), [("POST", "/v1/complete"), ("GET", "/v1/messages")])
def test_an_unknown_route_is_not_found(fake, method, path):
    response = httpx2.request(method, fake.url + path, headers={"x-api-key": "test"}, json={})
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_count_tokens_estimates_four_characters_a_token(fake, client):
    short = client.messages.count_tokens(model=MODEL, messages=HI).input_tokens
    long = client.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "word " * 400}]
    ).input_tokens
    assert 0 < short < 20 and 500 <= long <= 540
    assert fake.requests == []


def test_stop_joins_every_thread_even_with_an_idle_client():
    before = set(threading.enumerate())
    fake = FakeMessagesAPI().start()
    fake.default = echo()
    idle = sdk(fake)  # keeps its connection open: stop() must hang up on it
    create(idle)
    fake.stop()
    fake.stop()  # twice is harmless
    assert set(threading.enumerate()) <= before
    idle.close()


# -- outside the test process ------------------------------------------------------------------


def test_importing_the_module_does_not_import_the_sdk():
    code = "import sys, smarthole.testing; print('anthropic' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


def test_the_command_line_serves_an_echo_model_until_ctrl_c():
    command = [sys.executable, "-m", "smarthole.testing"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as server:
        try:
            url = server.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            with anthropic.Anthropic(api_key="test", base_url=url, max_retries=0) as remote:
                reply = create(remote, [{"role": "user", "content": "ping"}])
            assert reply.content[0].text == "echo: ping"
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=10) == 0
        finally:
            server.kill()
