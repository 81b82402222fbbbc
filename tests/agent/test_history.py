"""The history a model call sends: kept between calls and turns, read only where new."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smarthole.agent.client import encode_json
from smarthole.agent.history import MESSAGE_BYTES, HistoryCache
from smarthole.agent.messages import with_breakpoint
from smarthole.agent.packed import PACKED_TURN_BYTES
from smarthole.agent.prompts import turn_context
from smarthole.db.store import Store
from smarthole.formats import micros

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


class CountingStore:
    """The store, counting the rows the cache reads."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.read = 0
        self.loads = 0

    def history_rows(self, conversation_id, *, after_id):
        rows = self.store.history_rows(conversation_id, after_id=after_id)
        self.read += len(rows)
        return rows

    def history_tail(self, conversation_id, *, current_turn, budget_chars):
        rows, older = self.store.history_tail(
            conversation_id, current_turn=current_turn, budget_chars=budget_chars
        )
        self.read += len(rows)
        self.loads += 1
        return rows, older


@pytest.fixture
def store(tmp_path):
    store = Store.open(tmp_path / "smarthole.db", clock=lambda: NOW)
    yield store
    store.close()


def say(store, conversation, turn, words, kind="user"):
    store.append_message(conversation.id, turn, kind, [{"type": "text", "text": words}])


def talked(store, turns):
    """A conversation of ``turns`` questions, each answered."""
    conversation = store.create_conversation("default")
    for turn in range(1, turns + 1):
        say(store, conversation, turn, f"question {turn}")
        say(store, conversation, turn, f"answer {turn}", kind="assistant")
    return conversation


def texts(messages):
    return [
        [b["text"] for b in m["content"] if not b["text"].startswith("<context>")] for m in messages
    ]


def test_each_user_message_starts_with_its_turn_and_time(store):
    conversation = store.create_conversation("default")
    say(store, conversation, 1, "Hello")
    cache = HistoryCache(store, turn_context)
    (message,) = cache.window(conversation.id, current_turn=1, budget_chars=1000).messages
    context, words = message["content"]
    assert context == turn_context(1, micros(NOW))
    assert context["text"].startswith("<context>Turn 1, sent Sunday, 22 November 2026, ")
    assert words == {"type": "text", "text": "Hello"}


def test_a_turn_reads_only_what_is_new(store):
    conversation = talked(store, 20)
    counting = CountingStore(store)
    cache = HistoryCache(counting, turn_context)
    say(store, conversation, 21, "question 21")
    first = cache.window(conversation.id, current_turn=21, budget_chars=10**6)
    assert counting.read == 41 and len(first.messages) == 41
    say(store, conversation, 21, "a tool call", kind="assistant")
    say(store, conversation, 21, "its result", kind="tool_result")
    second = cache.window(conversation.id, current_turn=21, budget_chars=10**6)
    assert counting.read == 43, "only the two new rows"
    assert second.messages[:40] == first.messages[:40]
    assert texts(second.messages)[-2:] == [["a tool call"], ["its result"]]
    assert counting.loads == 1


def test_turns_out_of_the_budget_are_forgotten_and_read_again_if_wanted(store):
    conversation = store.create_conversation("default")
    for turn in range(1, 6):
        say(store, conversation, turn, "x" * 100)
    counting = CountingStore(store)
    cache = HistoryCache(counting, turn_context)
    size = len(store.history_rows(conversation.id, after_id=0)[0][3])
    small = cache.window(conversation.id, current_turn=5, budget_chars=2 * size)
    assert len(small.messages) == 1, "consecutive user turns are one API message"
    assert (small.earlier_chars, small.current_chars) == (size, size)
    assert len(small.messages[0]["content"]) == 4  # turns 4 and 5: context and text each
    everything = cache.window(conversation.id, current_turn=5, budget_chars=10**6)
    assert len(everything.messages[0]["content"]) == 10
    assert counting.loads == 2, "a larger budget read the forgotten turns again"


def test_the_current_turn_is_sent_even_when_it_alone_is_over_the_budget(store):
    conversation = store.create_conversation("default")
    say(store, conversation, 1, "earlier")
    say(store, conversation, 2, "y" * 500)
    cache = HistoryCache(store, turn_context)
    window = cache.window(conversation.id, current_turn=2, budget_chars=10)
    assert texts(window.messages) == [["y" * 500]]
    again = cache.window(conversation.id, current_turn=2, budget_chars=10)
    assert again.messages == window.messages


def test_only_the_most_recently_used_conversations_are_kept(store):
    conversation = store.create_conversation("default")
    say(store, conversation, 1, "Hello")
    cache = HistoryCache(store, turn_context, conversations=1)
    cache.window(conversation.id, current_turn=1, budget_chars=100)
    other = store.create_conversation("other")
    say(store, other, 1, "Hi")
    assert texts(cache.window(other.id, current_turn=1, budget_chars=100).messages) == [["Hi"]]
    assert len(cache._kept) == 1, "the least recently used conversation was let go"


def test_a_cleared_cache_reads_each_conversation_again_and_sends_the_same(store):
    conversation = talked(store, 3)
    counting = CountingStore(store)
    cache = HistoryCache(counting, turn_context)
    before = cache.window(conversation.id, current_turn=3, budget_chars=10_000)
    cache.window(conversation.id, current_turn=3, budget_chars=10_000)
    assert counting.loads == 1
    assert cache.clear() == 1
    assert cache.clear() == 0
    after = cache.window(conversation.id, current_turn=3, budget_chars=10_000)
    assert counting.loads == 2, "read again after the clear"
    assert after.messages == before.messages
    assert after.history.json(encode_json) == before.history.json(encode_json)


def test_the_breakpoint_marks_a_copy_of_the_last_block():
    shared = {"type": "text", "text": "Hello"}
    messages = [{"role": "user", "content": [shared]}]
    marked = with_breakpoint(messages)
    assert marked[-1]["content"][-1] == {**shared, "cache_control": {"type": "ephemeral"}}
    assert shared == {"type": "text", "text": "Hello"} and messages[0]["content"] == [shared]
    assert with_breakpoint([]) == []


def test_what_is_kept_in_all_is_bounded_in_bytes(store):
    conversations = [store.create_conversation(f"c{n}") for n in range(3)]
    for conversation in conversations:
        say(store, conversation, 1, "x" * 100)
    one = MESSAGE_BYTES + len(store.history_rows(conversations[0].id, after_id=0)[0][3])
    cache = HistoryCache(store, turn_context, max_bytes=2 * one)
    for conversation in conversations:
        cache.window(conversation.id, current_turn=1, budget_chars=10_000)
    assert list(cache._kept) == [c.id for c in conversations[1:]], "two messages' worth"


def test_many_short_conversations_taken_in_turn_are_all_kept(store):
    """Ten channels answered round-robin: each call reads only its new rows, not its history
    again (a cache of fewer conversations than are active would miss every time)."""
    counting = CountingStore(store)
    cache = HistoryCache(counting, turn_context)
    conversations = [store.create_conversation(f"c{n}") for n in range(10)]
    for turn in range(1, 4):
        for conversation in conversations:
            say(store, conversation, turn, f"turn {turn}")
            cache.window(conversation.id, current_turn=turn, budget_chars=10_000)
    assert counting.loads == len(conversations), "each history was read whole only once"


class CountingEncoder:
    """The client's JSON encoding, counting the values it is given."""

    def __init__(self) -> None:
        self.values = 0

    def __call__(self, value):
        self.values += 1
        return encode_json(value)


def test_an_earlier_turn_is_encoded_once_then_kept_as_its_text(store):
    """Turn after turn, a call's history is the same JSON text as encoding its messages,
    but only what the last call did not send is encoded."""
    cache = HistoryCache(store, turn_context)
    conversation = store.create_conversation("c")
    encode = CountingEncoder()
    for turn in range(1, 6):
        say(store, conversation, turn, f"question {turn}")
        history = cache.window(conversation.id, current_turn=turn, budget_chars=10**6).history
        encode.values = 0
        sent = history.json(encode)
        assert sent == encode_json(history.messages())
        # this turn's user message, and the turn before it (encoded once, as an earlier turn)
        assert encode.values == (1 if turn == 1 else 2)
        say(store, conversation, turn, f"answer {turn}", kind="assistant")
    kept = cache._kept[conversation.id]
    assert list(kept.packed.numbers) == [1, 2, 3] and list(kept.turns) == [4, 5]


def test_packed_turns_weigh_their_text_not_their_objects(store):
    cache = HistoryCache(store, turn_context)
    conversation = store.create_conversation("c")
    for turn in range(1, 4):
        say(store, conversation, turn, "q" * 50)
        say(store, conversation, turn, "a" * 50, kind="assistant")
    cache.window(conversation.id, current_turn=3, budget_chars=10**6).history.json(encode_json)
    before = cache._kept[conversation.id].weight
    cache.window(conversation.id, current_turn=3, budget_chars=10**6)
    after = cache._kept[conversation.id].weight
    assert after < before - 2 * MESSAGE_BYTES  # two turns of two messages each were packed


def test_a_late_row_of_a_packed_turn_reads_the_history_again(store):
    cache = HistoryCache(store, turn_context)
    conversation = store.create_conversation("c")
    for turn in (1, 2):
        say(store, conversation, turn, f"question {turn}")
        say(store, conversation, turn, f"answer {turn}", kind="assistant")
    say(store, conversation, 3, "question 3")
    for _ in range(2):  # the first call sends turns 1 and 2 as text, the second packs them
        cache.window(conversation.id, current_turn=3, budget_chars=10**6).history.json(encode_json)
    say(store, conversation, 1, "a late reply", kind="assistant")
    history = cache.window(conversation.id, current_turn=3, budget_chars=10**6).history
    assert texts(history.messages())[1] == ["answer 1", "a late reply"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 120), min_size=1, max_size=14),
    budgets=st.lists(st.sampled_from([60, 150, 400, 10**6]), min_size=1, max_size=14),
    tools=st.lists(st.booleans(), min_size=1, max_size=14),
)
def test_a_kept_history_sends_what_a_fresh_read_would(store, sizes, budgets, tools):
    """Turn after turn, under budgets that grow and shrink (so packed turns are dropped and
    read again), with tool calls in some turns, the kept history's text and messages equal a
    fresh cache's."""
    conversation = store.create_conversation("c")
    kept = HistoryCache(store, turn_context)
    for turn, size in enumerate(sizes, start=1):
        say(store, conversation, turn, "q" * size)
        if tools[turn % len(tools)]:  # a tool call and its result: the turn is not closed yet
            call = {"type": "tool_use", "id": f"tu{turn}", "name": "t", "input": {}}
            store.append_message(conversation.id, turn, "assistant", [call])
            result = {"type": "tool_result", "tool_use_id": f"tu{turn}", "content": "r" * size}
            store.append_message(conversation.id, turn, "tool_result", [result])
        budget = budgets[turn % len(budgets)]
        for _ in range(2):  # the second call packs what the first sent
            window = kept.window(conversation.id, current_turn=turn, budget_chars=budget)
            fresh = HistoryCache(store, turn_context).window(
                conversation.id, current_turn=turn, budget_chars=budget
            )
            assert window.history.json(encode_json) == fresh.history.json(encode_json)
            assert window.messages == fresh.messages
            assert (window.earlier_chars, window.current_chars) == (
                fresh.earlier_chars,
                fresh.current_chars,
            )
        say(store, conversation, turn, "a" * (size // 2 + 1), kind="assistant")


def test_a_packed_turn_costs_its_text_and_a_few_bytes(store):
    cache = HistoryCache(store, turn_context)
    conversation = store.create_conversation("c")
    for turn in range(1, 102):
        say(store, conversation, turn, f"question {turn}")
        say(store, conversation, turn, f"answer {turn}", kind="assistant")
    for _ in range(2):
        cache.window(conversation.id, current_turn=101, budget_chars=10**6).history.json(
            encode_json
        )
    kept = cache._kept[conversation.id]
    assert len(kept.packed) == 100 and list(kept.turns) == [101]
    assert kept.packed.weight() == len(kept.packed.text) + 100 * PACKED_TURN_BYTES
