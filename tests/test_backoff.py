"""The one backoff formula, with each retry's own numbers."""

from __future__ import annotations

import pytest

from smarthole.backoff import Backoff


def low(a: float, b: float) -> float:
    return a


def high(a: float, b: float) -> float:
    return b


@pytest.mark.parametrize(
    ("backoff", "failures", "uniform", "wait"),
    [
        (Backoff(0.5, 60.0), 1, low, 0.5),  # a stranded claim: 0.5 s, doubling...
        (Backoff(0.5, 60.0), 4, low, 4.0),
        (Backoff(0.5, 60.0), 9, low, 60.0),  # ... to a minute
        (Backoff(30.0, 3600.0), 3, low, 120.0),  # a title or summary
        (Backoff(1.0, 300.0), 10_000, low, 300.0),  # an MCP server's restart: no overflow
        (Backoff(2.0, 300.0, jitter=0.25), 2, low, 4.0),  # a message's next attempt
        (Backoff(2.0, 300.0, jitter=0.25), 2, high, 5.0),  # up to a quarter more
        (Backoff(2.0, 300.0, jitter=0.25), 20, high, 300.0),  # the cap holds
        (Backoff(1000, 30000, jitter=0.1, jitter_past_cap=True), 20, high, 33000),  # desktop
    ],
)
def test_waits_double_to_the_cap_with_their_jitter(backoff, failures, uniform, wait):
    assert backoff.delay(failures, uniform=uniform) == pytest.approx(wait)


@pytest.mark.parametrize(("retry_after", "wait"), [(0.3, 0.3), (3600.0, 300.0), (-1.0, 0.0)])
def test_a_server_that_says_when_is_believed_up_to_the_cap(retry_after, wait):
    backoff = Backoff(2.0, 300.0, jitter=0.25)
    assert backoff.delay(3, retry_after=retry_after, uniform=high) == wait
