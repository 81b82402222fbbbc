"""The words smarthole says to the model: system prompts, and the title and summary requests."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..config import AgentSettings
from ..db.pending import PendingQuestion
from ..db.records import Conversation, StoredMessage

UNTITLED = "Untitled conversation"
UNTITLED_INTERRUPTED = "Untitled (interrupted)"
MAX_TITLE_WORDS = 8
TRANSCRIPT_LIMIT = 20_000


def system_prompt(
    agent: AgentSettings,
    *,
    now: datetime,
    conversation: Conversation,
    turn: int,
    recent: Iterable[Conversation] = (),
    pending: PendingQuestion | None = None,
    extra: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """System blocks: a stable one (cacheable) first, then what changes from turn to turn."""
    stable = f"{agent.persona.strip()}\n\n## Guidelines\n{agent.instructions.strip()}"
    local = now.astimezone()
    sections = [
        "## Context\n"
        f"The current time is {local:%A, %d %B %Y, %H:%M} ({local:%Z}, UTC{local:%z}).\n"
        f"This is turn {turn} of conversation {conversation.id} on channel "
        f"'{conversation.channel}'."
    ]
    recent_text = recent_conversations_section(recent)
    if recent_text:
        sections.append(recent_text)
    if pending is not None:
        sections.append(pending_context(pending))
    sections.extend(text.strip() for text in extra if text and text.strip())
    return [
        {"type": "text", "text": stable, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "\n\n".join(sections)},
    ]


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
        line = line.strip().strip("#*").strip()
        if line.lower().startswith("title:"):
            line = line[len("title:") :].strip()
        line = line.strip("\"'`\u201c\u201d\u2018\u2019 ").rstrip(".")
        if line:
            return " ".join(line.split()[:MAX_TITLE_WORDS])
    return None


def clean_summary(answer: str) -> str | None:
    text = answer.strip()
    if text.lower().startswith("summary:"):
        text = text[len("summary:") :].strip()
    return text or None
