"""Conversation titles and summaries, written by a model call with no tools.

A title is due after a conversation's first completed turn, a summary when it ends. Both are
marked ``pending`` in the store first, so a crash or an outage only delays them: whoever runs
next (the channel's next turn, or the daemon's periodic sweep) writes them. A call that fails
for a while (a 429, a 5xx, a broken stream) leaves them pending and is retried on a later
sweep, not before a backoff; a call that cannot succeed (a 400, a bad key) falls back to
"Untitled conversation" and to no summary for good. A title the user set is pinned and never
replaced.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..backoff import Backoff
from ..db.events import about
from ..db.states import TitleState
from ..errors import ModelError
from .budget import CapReached
from .prompts import (
    SUMMARY_REQUEST,
    SUMMARY_SYSTEM,
    TITLE_REQUEST,
    TITLE_SYSTEM,
    UNTITLED,
    clean_summary,
    clean_title,
    dialogue_text,
)

if TYPE_CHECKING:
    from ..config import TitleSettings
    from ..db.events import EventLog
    from ..db.records import Conversation
    from ..db.store import Store
    from ..db.usage import UsageLog
    from .budget import CallMeter
    from .client import ModelClient

logger = logging.getLogger(__name__)

TITLE_MAX_TOKENS = 60
SUMMARY_MAX_TOKENS = 400


class Titler:
    """Writes the titles and summaries that are due."""

    def __init__(
        self,
        store: Store,
        events: EventLog,
        client: ModelClient | None,
        settings: TitleSettings,
        usage: UsageLog,
        meters: Callable[[Conversation, str], CallMeter] | None = None,
    ) -> None:
        self.store = store
        self.meters = meters  # each call's reservation under the day and month caps
        self.events = events
        self.usage = usage
        self.client = client if settings.enabled else None
        self.settings = settings
        self._lock = threading.Lock()
        self._writing: set[tuple[str, str]] = set()
        self._backoff = _Backoff()
        self._none_due_at: int | None = None  # store.due_marks() when a sweep found none due

    @property
    def enabled(self) -> bool:
        return self.client is not None

    def title_due(self, conversation_id: str) -> None:
        """Mark a conversation as needing a title, unless it has one."""
        if not self.enabled:
            return
        self.store.mark_title_due(conversation_id)

    def write_title(self, conversation: Conversation) -> None:
        if (
            not self.enabled
            or conversation.title_pinned
            or conversation.title_state not in (TitleState.PENDING, TitleState.NONE)
        ):
            return
        try:
            title = self._ask(
                conversation, TITLE_SYSTEM, TITLE_REQUEST, TITLE_MAX_TOKENS, clean_title
            )
        except _TryLater:
            return
        state = TitleState.DONE if title else TitleState.FAILED
        if self.store.set_title(conversation.id, title or UNTITLED, state=state):
            self.events.emit(
                "title_generated",
                **about(conversation),
                turn=conversation.turns,
                title=title or UNTITLED,
                fallback=title is None,
            )

    def write_summary(self, conversation: Conversation) -> None:
        if conversation.summary_state is not TitleState.PENDING:
            return
        if not self.enabled:
            self.store.set_summary(conversation.id, None, state=TitleState.DISABLED)
            return
        try:
            summary = self._ask(
                conversation, SUMMARY_SYSTEM, SUMMARY_REQUEST, SUMMARY_MAX_TOKENS, clean_summary
            )
        except _TryLater:
            return
        state = TitleState.DONE if summary else TitleState.FAILED
        self.store.set_summary(conversation.id, summary, state=state)
        self.events.emit(
            "summary_generated",
            **about(conversation),
            turn=conversation.turns,
            summary=summary,
        )

    def sweep(self, *, channel: str | None = None, limit: int = 20) -> int:
        """Write every due title and summary (of one channel, if given); returns how many.

        Workers and the housekeeper may sweep at once; each conversation's title or summary
        is written by one of them only. A worker's sweep (of its channel, after each turn)
        skips the database while nothing can have become due since a sweep found none; the
        housekeeper's always looks, so what other processes mark due is found on its pass.
        """
        marks = self.store.due_marks()
        if channel is not None and self._none_due_at == marks:
            return 0
        done = 0
        due = False
        for what, write in (("summary", self.write_summary), ("title", self.write_title)):
            needing = self.store.conversations_needing(what, limit)
            due = due or bool(needing)
            for conversation in needing:
                if channel is not None and conversation.channel != channel:
                    continue
                key = (what, conversation.id)
                with self._lock:
                    if key in self._writing or self._backoff.waiting(key):
                        continue
                    self._writing.add(key)
                try:
                    fresh = self.store.conversation(conversation.id)
                    if fresh is not None:
                        write(fresh)
                        done += 1
                finally:
                    with self._lock:
                        self._writing.discard(key)
        self._none_due_at = None if due else marks
        return done

    def _ask(
        self,
        conversation: Conversation,
        system: str,
        request: str,
        max_tokens: int,
        clean: Callable[[str], str | None],
    ) -> str | None:
        """The cleaned answer, or None when it cannot be had; ``_TryLater`` after a transient
        failure (the key is then backed off)."""
        assert self.client is not None
        text = dialogue_text(self.store.messages(conversation.id))
        if not text.strip():
            return None
        what = "title" if max_tokens == TITLE_MAX_TOKENS else "summary"
        key = (what, conversation.id)
        meter = None if self.meters is None else self.meters(conversation, what)
        try:
            reply = self.client.complete(
                system=system,
                messages=[{"role": "user", "content": request.format(transcript=text)}],
                model=self.settings.model,
                max_tokens=max_tokens,
                before_send=None if meter is None else meter.reserve,
            )
        except CapReached as reached:  # a title is not worth asking the person about
            delay = self._backoff.failed(key, None)
            logger.info("no %s for conversation %s now: %s", what, conversation.id, reached)
            raise _TryLater from reached
        except ModelError as exc:
            if meter is not None:
                meter.failed(exc)
            if exc.retryable:
                delay = self._backoff.failed(key, exc.retry_after)
                logger.warning(
                    "could not write a %s for conversation %s: %s; will try again in %.0fs",
                    what,
                    conversation.id,
                    exc,
                    delay,
                )
                raise _TryLater from exc
            logger.warning(
                "could not write a %s for conversation %s: %s", what, conversation.id, exc
            )
            return None
        self._backoff.succeeded(key)
        # Its own commit: a title or summary has no stored reply to share a transaction with.
        with self.store.transaction() as db:
            usage_id = self.usage.record(
                reply.usage,
                purpose=what,
                model=reply.model,
                conversation_id=conversation.id,
                turn=conversation.turns,
                db=db,
            )
            if meter is not None:
                meter.settle(reply, usage_id, db)
        return clean(reply.text)


class _TryLater(Exception):
    """A title or summary call failed for now; it stays pending for a later sweep."""


class _Backoff:
    """When each pending title or summary may be tried again after a transient failure.

    Kept in memory: a restart tries everything pending at once, which is what a restart is for.
    """

    WAIT = Backoff(base=30.0, cap=3600.0)

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._failures: dict[tuple[str, str], int] = {}
        self._not_before: dict[tuple[str, str], float] = {}

    def waiting(self, key: tuple[str, str]) -> bool:
        return self._clock() < self._not_before.get(key, 0.0)

    def failed(self, key: tuple[str, str], retry_after: float | None) -> float:
        """Record a failure; returns the seconds until the next try."""
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        delay = self.WAIT.delay(failures, retry_after=retry_after)
        self._not_before[key] = self._clock() + delay
        return delay

    def succeeded(self, key: tuple[str, str]) -> None:
        self._failures.pop(key, None)
        self._not_before.pop(key, None)
