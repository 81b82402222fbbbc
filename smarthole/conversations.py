"""Conversations as people see them: listing with status, export, rename, new, prune.

The CLI calls these; they read and write the store and emit events, and never print.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .agent.prompts import UNTITLED, UNTITLED_INTERRUPTED
from .attachments import Attachment, attachments_in
from .db.events import about
from .db.forking import Fork
from .db.records import Conversation, StoredMessage, unique_match
from .db.states import ConversationStatus, MessageStatus, OutboxKind, TitleState, TurnStatus
from .errors import DocumentError, UsageError
from .formats import has_control_characters, visible, without_control_characters

if TYPE_CHECKING:
    from .db.events import EventLog
    from .db.ledger import Ledger
    from .db.outbox import OutboxRecord
    from .db.pending import PendingQuestions
    from .db.store import Store

HIDE_ENDED_AFTER = timedelta(days=30)
CONTEXT_ROLES = ("human", "entry_agent")
SAID = (OutboxKind.MESSAGE, OutboxKind.QUESTION, OutboxKind.RESPONSE)  # to the person, in turn
IMPORTED = "imported"  # the note of an imported turn, and the end reason of its conversation
MAX_IMPORTED_TITLE = 200  # characters; a generated title has at most 8 words


@dataclass(frozen=True)
class ConversationView:
    """A conversation with its derived status, as listed. ``current``: its channel's current
    conversation, the one a new message on the channel goes to (see ``Conversations.current``)."""

    conversation: Conversation
    status: ConversationStatus
    waiting_for_reply: bool
    deferred_until: datetime | None = None
    current: bool = False
    fork: Fork | None = None  # where it was forked from, if it is a fork (or a replay)

    @property
    def title(self) -> str:
        return self.conversation.title or UNTITLED

    def as_dict(self) -> dict[str, Any]:
        c = self.conversation
        data: dict[str, Any] = {
            "id": c.id,
            "title": self.title,
            "channel": c.channel,
            "status": self.status,
            "turns": c.turns,
            "created_at": c.created_at.isoformat(),
            "updated_at": c.updated_at.isoformat(),
            "waiting_for_reply": self.waiting_for_reply,
            "current": self.current,
            "ended_at": c.ended_at.isoformat() if c.ended_at else None,
        }
        data["forked_from"] = self.fork.as_dict() if self.fork else None
        data["replay_of"] = self.fork.replay_of if self.fork else None
        if self.deferred_until is not None:
            data["deferred_until"] = self.deferred_until.isoformat()
        if c.summary:
            data["summary"] = c.summary
        return data


class Conversations:
    """Read and manage the conversations of a store."""

    def __init__(
        self, store: Store, events: EventLog, ledger: Ledger, pending: PendingQuestions
    ) -> None:
        self.store = store
        self.events = events
        self.ledger = ledger
        self.pending = pending

    def get(self, wanted: str) -> Conversation:
        """A conversation by full id or unique prefix; ``LookupFailed`` otherwise."""
        return resolve_conversation(self.store, wanted)

    def recent(
        self,
        *,
        channel: str | None = None,
        include_all: bool = False,
        limit: int | None = None,
        now: datetime,
    ) -> list[ConversationView]:
        views = []
        waiting = {q.conversation_id for q in self.pending.all()}
        deferred = self._deferred()
        forks = self.store.forks_of()
        current: dict[str, str | None] = {}  # channel -> its current conversation's id
        for conversation in self.store.recent_conversations(channel=channel):
            if (
                not include_all
                and conversation.ended_at
                and now - conversation.ended_at > HIDE_ENDED_AFTER
            ):
                continue
            if conversation.channel not in current:
                found = self.current(conversation.channel)
                current[conversation.channel] = found.id if found else None
            views.append(
                self.view(
                    conversation,
                    waiting=conversation.id in waiting,
                    deferred=deferred,
                    current=current[conversation.channel] == conversation.id,
                    fork=forks.get(conversation.id),
                )
            )
            if limit is not None and len(views) >= limit:
                break
        return views

    def _deferred(self) -> dict[str, datetime | None]:
        return {
            e.conversation_id: e.next_attempt_at
            for e in self.ledger.by_status(MessageStatus.DEFERRED)
            if e.conversation_id
        }

    def current(self, channel: str) -> Conversation | None:
        """The channel's current conversation: the one a new message on it goes to (the
        processor's own pick, unless that message names a conversation or starts a new one)."""
        return self.store.active_conversation(channel)

    def view(
        self,
        conversation: Conversation,
        *,
        waiting: bool | None = None,
        deferred: dict[str, datetime | None] | None = None,
        current: bool | None = None,
        fork: Fork | None = None,
    ) -> ConversationView:
        if waiting is None:
            waiting = self.pending.get(conversation.id) is not None
        if current is None:
            found = None if conversation.ended else self.current(conversation.channel)
            current = found is not None and found.id == conversation.id
        deferred_until = (self._deferred() if deferred is None else deferred).get(conversation.id)
        last = self.store.turn(conversation.id, conversation.turns)
        if conversation.ended:
            status = ConversationStatus.ENDED
        elif deferred_until is not None:
            status = ConversationStatus.DEFERRED
        elif last is not None and last.status is TurnStatus.INTERRUPTED:
            status = ConversationStatus.INTERRUPTED
        elif waiting:
            status = ConversationStatus.WAITING
        else:
            status = ConversationStatus.ACTIVE if current else ConversationStatus.PAUSED
        if fork is None:
            fork = self.store.fork_of(conversation.id)
        return ConversationView(conversation, status, waiting, deferred_until, current, fork)

    def rename(self, wanted: str, title: str) -> Conversation:
        conversation = self.get(wanted)
        if has_control_characters(title):
            raise UsageError(
                f'the title "{visible(title)}" holds a control character; titles are plain text'
            )
        title = " ".join(title.split())
        if not title:
            raise UsageError("the new title is empty")
        self.store.set_title(conversation.id, title, pinned=True)
        self.events.emit(
            "conversation_renamed",
            **about(conversation),
            title=title,
        )
        return self.store.conversation(conversation.id) or conversation

    def reopen(self, conversation: Conversation) -> Conversation:
        """Resuming an ended conversation reopens it."""
        if conversation.ended:
            self.store.reopen_conversation(conversation.id)
            self.events.emit(
                "conversation_resumed",
                **about(conversation),
                reopened=True,
            )
        return self.store.conversation(conversation.id) or conversation

    def start(self, channel: str, message_id: str) -> Conversation:
        """A new conversation on ``channel``, started by inbox message ``message_id``."""
        conversation = self.store.create_conversation(channel)
        self.events.emit("conversation_started", **about(conversation), message_id=message_id)
        return conversation

    def end(self, conversation: Conversation, reason: str) -> bool:
        """End a conversation (its summary becomes due). False if it had already ended."""
        if not self.store.end_conversation(conversation.id, reason):
            return False
        self.events.emit("conversation_ended", **about(conversation), reason=reason)
        return True

    def end_active(self, channel: str, *, reason: str = "new") -> Conversation | None:
        """End the channel's active conversation; returns it, or None if there was none."""
        active = self.store.active_conversation(channel)
        if active is None:
            return None
        self.end(active, reason)
        return self.store.conversation(active.id)

    def mark_interrupted_untitled(self, conversation_id: str) -> None:
        """A chat that ends before its conversation got a title gets the interrupted title."""
        self.store.set_title_if_untitled(conversation_id, UNTITLED_INTERRUPTED)

    def prunable(self, max_retained: int) -> list[Conversation]:
        """Ended conversations beyond the newest ``max_retained``, oldest first."""
        ended = self.store.recent_conversations(ended_only=True)
        return list(reversed(ended[max_retained:]))

    def prune(self, max_retained: int) -> list[Conversation]:
        removed = self.prunable(max_retained)
        for conversation in removed:
            self.store.delete_conversation(conversation.id)
        return removed

    def export(
        self, conversation: Conversation, outbox: OutboxRecord, *, entry_agent: str
    ) -> dict[str, Any]:
        """What the person said and the entry agent's user-facing replies; no tool internals.

        The replies are the turn's outbox items (messages, questions, the response); a turn
        with none (an imported one) gives its stored reply text instead.
        """
        said: dict[int, list[str]] = {}
        for item in outbox.items_for_conversation(conversation.id):
            if item.kind in SAID and item.text.strip():
                said.setdefault(item.turn or 0, []).append(item.text)
        imported = {t.number for t in self.store.turns(conversation.id) if t.note == IMPORTED}
        turns: list[dict[str, Any]] = []
        for number, messages in self._by_turn(conversation.id).items():
            for message in messages:
                if message.kind == "user":
                    turn = {"turn": number, "role": "human", "content": message.text}
                    attached = attachments_in(message.content)
                    if attached:  # named by hash; the bytes are blobs (export writes them)
                        turn["attachments"] = [a.to_dict() for a in attached]
                    turns.append(turn)
            replies = said.pop(number, None)
            if replies is None:
                replies = [m.text for m in messages if m.kind == "assistant" and m.text.strip()]
                if number not in imported:  # each imported reply was said; elsewhere only
                    replies = replies[-1:]  # the final one, not the words around tool calls
            turns.extend({"turn": number, "role": "entry_agent", "content": r} for r in replies)
        return {
            "conversation_id": conversation.id,
            "channel": conversation.channel,
            "title": conversation.title or UNTITLED,
            "summary": conversation.summary,
            "entry_agent": entry_agent,
            "turns": turns,
        }

    def _by_turn(self, conversation_id: str) -> dict[int, list[StoredMessage]]:
        grouped: dict[int, list[StoredMessage]] = {}
        for message in self.store.messages(conversation_id):
            grouped.setdefault(message.turn, []).append(message)
        return grouped

    def import_context(self, data: Any, *, channel: str) -> Conversation:
        """A new (ended) conversation whose history is a context object's turns.

        Each human turn starts a turn of the conversation; entry agent turns are its replies.
        ``DocumentError`` names what is wrong with an object that is not of that shape.
        """
        turns = parse_context(data)
        conversation = self.store.create_conversation(channel)
        with self.store.transaction() as db:
            number = 0
            for role, content, attached in turns:
                if role == "human" or number == 0:
                    number = self.store.start_turn(
                        db, conversation.id, f"import:{conversation.id}:{number + 1}"
                    )
                    self.store.complete_turn(db, conversation.id, number, note=IMPORTED)
                kind = "user" if role == "human" else "assistant"
                blocks = [a.to_block() for a in attached]
                if content.strip() or not blocks:
                    blocks.append({"type": "text", "text": content})
                self.store.append_message(conversation.id, number, kind, blocks, db=db)
        self.end(conversation, IMPORTED)
        self._keep_title_and_summary(conversation.id, data)
        return self.store.conversation(conversation.id) or conversation

    def _keep_title_and_summary(self, conversation_id: str, data: dict[str, Any]) -> None:
        """An export's title and summary come back with it (shown as plain text, bounded)."""
        title, summary = data.get("title"), data.get("summary")
        if isinstance(title, str) and title.strip() and title != UNTITLED:
            cleaned = " ".join(without_control_characters(title).split())[:MAX_IMPORTED_TITLE]
            self.store.set_title(conversation_id, cleaned, state=TitleState.DONE)
        if isinstance(summary, str) and summary.strip():
            lines = (without_control_characters(line) for line in summary.splitlines())
            summary_text = "\n".join(lines).strip()
            self.store.set_summary(conversation_id, summary_text, state=TitleState.DONE)


def context_of(export: dict[str, Any]) -> dict[str, Any]:
    """Seed 001's context JSON from an export: the entry agent and the turns, nothing else."""
    turns = [
        {"role": t["role"], "content": t["content"]}
        | ({"attachments": t["attachments"]} if t.get("attachments") else {})
        for t in export["turns"]
    ]
    return {"entry_agent": export["entry_agent"], "turns": turns}


def parse_context(data: Any) -> list[tuple[str, str, list[Attachment]]]:
    """The ``(role, content, attachments)`` of each turn of a context object;
    ``DocumentError`` if it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise DocumentError('not a conversation context: it needs a "turns" list')
    pairs = []
    for index, turn in enumerate(data["turns"], 1):
        if not isinstance(turn, dict) or turn.get("role") not in CONTEXT_ROLES:
            role = turn.get("role") if isinstance(turn, dict) else turn
            shown = reprlib.repr(role)  # bounded: the document may hold anything
            raise DocumentError(f"turn {index}: unknown role {shown} (human or entry_agent)")
        attached = _attachments(index, turn)
        content = turn.get("content")
        if not isinstance(content, str) or not (content.strip() or attached):
            raise DocumentError(f"turn {index}: content must be non-empty text")
        pairs.append((turn["role"], content, attached))
    if not pairs:
        raise DocumentError("not a conversation context: its turns list is empty")
    return pairs


def _attachments(index: int, turn: dict[str, Any]) -> list[Attachment]:
    listed = turn.get("attachments", [])
    if not isinstance(listed, list) or (listed and turn.get("role") != "human"):
        raise DocumentError(f"turn {index}: attachments must be a list, in a human turn")
    try:
        return [Attachment.from_dict(a) for a in listed if isinstance(a, dict) or _bad(a)]
    except ValueError as exc:
        raise DocumentError(f"turn {index}: {exc}") from exc


def _bad(value: Any) -> bool:
    raise ValueError(f"attachment {reprlib.repr(value)} is not an object")


def resolve_conversation(store: Store, wanted: str) -> Conversation:
    """A conversation by full id or unique prefix; ``LookupFailed`` otherwise."""
    return unique_match(
        wanted,
        store.conversation(wanted),
        store.conversations_with_prefix(wanted),
        "conversation",
        lambda c: c.id,
    )
