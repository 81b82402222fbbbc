"""Row 14 (issue 47): a fork of a 10,000-message conversation, beside reading it.

The conversation is written through the store's API (two 200-character text messages a turn,
as row 3's), its turns answered. The fork is ``pipeline.forking.fork`` of all its turns, as
``smarthole fork`` makes it: the one commit that copies the rows, the after-the-fork-point
scan, the channel's current conversation ended. The baseline reads the same conversation
through the store (``Store.messages``: every row, parsed). Goal: at most 2x.

Copying the rows is a twentieth of the work; the rest is the search index (issue 37) taking
the copies in, in the same commit, so a fork is searchable like any conversation. That cost
follows the words: the goal's row uses words of a 2,000-word vocabulary, as language has; a
row beside it uses row 3's random-letter words, every one new to the index (its worst case).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smarthole.conversations import Conversations
from smarthole.db.events import EventLog
from smarthole.db.ledger import Ledger
from smarthole.db.pending import PendingQuestions
from smarthole.pipeline.forking import fork

from .adapters import fill_conversation, open_store, random_texts
from .report import Row

VOCABULARY = 2_000


def worded_texts(count: int, length: int, seed: int = 47) -> list[str]:
    """``count`` texts of ``length`` characters, of words drawn from a fixed vocabulary."""
    rng = random.Random(seed)
    words = [text.split()[0] for text in random_texts(VOCABULARY, 12, seed=seed)]
    texts = []
    for _ in range(count):
        said: list[str] = []
        while sum(len(w) + 1 for w in said) < length:
            said.append(rng.choice(words))
        texts.append(" ".join(said)[:length])
    return texts


def fork_rows(root: Path, messages: int, repeats: int) -> list[Row]:
    worded = _measure(root / "fork-worded", worded_texts(messages, 200), repeats)
    random_words = _measure(root / "fork-random", random_texts(messages, 200), repeats)
    read, whole, middle, turns = worded
    return [
        Row(
            f"fork of a {messages:,}-message conversation (all {turns:,} turns)",
            whole * 1000,
            "ms",
            read * 1000,
            "read it (Store.messages)",
            "<= 2x",
            max_ratio=2.0,
        ),
        Row("fork of it at its middle turn", middle * 1000, "ms", read * 1000, "read it"),
        Row(
            "fork of all turns, random-letter words (the search index's worst case)",
            random_words[1] * 1000,
            "ms",
            random_words[0] * 1000,
            "read it",
        ),
    ]


def _measure(folder: Path, texts: list[str], repeats: int) -> tuple[float, float, float, int]:
    """Seconds to read the conversation, fork all of it, fork half; and its turns."""
    store = open_store(folder / "smarthole.db")
    try:
        conversation, turns = fill_conversation(store, texts)
        with store.transaction() as db:  # answered turns: only those are history to fork
            for number in range(1, turns + 1):
                store.complete_turn(db, conversation, number, note=None)
        events = EventLog(store)
        conversations = Conversations(store, events, Ledger(store), PendingQuestions(store))
        read = _fastest(lambda: store.messages(conversation), repeats)
        whole = _fastest(
            lambda: fork(store, conversations, events, conversation, turn=turns), repeats
        )
        middle = _fastest(
            lambda: fork(store, conversations, events, conversation, turn=turns // 2), repeats
        )
    finally:
        store.close()
    return read, whole, middle, turns


def _fastest(work: Callable[[], Any], repeats: int) -> float:
    """The shortest wall time of ``work`` over ``repeats`` runs, after one unmeasured run."""
    work()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    return min(samples)
