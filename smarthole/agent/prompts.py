"""The words smarthole says to the model: system prompts, and the title and summary requests."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from typing import Any

from ..config import AgentSettings
from ..db.pending import PendingQuestion
from ..db.records import Conversation, StoredMessage
from ..formats import without_control_characters

UNTITLED = "Untitled conversation"
UNTITLED_INTERRUPTED = "Untitled (interrupted)"
MAX_TITLE_WORDS = 8
TRANSCRIPT_LIMIT = 20_000
EPHEMERAL = {"type": "ephemeral"}  # a prompt cache breakpoint
CONTEXT_OPEN, CONTEXT_CLOSE = "<context>", "</context>"


def system_prompt(
    agent: AgentSettings,
    *,
    conversation: Conversation,
    recent: Iterable[Conversation] = (),
    pending: PendingQuestion | None = None,
    extra: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """System blocks, the most stable first, so the prompt cache can reuse the longest prefix.

    1. the agent's persona and guidelines: the same for every conversation;
    2. this conversation, recent ones and plugins' additions: the same turn after turn;
    3. the pending question, only on the turn that answers it (the product's contract keeps
       it in the system prompt; last, so it changes nothing before it).

    What changes every turn (the time, the turn number) is not here: it starts each user
    message (:func:`turn_context`), so a turn's request is the previous one plus what is new.
    """
    stable = f"{agent.persona.strip()}\n\n## Guidelines\n{agent.instructions.strip()}"
    sections = [
        "## Context\n"
        f"This is conversation {conversation.id} on channel '{conversation.channel}'. Each "
        f"user message starts with {CONTEXT_OPEN}...{CONTEXT_CLOSE}: its turn number and "
        "when it was sent; the newest one's time is the current time."
    ]
    recent_text = recent_conversations_section(recent)
    if recent_text:
        sections.append(recent_text)
    sections.extend(text.strip() for text in extra if text and text.strip())
    blocks = [
        {"type": "text", "text": stable, "cache_control": EPHEMERAL},
        {"type": "text", "text": "\n\n".join(sections), "cache_control": EPHEMERAL},
    ]
    if pending is not None:
        blocks.append({"type": "text", "text": pending_context(pending)})
    return blocks


def turn_context(turn: int, sent_at: int) -> dict[str, Any]:
    """The block a user message starts with: its turn and when it was sent (the turn's start),
    given in microseconds since 1970 (:func:`~smarthole.formats.micros`, as stored).

    Made from the stored message, so every request that carries it (a retry, a resumed turn,
    the next turns' history) carries the same bytes.
    """
    when = _local_minute(sent_at // 60_000_000)
    return {"type": "text", "text": f"{CONTEXT_OPEN}Turn {turn}, sent {when}.{CONTEXT_CLOSE}"}


def with_note(context: str, note: str) -> str:
    """A turn's context text with ``note`` said inside it (a fork's first turn says what the
    original did after the fork point)."""
    if context.endswith(CONTEXT_CLOSE):
        return f"{context[: -len(CONTEXT_CLOSE)]} {note}{CONTEXT_CLOSE}"
    return f"{context} {note}"


def after_fork_note(turn: int, calls: list[str]) -> str:
    """What a fork's first turn is told about the original after turn ``turn``."""
    return (
        f"This conversation is a fork of another after its turn {turn}. After this point the "
        f"original conversation also ran: {', '.join(calls)}; so the world may not be as it was "
        f"at turn {turn}."
    )


@functools.lru_cache(maxsize=256)
def _local_minute(minute: int) -> str:
    """A UTC minute (since 1970) as local time, to the minute: the same for each of its
    seconds, as time zones' offsets and changes are whole minutes. A reload formats thousands
    of these, turns of one minute alike; time.localtime and time.strftime cost a fifth of
    datetime.astimezone and format."""
    return time.strftime("%A, %d %B %Y, %H:%M (%Z, UTC%z)", time.localtime(minute * 60))


def recent_conversations_section(conversations: Iterable[Conversation]) -> str:
    entries = []
    for conversation in conversations:
        ended = conversation.ended_at.astimezone() if conversation.ended_at else None
        when = f" (ended {ended:%d %b %Y %H:%M})" if ended else ""
        entry = f"### {conversation.title or UNTITLED}{when}"
        if conversation.summary:
            entry += f"\n{conversation.summary.strip()}"
        entries.append(entry)
    if not entries:
        return ""
    return "## Recent conversations\n" + "\n\n".join(entries)


def pending_context(pending: PendingQuestion) -> str:
    return (
        "## Pending Context\n"
        "You previously asked the user a question and are awaiting their reply.\n"
        f'Your question was: "{pending.question}"\n'
        "The user's message in this turn is their reply to that question. Continue the "
        "conversation accordingly."
    )


def dialogue_text(messages: Iterable[StoredMessage], limit: int = TRANSCRIPT_LIMIT) -> str:
    """What the person and the agent said, as plain text for the model (titles, summaries,
    get_conversation); `smarthole show` renders conversations for people."""
    lines = []
    for message in messages:
        if message.kind == "user":
            lines.append(f"User: {message.text.strip()}")
        elif message.kind in ("agent_message", "question"):
            lines.append(f"Assistant: {message.text.strip()}")
        elif message.kind == "assistant" and message.text.strip():
            tools = [b["name"] for b in message.tool_uses]
            suffix = f" (tools: {', '.join(tools)})" if tools else ""
            lines.append(f"Assistant: {message.text.strip()}{suffix}")
        elif message.kind == "assistant" and message.tool_uses:
            lines.append(f"Assistant used tools: {', '.join(b['name'] for b in message.tool_uses)}")
    text = "\n\n".join(lines)
    return text[-limit:]


TITLE_SYSTEM = "You write short, specific titles for conversations."
TITLE_REQUEST = (
    "Here is a conversation:\n\n<conversation>\n{transcript}\n</conversation>\n\n"
    f"Write a title for it of at most {MAX_TITLE_WORDS} words. Answer with the title alone on "
    "one line: no quotes, no label, no final period."
)
SUMMARY_SYSTEM = "You summarise conversations briefly and concretely."
SUMMARY_REQUEST = (
    "Here is a conversation:\n\n<conversation>\n{transcript}\n</conversation>\n\n"
    "Summarise it in 2-3 sentences: what it was about, what was done and how it ended. Answer "
    "with the summary alone."
)


def clean_title(answer: str) -> str | None:
    """The first line of the model's answer as a title of at most 8 words, or None."""
    for line in answer.strip().splitlines():
        # The model read whatever was dropped into the inbox: a title is shown in terminals
        # and pages, so it keeps no control character (an escape sequence, say).
        line = without_control_characters(line).strip().strip("#*").strip()
        if line.lower().startswith("title:"):
            line = line[len("title:") :].strip()
        line = line.strip("\"'`\u201c\u201d\u2018\u2019 ").rstrip(".")
        if line:
            return " ".join(line.split()[:MAX_TITLE_WORDS])
    return None


def clean_summary(answer: str) -> str | None:
    text = "\n".join(without_control_characters(line) for line in answer.splitlines()).strip()
    if text.lower().startswith("summary:"):
        text = text[len("summary:") :].strip()
    return text or None
