"""The values the store hands out: conversations, turns and stored messages."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, TypeVar

from ..attachments.kinds import Attachment
from ..errors import LookupFailed
from ..formats import compact_json, from_micros, iso, parse_time
from .states import TitleState, TurnStatus

T = TypeVar("T")


def unique_match(
    wanted: str, exact: T | None, candidates: list[T], noun: str, key: Callable[[T], str]
) -> T:
    """``exact`` if there is one, else the only prefix match; ``LookupFailed`` otherwise."""
    if exact is not None:
        return exact
    if not candidates:
        raise LookupFailed(f"no {noun} matches {wanted!r}")
    if len(candidates) > 1:
        listed = ", ".join(key(c) for c in candidates[:5])
        raise LookupFailed(f"{wanted!r} is ambiguous: it matches {noun}s {listed}")
    return candidates[0]


def like_prefix(prefix: str) -> str:
    """A LIKE pattern (with ``ESCAPE '\\'``) matching the strings that start with ``prefix``."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def from_row(cls: type[T], row: sqlite3.Row, *, times: tuple[str, ...] = (), **converted: Any) -> T:
    """``cls`` built from ``row``: each field from the column of its name unless given.

    ``times`` names the columns holding ISO times (NULL stays None). The row mappers name only
    what needs converting, so a new column is one field, not one more line in every mapper.
    """
    values = {}
    for name in (f.name for f in fields(cls)):  # type: ignore[arg-type]
        if name in converted:
            values[name] = converted[name]
        elif name in times:
            values[name] = parse_time(row[name]) if row[name] else None
        else:
            values[name] = row[name]
    return cls(**values)


@dataclass(frozen=True)
class Conversation:
    """A conversation as stored; ``turns`` counts its user messages."""

    id: str
    channel: str
    title: str | None
    title_pinned: bool
    summary: str | None
    turns: int
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    end_reason: str | None
    title_state: TitleState = TitleState.NONE
    summary_state: TitleState = TitleState.NONE

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Conversation:
        return from_row(
            cls,
            row,
            times=("created_at", "updated_at", "ended_at"),
            title_pinned=bool(row["title_pinned"]),
            title_state=TitleState(row["title_state"]),
            summary_state=TitleState(row["summary_state"]),
        )


@dataclass(frozen=True)
class Turn:
    conversation_id: str
    number: int
    message_id: str
    status: TurnStatus
    started_at: datetime
    finished_at: datetime | None
    error: str | None
    note: str | None
    end_requested: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Turn:
        finished = row["finished_at"]
        return from_row(
            cls,
            row,
            status=TurnStatus(row["status"]),
            started_at=from_micros(row["started_at"]),
            finished_at=None if finished is None else from_micros(finished),
        )


@dataclass(frozen=True)
class StoredMessage:
    """One stored conversation message.

    ``kind`` is ``user``, ``assistant`` or ``tool_result`` (these form the Messages API
    history), or ``agent_message`` (a ``send_message`` text), ``error`` or ``note`` (transcript
    only). ``content`` is a list of Messages API content blocks.
    """

    id: int
    conversation_id: str
    turn: int
    role: str
    kind: str
    content: list[dict[str, Any]]
    created_at: datetime
    tool_use_id: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    @classmethod
    def from_row(cls, row: sqlite3.Row, conversation_id: str) -> StoredMessage:
        """From a ``message_rows`` row (see :data:`KINDS` and :func:`stored_text`)."""
        kind = KINDS[row["kind"]]
        text = row["text"]
        return from_row(
            cls,
            row,
            conversation_id=conversation_id,
            role=ROLES[kind],
            kind=kind,
            content=json.loads(row["content"]) if text is None else text_content(text),
            created_at=from_micros(row["created_at"]),
        )


# The kinds of stored message, by the code ``message_rows.kind`` keeps; append only. Each kind
# has one role, so the role is not stored.
KINDS = ("user", "assistant", "tool_result", "agent_message", "question", "note", "error")
KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}
ROLES = {kind: "user" if kind in ("user", "tool_result") else "assistant" for kind in KINDS}
USER, ASSISTANT, TOOL_RESULT = (KIND_CODES[k] for k in ("user", "assistant", "tool_result"))

# The integer key a conversation has in the message and turn rows, from its id (one parameter).
CONVERSATION_KEY = "SELECT key FROM conversations WHERE id = ?"


def stored_text(content: list[dict[str, Any]]) -> str | None:
    """The text of a content that is one text block and nothing else, else None.

    Such a content (most messages) is stored as its text alone, not as JSON;
    :func:`text_content` makes the same list back.
    """
    if len(content) != 1:
        return None
    block = content[0]
    # The keys in this order only: the order JSON would have kept, and the API is sent.
    if list(block) == ["type", "text"] and block["type"] == "text":
        text = block["text"]
        return text if isinstance(text, str) else None
    return None


def text_content(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


@dataclass(frozen=True)
class ApprovalAnswer:
    """An inbox file's answer to an approval: front matter ``approve`` or ``deny``."""

    decision: str  # "approve" or "deny"
    approval: str  # the approval's id
    args_hash: str | None = None  # must match the call's when given
    always: bool = False  # approve this tool for the rest of the conversation


@dataclass(frozen=True)
class Message:
    """One message from the inbox.

    ``channel`` is None when the file did not name one; the daemon then uses the channel of the
    targeted conversation, or ``"default"``. ``timestamp`` is the file's own time if it gave
    one, else its modification time; messages of a channel are processed in ``sort_key`` order.
    """

    id: str
    text: str
    source_name: str
    timestamp: datetime
    content_hash: str
    channel: str | None = None
    conversation: str | None = None
    new_conversation: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    id_derived: bool = False
    agents: tuple[str, ...] | None = None  # a team task: these agents work on the text
    max_turns: int | None = None
    answer: ApprovalAnswer | None = None  # an approval's answer: never a turn of its own
    attachments: tuple[Attachment, ...] = ()  # stored as blobs before this is recorded

    @property
    def sort_key(self) -> tuple[str, str]:
        return (iso(self.timestamp), self.source_name)

    def user_content(self) -> list[dict[str, Any]]:
        """The stored user message's blocks: the attachments (images first, as the API
        advises), then the text."""
        blocks = [a.to_block() for a in self.attachments]
        if self.text.strip() or not blocks:
            blocks.append(text_content(self.text)[0])
        return blocks

    def with_channel(self, channel: str) -> Message:
        return replace(self, channel=channel)

    def to_json(self) -> str:
        """The form stored in the ledger, so a resumed message is never parsed again."""
        data: dict[str, Any] = {
            "id": self.id,
            "text": self.text,
            "source_name": self.source_name,
            "timestamp": iso(self.timestamp),
            "content_hash": self.content_hash,
            "channel": self.channel,
            "conversation": self.conversation,
            "new_conversation": self.new_conversation,
            "metadata": self.metadata,
            "id_derived": self.id_derived,
        }
        if self.agents is not None:
            data.update(agents=list(self.agents), max_turns=self.max_turns)
        if self.attachments:
            data["attachments"] = [a.to_dict() for a in self.attachments]
        return compact_json(data)

    @classmethod
    def from_json(cls, text: str) -> Message:
        data = json.loads(text)
        data["timestamp"] = parse_time(data["timestamp"])
        if data.get("agents") is not None:
            data["agents"] = tuple(data["agents"])
        if data.get("attachments"):
            data["attachments"] = tuple(Attachment.from_dict(a) for a in data["attachments"])
        return cls(**data)
