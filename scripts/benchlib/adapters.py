"""ADAPTERS: the only places the benchmark calls smarthole's internal API directly.

Written against commit 892aec5; history building since adapted to the HistoryCache. When the
internals change (history building, the store), change these functions, not the measurements:
each one says what it stands for.
"""

from __future__ import annotations

import random
import string
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from smarthole.agent.history import History, HistoryCache
from smarthole.agent.prompts import turn_context
from smarthole.config import Config
from smarthole.daemon import Daemon
from smarthole.db.events import EventLog
from smarthole.db.search import Search
from smarthole.db.store import Store
from smarthole.db.usage import UsageLog
from smarthole.formats import utc_now
from smarthole.home import Home
from smarthole.pipeline.message import render_message_file


def default_budget_chars() -> int:
    """The history budget a turn uses by default (``TurnRun.budget_chars``: tokens * 4)."""
    return Config().conversation.history_budget_tokens * 4


def open_store(path: Path) -> Store:
    return Store.open(path, clock=utc_now)


def history_cache(store: Store) -> HistoryCache:
    """What the daemon keeps between model calls (``Processor.history``)."""
    return HistoryCache(store, turn_context)


def build_history(
    store: Store,
    conversation_id: str,
    turn: int,
    budget_chars: int,
    cache: HistoryCache | None = None,
) -> History:
    """What a turn does before each model call (``TurnRun.history`` in pipeline/turn.py):
    the budgeted history of the conversation, from the daemon's cache (warm: only rows it
    has not seen are read) or, without one, from nothing (a cold start). Its ``json`` is
    the text the model call sends, its ``messages()`` the API messages."""
    cache = cache or history_cache(store)
    return cache.window(conversation_id, current_turn=turn, budget_chars=budget_chars).history


def fill_conversation(store: Store, texts: list[str]) -> tuple[str, int]:
    """One conversation holding ``texts`` as alternating user / assistant text messages (two
    a turn), written through the store's API in one transaction; returns (id, last turn)."""
    conversation = store.create_conversation("bench")
    number = 0
    with store.transaction() as db:
        for index, text in enumerate(texts):
            role = "user" if index % 2 == 0 else "assistant"
            if role == "user":
                number = store.start_turn(db, conversation.id, f"bench-{index}")
            block = [{"type": "text", "text": text}]
            store.append_message(conversation.id, number, role, block, db=db)
    return conversation.id, number


def fill_conversations(store: Store, texts: list[str], per_conversation: int = 100) -> None:
    """``texts`` as conversations of ``per_conversation`` messages over 7 channels, alternating
    user and assistant (two a turn), written through the store's API in one transaction."""
    with store.transaction() as db:
        conversation, number = None, 0
        for index, text in enumerate(texts):
            if index % per_conversation == 0:
                conversation, number = store.create_conversation(f"channel{index % 7}"), 0
            assert conversation is not None
            if index % 2 == 0:
                number = store.start_turn(db, conversation.id, f"bench-{index}")
            role = "user" if index % 2 == 0 else "assistant"
            store.append_message(
                conversation.id, number, role, [{"type": "text", "text": text}], db=db
            )


def store_reply(
    store: Store, conversation_id: str, number: int, text: str, *, durable: bool
) -> None:
    """One reply stored as the turn recorder stores a model's reply (``record_assistant``):
    the message, its ``message_stored`` event and its usage row in one transaction (durable:
    the commit waits for the disk, as a reply's does; not: only the CPU's share)."""
    with store.transaction(durable=durable) as db:
        stored = store.append_message(
            conversation_id, number, "assistant", [{"type": "text", "text": text}], db=db
        )
        EventLog(store).emit(
            "message_stored",
            conversation=conversation_id,
            channel="store-time",
            turn=number,
            message_id=f"store-time-{conversation_id}",
            db=db,
            role="assistant",
            kind="assistant",
            stored_id=stored.id,
            stop_reason="end_turn",
            usage=USAGE,
        )
        UsageLog(store).record(
            USAGE,
            purpose="turn",
            model="claude-haiku-4-5",
            conversation_id=conversation_id,
            turn=number,
            db=db,
        )


USAGE = {"input_tokens": 1200, "output_tokens": 60, "cache_read_input_tokens": 900}


def without_search_index(store: Store) -> None:
    """Stop indexing in ``store`` (what a store before schema 8 did): the baseline of the
    search rows. The index's triggers go until the store is opened again."""
    for trigger in store.query(
        "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'search_%'"
    ):
        store.write(f"DROP TRIGGER {trigger[0]}")
    store.write("INSERT INTO search_index (search_index) VALUES ('delete-all')")


def search(store: Store, query: str, limit: int = 20) -> int:
    """What ``smarthole search QUERY`` does in the store; how many hits."""
    return len(Search(store).search(query, limit=limit))


def message_file(text: str, *, message_id: str, channel: str) -> bytes:
    """An inbox file as a writer drops it (front matter with id and channel, then the text)."""
    return render_message_file(text, id=message_id, channel=channel)


def random_texts(count: int, length: int, seed: int = 13) -> list[str]:
    """``count`` texts of ``length`` characters: words of random letters (not compressible)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words: list[str] = []
        size = 0
        while size < length:
            word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
            words.append(word)
            size += len(word) + 1
        texts.append(" ".join(words)[:length])
    return texts


def start_daemon_thread(
    home: Home, env: Mapping[str, str], clock: Callable[[], datetime]
) -> Callable[[], None]:
    """The daemon in this process, on a thread, with an injected ``clock`` (as the tests'
    ``run_once`` builds it, but left running); returns the function that stops it."""
    runner = Daemon(home, env=env, clock=clock, handle_signals=False)
    thread = threading.Thread(target=runner.run, name="bench-daemon", daemon=True)
    thread.start()

    def stop() -> None:
        runner.request_stop()
        thread.join(timeout=60)

    return stop
