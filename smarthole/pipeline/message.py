"""Inbox files into :class:`Message` values.

Two formats: ``*.md``/``*.txt`` (the text, with optional TOML front matter between ``+++``
lines) and ``*.json`` (an object with ``text`` and the same optional keys; a SmartHole desktop
routed-message payload is accepted as is). Anything unusable raises ``MessageError`` with a
one-line reason, which the inbox writes beside the file in ``failed/``: the bytes are untrusted,
so :func:`parse_message` raises nothing else, whatever they hold (a property test keeps it so).
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any, Protocol

from ..db.records import ApprovalAnswer, Message
from ..errors import ConfigError, MessageError
from ..formats import (
    FRONT_MATTER_FENCE,
    content_hash,
    derive_id,
    display_name,
    dumps_toml,
    loads_toml,
    parse_time,
)

if TYPE_CHECKING:
    from ..attachments import Attachment


class AttachmentSource(Protocol):
    """Where a message's attachments come from (``pipeline.incoming``): the files of its
    folder, or base64 in its JSON. Taking them stores them as blobs."""

    text: str  # the message text when there is none but attachments

    def take(self, listed: Any, *, from_json: bool) -> tuple[Attachment, ...]: ...


SUFFIXES = (".md", ".txt", ".json")
KEYS = {
    "id",
    "channel",
    "conversation",
    "new_conversation",
    "timestamp",
    "metadata",
    "agents",
    "max_turns",
    "approve",
    "deny",
    "args_hash",
    "always",
    "attachments",
}
JSON_KEYS = KEYS | {"text"}
DEFAULT_CHANNEL = "default"
MAX_ID_LENGTH = 200
CHANNEL_PATTERN = re.compile(r"[\w.@+-]{1,64}")
APPROVAL_ID = re.compile(r"[0-9a-f]{8,64}")
ARGS_HASH = re.compile(r"[0-9a-f]{64}")
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
MAX_METADATA_DEPTH = 32


def parse_message(
    name: str, data: bytes, *, modified: datetime, attachments: AttachmentSource | None = None
) -> Message:
    """Parse the bytes of inbox file ``name``; raises ``MessageError`` with the reason.

    ``name`` is the name as ``os.listdir`` gives it (undecodable bytes as surrogate escapes).
    Any failure, however unexpected (a value that overflows, input nested past the recursion
    limit), is a ``MessageError``: bad input must never stop the daemon.
    """
    try:
        message = _parse(name, data, modified, attachments)
        message.to_json().encode("utf-8")  # what the ledger stores must be storable
    except (MessageError, OSError):  # OSError: storing an attachment met a disk fault
        raise
    except RecursionError as exc:
        raise MessageError("nested too deeply to read") from exc
    except UnicodeEncodeError as exc:
        raise MessageError("contains an unpaired surrogate escape (\\ud800-\\udfff)") from exc
    except Exception as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise MessageError(f"cannot be read as a message: {detail}") from exc
    return message


def _parse(name: str, data: bytes, modified: datetime, source: AttachmentSource | None) -> Message:
    dot = name.rfind(".")  # PurePath(name).suffix, without interning the name (fsutil.child)
    suffix = name[dot:].lower() if 0 < dot < len(name) - 1 else ""
    if suffix not in SUFFIXES:
        raise MessageError(f"unsupported file type {suffix or '(none)'!r}; use .md, .txt or .json")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from exc
    text = text.removeprefix("\ufeff")
    if suffix == ".json":
        fields, body = _json_fields(text)
    else:
        fields, body = _front_matter_fields(text)
    listed = fields.pop("attachments", None)
    if listed is not None and source is None:
        raise MessageError("attachments come only with a file in inbox/ (a folder or JSON)")
    taken = source.take(listed, from_json=suffix == ".json") if source is not None else ()
    body = body.strip()
    if not body and not ({"approve", "deny"} & set(fields)):
        if not taken:
            raise MessageError("the message text is empty")
        body = source.text if source is not None else ""
    return _build(name, data, body, fields, modified, taken)


def _json_fields(text: str) -> tuple[dict[str, Any], str]:
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MessageError(f"invalid JSON: {exc}") from exc
    except RecursionError as exc:
        raise MessageError("invalid JSON: nested too deeply") from exc
    if (
        isinstance(payload, dict)
        and payload.get("type") == "message"
        and isinstance(payload.get("payload"), dict)
    ):
        payload = payload["payload"]  # a whole SmartHole desktop frame, not just its payload
    if not isinstance(payload, dict):
        raise MessageError('the JSON must be an object with a "text" key')
    unknown = sorted(set(payload) - JSON_KEYS)
    if unknown:
        raise MessageError(
            f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(JSON_KEYS))}"
        )
    answers_or_attaches = {"approve", "deny", "attachments"} & set(payload)
    body = payload.pop("text", "" if answers_or_attaches else None)
    if not isinstance(body, str):
        raise MessageError('"text" must be a string')
    return payload, body


def _front_matter_fields(text: str) -> tuple[dict[str, Any], str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FRONT_MATTER_FENCE:
        return {}, text
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == FRONT_MATTER_FENCE:
            header = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            break
    else:
        raise MessageError("front matter has no closing +++ line")
    try:
        fields = loads_toml(header, source="front matter")
    except ConfigError as exc:
        raise MessageError(
            str(exc).replace("front matter: invalid TOML", "invalid TOML front matter")
        ) from exc
    except RecursionError as exc:
        raise MessageError("invalid TOML front matter: nested too deeply") from exc
    unknown = sorted(set(fields) - KEYS)
    if unknown:
        raise MessageError(
            f"unknown front matter key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(KEYS))}"
        )
    return fields, body


def _build(
    name: str,
    data: bytes,
    body: str,
    fields: dict[str, Any],
    modified: datetime,
    attachments: tuple[Attachment, ...] = (),
) -> Message:
    message_id = fields.get("id")
    if message_id is not None:
        _check_text_field("id", message_id, MAX_ID_LENGTH)
    channel = fields.get("channel")
    if channel is not None and (
        not isinstance(channel, str) or not CHANNEL_PATTERN.fullmatch(channel)
    ):
        raise MessageError(f"channel {channel!r} must be 1-64 letters, digits or . _ @ + -")
    conversation = fields.get("conversation")
    if conversation is not None:
        _check_text_field("conversation", conversation, MAX_ID_LENGTH)
    new_conversation = fields.get("new_conversation", False)
    if not isinstance(new_conversation, bool):
        raise MessageError("new_conversation must be true or false")
    if new_conversation and conversation:
        raise MessageError("new_conversation and conversation cannot both be given")
    metadata = fields.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise MessageError("metadata must be a table (an object)")
    timestamp = _timestamp(fields.get("timestamp"), modified)
    agents, max_turns = _team_request(fields)
    answer = _approval_answer(fields)
    if answer is not None and agents is not None:
        raise MessageError("an approval's answer cannot also ask for agents")
    if answer is not None and attachments:
        raise MessageError("an approval's answer cannot also carry attachments")
    if attachments:  # the same text with other attachments is another message
        data += b"".join(b"\0" + a.sha256.encode() for a in attachments)
    return Message(
        id=message_id or derive_id(name, data, modified),
        id_derived=message_id is None,
        text=body,
        source_name=display_name(name),
        timestamp=timestamp,
        content_hash=content_hash(data),
        channel=channel,
        conversation=conversation,
        new_conversation=new_conversation,
        metadata=_jsonable(metadata),
        agents=agents,
        max_turns=max_turns,
        answer=answer,
        attachments=attachments,
    )


def attachments_message(
    name: str, data: bytes, modified: datetime, text: str, attachments: tuple[Attachment, ...]
) -> Message:
    """A message that is attachments alone (a lone image, a folder with no text file)."""
    return _build(name, data, text, {}, modified, attachments)


def _approval_answer(fields: dict[str, Any]) -> ApprovalAnswer | None:
    """``approve``/``deny`` with ``args_hash`` and ``always``, checked for shape only: whether
    the approval exists and waits is for the daemon to say, in an error reply."""
    given = [key for key in ("approve", "deny") if key in fields]
    if not given:
        for key in ("args_hash", "always"):
            if key in fields:
                raise MessageError(f"{key} is only meaningful with approve or deny")
        return None
    if len(given) > 1:
        raise MessageError("approve and deny cannot both be given")
    decision = given[0]
    approval = fields[decision]
    if not isinstance(approval, str) or not APPROVAL_ID.fullmatch(approval):
        raise MessageError(f"{decision} must be an approval id (8-64 lowercase hex digits)")
    args_hash = fields.get("args_hash")
    if args_hash is not None and (
        not isinstance(args_hash, str) or not ARGS_HASH.fullmatch(args_hash)
    ):
        raise MessageError("args_hash must be 64 lowercase hex digits (SHA-256)")
    always = fields.get("always", False)
    if not isinstance(always, bool):
        raise MessageError("always must be true or false")
    if always and decision == "deny":
        raise MessageError("always is only meaningful with approve")
    return ApprovalAnswer(decision, approval, args_hash, always)


def _team_request(fields: dict[str, Any]) -> tuple[tuple[str, ...] | None, int | None]:
    """``agents`` and ``max_turns``, checked for shape only: whether the agents exist is for
    the daemon to say, in an error reply, since the configuration may change."""
    agents = fields.get("agents")
    max_turns = fields.get("max_turns")
    if agents is None:
        if max_turns is not None:
            raise MessageError("max_turns is only meaningful with agents")
        return None, None
    if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        raise MessageError("agents must be a list of agent names")
    if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int)):
        raise MessageError("max_turns must be an integer")
    return tuple(agents), max_turns


def _check_text_field(key: str, value: Any, limit: int) -> None:
    if not isinstance(value, str) or not value.strip():
        raise MessageError(f"{key} must be a non-empty string")
    if len(value) > limit or CONTROL_CHARS.search(value):
        raise MessageError(f"{key} must be at most {limit} characters with no control characters")


def _timestamp(value: Any, modified: datetime) -> datetime:
    if value is None:
        return modified
    moment = _to_datetime(value)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:  # 0001-01-01T00:00:00+14:00 is before the year 1 in UTC
        raise MessageError(f"timestamp {_shown(value)} is out of range") from exc


def _to_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise MessageError(f"timestamp {_shown(value)} is not a finite number")
        seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds or seconds
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise MessageError(f"timestamp {_shown(value)} is out of range") from exc
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError as exc:
            raise MessageError(f"timestamp {_shown(value)} is not an ISO 8601 time") from exc
    raise MessageError(f"timestamp {_shown(value)} is not a time")


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _jsonable(value: Any, depth: int = 0) -> Any:
    """TOML tables may hold dates; the ledger stores metadata as JSON."""
    if depth > MAX_METADATA_DEPTH:
        raise MessageError(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value


def render_message_file(text: str, **fields: Any) -> bytes:
    """An inbox ``.md`` file: front matter for the fields that are set, then the text."""
    present = {k: v for k, v in fields.items() if v not in (None, False, {})}
    if not present:
        return (text.rstrip("\n") + "\n").encode()
    header = dumps_toml(present)
    return f"{FRONT_MATTER_FENCE}\n{header}{FRONT_MATTER_FENCE}\n{text.rstrip()}\n".encode()
