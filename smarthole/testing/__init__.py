"""A fake Anthropic Messages API on 127.0.0.1, for smarthole's tests and for plugin authors.

The real ``anthropic`` SDK talks to it over HTTP through ``base_url`` (or
``ANTHROPIC_BASE_URL``), so a test exercises the same code path as production, retries and
streaming included::

    from smarthole.testing import FakeMessagesAPI, rate_limited, text, tool_use

    with FakeMessagesAPI() as fake:
        fake.add(rate_limited(retry_after_ms=50))          # first call: 429
        fake.add(tool_use("read_file", {"path": "a.md"}))  # then a tool call
        fake.add(text("Done."))                            # then the final answer
        ...  # run the daemon with ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY=test
        assert fake.requests[-1].tool_results[0]["tool_use_id"].startswith("toolu_")

Scripted replies are used first-in first-out; ``when=`` makes one wait for a matching
request and ``times=`` repeats it. ``fake.default`` answers everything else (a 500 "fake:
script exhausted" unless set). A reply may also be a callable that receives the
:class:`RecordedRequest` and returns a :class:`Reply`. A request whose history breaks the
Messages API's rules gets the API's 400 without using a scripted reply, as the real service
would refuse it. Streaming requests (``"stream": true``) get the same replies as SSE. A reply
without a scripted ``usage=`` reports realistic token counts from a simulated prompt cache
(see :mod:`smarthole.testing.cache`).

``drop_message`` and ``run_once`` drive the real daemon through a home folder, as a plugin's
own tests do. Run ``python -m smarthole.testing [--port N]`` for an echo server to try the
daemon by hand.
"""

from .replies import (
    RecordedRequest,
    Reply,
    Responder,
    delay,
    drop,
    echo,
    error,
    garbled,
    hold,
    max_tokens,
    memory_call,
    overloaded,
    prompt_too_long,
    rate_limited,
    server_error,
    stalled,
    stream_error,
    text,
    tool_use,
    tool_uses,
    truncated,
    unclosed,
)
from .running import drop_message, run_once
from .server import FakeMessagesAPI
from .validation import invalid_history

__all__ = [
    "FakeMessagesAPI", "RecordedRequest", "Reply", "Responder", "delay", "drop", "drop_message",
    "echo", "error", "garbled", "hold", "invalid_history", "max_tokens", "memory_call",
    "overloaded", "prompt_too_long", "rate_limited", "run_once", "server_error", "stalled",
    "stream_error", "text", "tool_use", "tool_uses", "truncated", "unclosed",
]  # fmt: skip
