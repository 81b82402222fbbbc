"""The SmartHole desktop's frames: reading what it sends, building what it expects.

Every frame is a JSON text frame ``{"type": ..., "payload": {...}}``. The desktop sends
``registration_response`` and ``message``; the client sends ``registration`` and
``response`` (``ack``, ``reject`` or ``notification`` about one message id). Plain values in,
plain values out: no sockets here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...db.outbox import OutboxItem
from ...db.states import OutboxKind
from ...errors import DesktopError

KNOWN_TYPES = ("registration_response", "message")
CAPABILITIES = ["messages", "notifications"]
ERROR_TITLE = "SmartHole Error"
# A question waits for the user, so it should interrupt; everything else is routine.
PRIORITIES = {
    "response": "normal",
    "message": "normal",
    "question": "high",
    "error": "high",
    "approval": "high",
}


class BadFrame(DesktopError):
    """A frame the bridge ignores (with a warning); the message says why."""


@dataclass(frozen=True)
class Frame:
    type: str
    payload: dict[str, Any]
    size: int = 0  # of the frame as received, in characters


def parse_frame(raw: str | bytes) -> Frame:
    """A frame from the desktop; raises ``BadFrame`` saying why it cannot be used."""
    if not isinstance(raw, str):
        raise BadFrame(f"a binary frame ({len(raw)} bytes); the desktop sends text")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadFrame(f"not JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise BadFrame('no "type"')
    if not isinstance(data.get("payload"), dict):
        raise BadFrame(f'a {data["type"]!r} frame without an object "payload"')
    if data["type"] not in KNOWN_TYPES:
        raise BadFrame(f"unknown type {data['type']!r}")
    return Frame(data["type"], data["payload"], len(raw))


def encode(frame: dict[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False)


def registration(name: str, description: str, version: str) -> dict[str, Any]:
    return {
        "type": "registration",
        "payload": {
            "name": name,
            "description": description,
            "version": version,
            "capabilities": CAPABILITIES,
        },
    }


def response(message_id: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "response",
        "payload": {"messageId": message_id, "type": kind, "payload": payload},
    }


def ack(message_id: str) -> dict[str, Any]:
    return response(message_id, "ack", {})


def reject(message_id: str, reason: str) -> dict[str, Any]:
    return response(message_id, "reject", {"reason": reason})


@dataclass(frozen=True)
class Notification:
    """A reply on its way to the desktop, as kept until it is sent."""

    outbox_id: str
    desktop_id: str
    kind: str
    text: str
    conversation: str | None
    created_at: str

    @classmethod
    def for_item(cls, item: OutboxItem, desktop_id: str) -> Notification:
        return cls(
            outbox_id=item.id,
            desktop_id=desktop_id,
            kind=item.kind,
            text=item.text,
            conversation=item.conversation,
            created_at=item.created_at.isoformat(),
        )

    def frame(self, title: str) -> dict[str, Any]:
        """The ``notification`` response; ``title`` is the conversation's title or the name."""
        title = ERROR_TITLE if self.kind == OutboxKind.ERROR else title
        priority = PRIORITIES.get(self.kind, "normal")
        return response(
            self.desktop_id,
            "notification",
            {"title": title, "body": self.text, "priority": priority},
        )
