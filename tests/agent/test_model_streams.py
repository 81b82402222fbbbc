"""Broken model streams: each becomes a retryable ModelError, and a cut-off tool call never runs."""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import httpx2
import pytest

from smarthole import hookimpl
from smarthole.agent.client import ModelClient, _model_error
from smarthole.agent.prompts import TITLE_SYSTEM
from smarthole.agent.titles import _Backoff
from smarthole.config import ModelSettings
from smarthole.errors import ModelError
from smarthole.testing import (
    error,
    garbled,
    max_tokens,
    rate_limited,
    server_error,
    text,
    tool_use,
    unclosed,
)
from tests.helpers import db, drop, finals, run_once, wait_for, write_config

PARIS = {"city": "Paris", "units": "metric"}


@pytest.fixture
def client(fake):
    model = ModelClient(ModelSettings(), api_key="test", base_url=fake.url)
    yield model
    model.close()


def call(client: ModelClient) -> Any:
    return client.complete(system="s", messages=[{"role": "user", "content": "hi"}])


class Weather:
    """A plugin with one tool that records every call it gets."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []

    @hookimpl
    def register_tools(self, register):
        def weather(city: str = "nowhere", units: str = "none") -> str:
            """The weather in a city."""
            self.calls.append({"city": city, "units": units})
            return "18C"

        register(weather, idempotent=True)


# -- (a) an event whose data is not JSON ------------------------------------------------------


def test_a_garbled_event_is_a_transient_server_error(fake, client):
    fake.add(garbled(text("never parsed")))
    with pytest.raises(ModelError) as caught:
        call(client)
    assert (caught.value.retryable, caught.value.kind) == (True, "server")
    assert "not valid JSON" in str(caught.value)


def test_a_garbled_stream_defers_the_message_then_it_is_answered(home, fake, env, caplog):
    fake.add(garbled(text("never parsed")))
    fake.add(text("Whole answer."))
    drop(home, "hello", "m1")
    run_once(home, env)
    wait_for(lambda: run_once(home, env) and finals(home), 10, "the retry")
    assert [f.text for f in finals(home)] == ["Whole answer."]
    assert "internal error" not in caplog.text and "Traceback" not in caplog.text


# -- (b) a tool call whose input was cut off --------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (unclosed(tool_use("weather", PARIS)), "stream"),
        (max_tokens(tool_use("weather", PARIS, text="Let me look.")), "max_tokens"),
    ],
    ids=["stream ends inside the call", "max_tokens inside the call"],
)
def test_a_cut_off_tool_call_is_a_retryable_error(fake, client, reply, kind):
    fake.add(reply)
    with pytest.raises(ModelError) as caught:
        call(client)
    assert (caught.value.retryable, caught.value.kind) == (True, kind)
    assert "weather" in str(caught.value) and "not run" in str(caught.value)


def test_max_tokens_in_text_is_still_a_reply(fake, client):
    fake.add(max_tokens(text("a long answer")))
    assert call(client).stop_reason == "max_tokens"


@pytest.mark.parametrize("cut", [unclosed, max_tokens], ids=["unclosed", "max_tokens"])
def test_a_cut_off_tool_call_never_runs_and_the_turn_is_retried(home, fake, env, cut):
    weather = Weather()
    fake.add(cut(tool_use("weather", PARIS)))
    fake.add(tool_use("weather", PARIS))
    fake.add(text("It is 18C."))
    drop(home, "weather?", "m1")
    run_once(home, env, extra_plugins=[("weather", weather)])
    assert weather.calls == [], "a tool whose input was cut off is never run"
    wait_for(
        lambda: run_once(home, env, extra_plugins=[("weather", Weather())]) and finals(home),
        10,
        "the retry",
    )
    assert [f.text for f in finals(home)] == ["It is 18C."]
    (row,) = db(home).execute("SELECT COUNT(*) AS n FROM tool_calls").fetchall()
    assert row["n"] == 1, "only the complete call was run"


# -- (c) an exception without a message --------------------------------------------------------


REQUEST = httpx2.Request("POST", "http://fake/v1/messages")


@pytest.mark.parametrize(
    "exc",
    [
        anthropic.APIError("", REQUEST, body=None),
        anthropic.APIConnectionError(message="", request=REQUEST),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_an_empty_exception_message_falls_back_to_its_type_name(exc):
    reason = str(_model_error(exc))
    assert reason.endswith(type(exc).__name__), reason


def test_an_empty_api_message_falls_back_to_the_status(fake, client):
    fake.add(error(503, "api_error", ""))
    with pytest.raises(ModelError) as caught:
        call(client)
    assert str(caught.value).startswith("HTTP 503: ") and str(caught.value) != "HTTP 503: "


# -- (d) titles after a transient failure ------------------------------------------------------


def is_title(request) -> bool:
    return request.system_text == TITLE_SYSTEM


def title_state(home) -> tuple[str | None, str]:
    (row,) = db(home).execute("SELECT title, title_state FROM conversations").fetchall()
    return row["title"], row["title_state"]


@pytest.mark.parametrize("failure", [rate_limited(), server_error(503)], ids=["429", "503"])
def test_a_transient_title_failure_is_retried_on_a_later_pass(home, fake, env, failure, caplog):
    caplog.set_level(logging.WARNING)
    write_config(home, titles={"enabled": True})
    fake.add(failure, when=is_title)
    fake.default = lambda request: text("Weather in Paris") if is_title(request) else text("ok")
    drop(home, "weather?", "m1")
    run_once(home, env)
    assert title_state(home) == (None, "pending"), "a transient failure keeps the title due"
    assert "will try again" in caplog.text
    run_once(home, env)
    assert title_state(home) == ("Weather in Paris", "done")


def test_a_permanent_title_failure_gives_up(home, fake, env):
    write_config(home, titles={"enabled": True})
    fake.default = lambda request: (
        error(400, "invalid_request_error", "no") if is_title(request) else text("ok")
    )
    drop(home, "weather?", "m1")
    run_once(home, env)
    assert title_state(home) == ("Untitled conversation", "failed")
    titles_asked = len([r for r in fake.requests if is_title(r)])
    run_once(home, env)
    assert len([r for r in fake.requests if is_title(r)]) == titles_asked


def test_the_title_backoff_doubles_honours_retry_after_and_resets():
    now = [0.0]
    backoff = _Backoff(clock=lambda: now[0])
    key = ("title", "c1")
    assert not backoff.waiting(key)
    assert [backoff.failed(key, None) for _ in range(3)] == [30.0, 60.0, 120.0]
    assert backoff.waiting(key)
    now[0] = 119.0
    assert backoff.waiting(key)
    now[0] = 120.0
    assert not backoff.waiting(key), "due again on the next pass after the delay"
    assert backoff.failed(key, 5.0) == 5.0, "the server's retry-after wins"
    backoff.succeeded(key)
    assert not backoff.waiting(key) and backoff.failed(key, None) == 30.0
