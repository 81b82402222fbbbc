"""What the busy-policy tests share: a burst of messages while a turn runs, and the counts
that say each text reached the model once and each message got one final reply."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from smarthole.testing import FakeMessagesAPI
from tests.helpers import db, read_outbox


def texts(size: int) -> dict[str, str]:
    """Message id -> a text no other contains."""
    return {f"m{i:02d}": f"word-{i:02d}-x" for i in range(size + 1)}


def new_content(fake: FakeMessagesAPI, wanted: dict[str, str]) -> Counter[str]:
    """How many request sequences gave each text to the model as new content: in the last
    user message, counted once per distinct request (a retry of the same request is one)."""
    seen: set[str] = set()
    counts: Counter[str] = Counter()
    for request in fake.requests:
        key = json.dumps(request.messages, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        last = request.last_user_text
        for message_id, text in wanted.items():
            if text in last:
                counts[message_id] += 1
    return counts


def finals_per_message(home: Path, ids: list[str]) -> Counter[str]:
    """How many final replies answer each message: its own, or a shared one listing it."""
    counts: Counter[str] = Counter()
    for item in read_outbox(home):
        if item["kind"] not in ("response", "error", "command"):
            continue
        answered: list[Any] = item.fields.get("answers") or [item["in_reply_to"]]
        for message_id in answered:
            if message_id in ids:
                counts[message_id] += 1
    return counts


def statuses(home: Path) -> dict[str, str]:
    rows = db(home).execute("SELECT message_id, status FROM inbox")
    return {row["message_id"]: row["status"] for row in rows}


def events_of(home: Path, type: str) -> list[dict[str, Any]]:
    rows = db(home).execute(
        "SELECT message_id, data FROM events WHERE type = ? ORDER BY id", (type,)
    )
    return [{"message_id": row["message_id"], **json.loads(row["data"])} for row in rows]


def command_replies(home: Path) -> list[Any]:
    return [item for item in read_outbox(home) if item["kind"] == "command"]


# Every built-in command, as a fresh home answers it: (what is typed, the start of the reply).
EVERY_COMMAND = [
    ("/help", "Commands (anything else goes to the agent"),
    ("/new", "Your next message starts a new conversation."),
    ("/list", "No conversations in this channel yet."),
    ("/resume 1", "There is no conversation 1 in /list"),
    ("/title Groceries", "No current conversation to rename."),
    ("/status", "smarthole is running."),
    ("/usage", "Today (UTC): 0 request(s)"),
    ("/stop", "Nothing runs in this channel."),
    ("/retry", "Nothing to retry in this channel."),
    ("/approve 0123abcd", "No approval has the id 0123abcd."),
    ("/approve always 0123abcd", "No approval has the id 0123abcd."),
    ("/deny 0123abcd not now", "No approval has the id 0123abcd."),
]
