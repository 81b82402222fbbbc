"""The daemon assembles a streamed reply from its events' JSON exactly as the SDK's message
stream does (its ``accumulate_event`` is the reference), however the deltas are split."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent
from hypothesis import given
from hypothesis import strategies as st

from smarthole.agent.replies import StreamedReply
from smarthole.errors import ModelError

words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | words,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
    max_leaves=8,
)
citation = st.builds(
    lambda text: {"type": "char_location", "cited_text": text, "document_index": 0,
                  "document_title": None, "start_char_index": 0, "end_char_index": len(text)},
    words,
)  # fmt: skip


@st.composite
def blocks(draw: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A content block as it opens, and the deltas that complete it."""
    kind = draw(st.sampled_from(["text", "tool_use", "thinking"]))
    if kind == "text":
        parts = draw(st.lists(words, max_size=4))
        cited = draw(st.lists(citation, max_size=2))
        deltas = [{"type": "text_delta", "text": p} for p in parts]
        deltas += [{"type": "citations_delta", "citation": c} for c in cited]
        return {"type": "text", "text": "", "citations": None}, deltas
    if kind == "tool_use":
        data = json.dumps(draw(st.dictionaries(words, json_values, max_size=4)))
        cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=3)))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        return {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}, deltas
    parts = draw(st.lists(words, max_size=3))
    deltas = [{"type": "thinking_delta", "thinking": p} for p in parts]
    deltas.append({"type": "signature_delta", "signature": draw(words)})
    return {"type": "thinking", "thinking": "", "signature": ""}, deltas


def stream(content: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    usage = {"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 3}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}},
    ]  # fmt: skip
    for index, (opened, deltas) in enumerate(content):
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 7, "input_tokens": None},
        }
    )
    events.append({"type": "message_stop"})  # fmt: skip
    return events


def sdk_assembly(events: list[dict[str, Any]]) -> Any:
    from anthropic._models import construct_type

    snapshot = None
    buffers: dict[int, bytes] = {}
    for raw in events:
        event = construct_type(type_=RawMessageStreamEvent, value=raw)
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
    return snapshot


def ours(events: list[dict[str, Any]]) -> StreamedReply:
    reply = StreamedReply()
    for event in events:
        reply.add(json.loads(json.dumps(event)))  # each event is fresh JSON, as on the wire
    return reply


@given(st.lists(blocks(), max_size=4))
def test_a_reply_is_assembled_as_the_sdk_assembles_it(content):
    events = stream(content)
    expected = sdk_assembly(events)
    reply = ours(events)
    reply.check_complete(1024)
    assert reply.content() == [
        block.model_dump(exclude_none=True, mode="json") for block in expected.content
    ]
    assert reply.usage == expected.usage.model_dump(exclude_none=True)
    assert reply.stop_reason == expected.stop_reason == "end_turn"
    assert reply.model == "claude-x"


def test_a_tool_call_whose_input_is_not_json_is_a_retryable_error():
    events = stream([({"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}},
                      [{"type": "input_json_delta", "partial_json": '{"a": '}])])  # fmt: skip
    with pytest.raises(ModelError, match="input of tool call t does not parse") as caught:
        ours(events).check_complete(1024)
    assert caught.value.retryable


def test_events_before_message_start_are_skipped_and_a_stream_without_one_is_incomplete():
    reply = ours([{"type": "content_block_stop", "index": 0}, {"type": "message_stop"}])
    with pytest.raises(ModelError, match="ended before it was complete"):
        reply.check_complete(1024)


def test_a_delta_for_a_block_never_started_is_not_valid_data():
    class Events(list):  # the SDK's stream is a context manager
        def __enter__(self) -> Events:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    delta = {"type": "text_delta", "text": "x"}
    stray = {"type": "content_block_delta", "index": 3, "delta": delta}
    events = [*stream([])[:1], stray]
    with pytest.raises(ValueError, match="unexpected event"):
        StreamedReply.read(Events(events))
