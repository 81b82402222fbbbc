"""The view's only writes: a message or an approval's answer dropped into the inbox, and a
task's abort.

A message from a page is an inbox file like any other, checked first as the daemon would check
it (the same size limit and the same parser), so what would be set aside in ``failed/`` is
refused here with the same reason, and no file is written. An abort follows the rules of
``smarthole tasks abort``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..attachments import accept
from ..config import AttachmentSettings
from ..db.approvals import Approvals
from ..db.events import EventLog
from ..db.states import ApprovalBy
from ..db.store import Store
from ..db.tasks import Tasks
from ..errors import LookupFailed, MessageError
from ..home import Home, holder
from ..pipeline.answers import signed_by
from ..pipeline.inbox import drop_messages
from ..pipeline.incoming import drop_folder_message
from ..pipeline.message import parse_message, render_message_file
from ..teams.control import abort_task

MAX_REASON = 4000


class Refused(Exception):
    """A request the view will not carry out: ``status`` and the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Dropped:
    id: str
    file: str


def drop(
    home: Home,
    body: Any,
    *,
    max_bytes: int,
    files: list[tuple[str, bytes]] | None = None,
    limits: AttachmentSettings | None = None,
) -> Dropped:
    """Write the message ``body`` asks for (``text``, optional ``conversation``, ``channel``,
    ``new_conversation``) into the inbox, with ``files`` as its attachments (a folder
    message, each file checked first as the daemon will); ``Refused`` says why not."""
    if not isinstance(body, dict):
        raise Refused(400, 'the body must be a JSON object with a "text" key')
    unknown = sorted(set(body) - {"text", "conversation", "channel", "new_conversation"})
    if unknown:
        raise Refused(400, f"unknown key(s) {', '.join(unknown)}")
    text = body.get("text")
    if not isinstance(text, str) or not (text.strip() or files):
        raise Refused(400, "the message text is empty")
    fields = {
        "channel": _optional_text(body, "channel"),
        "conversation": _optional_text(body, "conversation"),
        "new_conversation": body.get("new_conversation", False),
    }
    if not isinstance(fields["new_conversation"], bool):
        raise Refused(400, "new_conversation must be true or false")
    message_id = str(uuid.uuid4())
    try:
        data = render_message_file(text, id=message_id, **fields)
    except Exception as exc:  # a value TOML cannot hold
        raise Refused(400, f"cannot be written as an inbox file: {exc}") from exc
    if len(data) > max_bytes:
        raise Refused(
            413, f"the message is too large ({len(data)} bytes; the limit is {max_bytes})"
        )
    try:
        # Its fields checked as the daemon will (the text may be empty beside attachments).
        checked = data if text.strip() else render_message_file("-", id=message_id, **fields)
        parse_message("web.md", checked, modified=datetime.now(UTC))
    except MessageError as exc:
        raise Refused(400, str(exc)) from exc
    if files:
        return _drop_with_files(
            home, text, files, limits or AttachmentSettings(), message_id, fields
        )
    (written,) = drop_messages(home.inbox, [(message_id, data)])
    if isinstance(written, OSError):
        raise Refused(503, f"the inbox is not writable: {written.strerror or written}")
    return Dropped(message_id, written.name)


def _drop_with_files(
    home: Home,
    text: str,
    files: list[tuple[str, bytes]],
    limits: AttachmentSettings,
    message_id: str,
    fields: dict[str, Any],
) -> Dropped:
    if len(files) > limits.max_count:
        raise Refused(400, f"{len(files)} attachments is more than max_count ({limits.max_count})")
    total = sum(len(data) for _, data in files)
    if total > limits.max_message_bytes:
        raise Refused(413, f"the attachments come to {total} bytes, more than max_message_bytes")
    try:
        for name, data in files:
            accept(name, data, limits)
        written = drop_folder_message(home.inbox, text, files, message_id=message_id, **fields)
    except MessageError as exc:
        raise Refused(400, str(exc)) from exc
    except OSError as exc:
        raise Refused(503, f"the inbox is not writable: {exc.strerror or exc}") from exc
    return Dropped(message_id, written.name)


def _optional_text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Refused(400, f"{key} must be a string")
    return value


def answer(home: Home, approvals: Approvals, approval_id: str, body: Any) -> Dropped:
    """Write the answer file ``body`` asks for (``decision``: ``approve`` or ``deny``, with
    ``always`` or a ``reason``) for a waiting approval, as ``smarthole approve``/``deny`` do."""
    if not isinstance(body, dict):
        raise Refused(400, 'the body must be a JSON object with a "decision" key')
    unknown = sorted(set(body) - {"decision", "always", "reason"})
    if unknown:
        raise Refused(400, f"unknown key(s) {', '.join(unknown)}")
    decision, always, reason = body.get("decision"), body.get("always", False), body.get("reason")
    if decision not in ("approve", "deny"):
        raise Refused(400, 'decision must be "approve" or "deny"')
    if not isinstance(always, bool) or (always and decision == "deny"):
        raise Refused(400, "always must be true or false, and only with approve")
    if reason is not None and (not isinstance(reason, str) or decision == "approve"):
        raise Refused(400, "reason must be a string, and only with deny")
    approval = approvals.get(approval_id)
    if approval is None:
        raise Refused(404, f"no approval {approval_id!r}")
    if not approval.waiting:
        raise Refused(409, f"approval {approval.id} was already decided ({approval.status})")
    message_id = f"{decision}-{approval.id}-{uuid.uuid4().hex[:8]}"
    data = render_message_file(
        (reason or "")[:MAX_REASON],
        id=message_id,
        metadata=signed_by(home, message_id, ApprovalBy.WEB),
        args_hash=approval.args_hash,
        always=always,
        **{decision: approval.id},
    )
    (written,) = drop_messages(home.inbox, [(message_id, data)])
    if isinstance(written, OSError):
        raise Refused(503, f"the inbox is not writable: {written.strerror or written}")
    return Dropped(message_id, written.name)


def abort(
    home: Home, store: Store, events: EventLog, tasks: Tasks, task_id: str
) -> tuple[bool, str]:
    """Stop a running task as ``smarthole tasks abort`` does: whether it stopped now, and
    what to tell the person."""
    task = tasks.get(task_id)
    if task is None:
        raise Refused(404, f"no task {task_id!r}")
    if task.finished:
        raise Refused(409, f"task {task.id} has already finished ({task.status})")
    try:
        stopped = abort_task(
            store, events, tasks, task, loop_may_run=holder(home.lock_file) is not None
        )
    except LookupFailed as exc:
        raise Refused(404, str(exc)) from exc
    if stopped:
        return True, f"Task {task.id} aborted; the entry agent hears it when its turn goes on."
    return False, f"Task {task.id} will stop after the model call in flight returns."
