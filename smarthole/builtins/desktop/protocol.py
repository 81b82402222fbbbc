"""The SmartHole desktop's frames: reading what it sends, building what it expects.

Every frame is a JSON text frame ``{"type": ..., "payload": {...}}``. The desktop sends
``registration_response`` and ``message``; the client sends ``registration`` and
``response`` (``ack``, ``reject`` or ``notification`` about one message id). Plain values in,
plain values out: no sockets here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...db.states import OutboxKind
from ...errors import DesktopError

if TYPE_CHECKING:
    from ...channels import Delivery

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


def notification(delivery: Delivery, title: str) -> dict[str, Any]:
    """The ``notification`` response answering the desktop message ``delivery`` answers (its
    id is the inbox message's); ``title`` is the conversation's title or the client's name."""
    title = ERROR_TITLE if delivery.kind == OutboxKind.ERROR else title
    priority = PRIORITIES.get(delivery.kind, "normal")
    return response(
        delivery.message_id,
        "notification",
        {"title": title, "body": delivery.text, "priority": priority},
    )
