"""Pending questions: what the agent asked, so the user's next message is read as the answer.

After a turn in which the agent called ``send_message`` with ``is_question=true``, the state is
saved as plugin data of the ``smarthole`` namespace, keyed by conversation id. The next turn of
that conversation sees it as "Pending Context" in its system prompt; it is removed only when
that turn completes, so a failed attempt keeps it. States older than
``[conversation] pending_state_timeout_minutes`` are dropped at start and then by the
daemon's housekeeping, which runs every few seconds.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..formats import iso, parse_time
from .store import Store

logger = logging.getLogger(__name__)

NAMESPACE = "smarthole"


@dataclass(frozen=True)
class PendingQuestion:
    conversation_id: str
    original_message_id: str
    question: str
    tool_calls_completed: int
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "original_message_id": self.original_message_id,
            "question": self.question,
            "tool_calls_completed": self.tool_calls_completed,
            "created_at": iso(self.created_at),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingQuestion:
        return cls(
            conversation_id=str(data["conversation_id"]),
            original_message_id=str(data["original_message_id"]),
            question=str(data["question"]),
            tool_calls_completed=int(data.get("tool_calls_completed", 0)),
            created_at=parse_time(str(data["created_at"])),
        )


class PendingQuestions:
    """The pending questions of every conversation."""

    def __init__(self, store: Store) -> None:
        self.data = store.plugin_data(NAMESPACE)

    def get(self, conversation_id: str) -> PendingQuestion | None:
        raw = self.data.get(conversation_id)
        return self._decode(conversation_id, raw) if raw is not None else None

    def save(self, question: PendingQuestion) -> None:
        self.data.set(question.conversation_id, question.to_dict())

    def clear(self, conversation_id: str) -> None:
        self.data.delete(conversation_id)

    def all(self) -> list[PendingQuestion]:
        found = []
        for key, raw in self.data.items():
            question = self._decode(key, raw)
            if question is not None:
                found.append(question)
        return found

    def expire(self, now: datetime, timeout_minutes: float) -> list[PendingQuestion]:
        """Drop questions older than the timeout; returns what was dropped."""
        limit = timedelta(minutes=timeout_minutes)
        dropped = [q for q in self.all() if now - q.created_at > limit]
        for question in dropped:
            logger.info(
                "forgetting the unanswered question of conversation %s (asked %s)",
                question.conversation_id,
                iso(question.created_at),
            )
            self.clear(question.conversation_id)
        return dropped

    def _decode(self, key: str, raw: Any) -> PendingQuestion | None:
        try:
            return PendingQuestion.from_dict(raw)
        except (KeyError, TypeError, ValueError):
            logger.warning("CORRUPT pending question for conversation %s dropped: %r", key, raw)
            self.clear(key)
            return None
