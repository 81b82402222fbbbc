"""A claimed inbox entry into a :class:`Message`: a text file, a lone image or PDF, or a
folder message (at most one text file and any number of attachments).

Every attachment is checked (``attachments.checks``) and stored as a blob, written and
fsynced, here, before the ledger row that names it commits. Anything refused raises
``MessageError`` naming the file and the rule, and the whole message goes to ``failed/``; a
blob already stored for it is left for housekeeping (no message names it).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..attachments import Attachment, BlobStore, accept, sniff
from ..attachments.checks import check_name, size_limit
from ..errors import MessageError
from ..formats import display_name, iso, visible
from ..fsutil import HEAD_BYTES, atomic_write, child, fsync_dir, read_regular_file, remove_entry
from .message import SUFFIXES, attachments_message, parse_message, render_message_file

if TYPE_CHECKING:
    from ..attachments import Accepted
    from ..config import AttachmentSettings, InboxSettings
    from ..db.records import Message

UNSAFE_IN_NAMES = re.compile(r"[^\w.@+-]")
MESSAGE_STEM = "message"  # message.md beside other text files: the message's own text


@dataclass
class Taker:
    """Checks and stores the attachments of one message (an ``AttachmentSource``)."""

    text: str
    settings: AttachmentSettings
    blobs: BlobStore
    message_bytes: int = 256 * 1024  # [inbox] max_message_bytes: a folder's text file
    files: dict[str, Path] = field(default_factory=dict)  # a folder's attachment files
    total: int = 0

    def take(self, listed: Any, *, from_json: bool) -> tuple[Attachment, ...]:
        """The folder's files in the order ``listed`` names (the rest by name), and base64
        attachments of a JSON message."""
        if listed is not None and not isinstance(listed, list):
            raise MessageError("attachments must be a list")
        listed = list(listed or [])
        inline = [item for item in listed if isinstance(item, dict)]
        names = [item for item in listed if isinstance(item, str)]
        if len(inline) + len(names) != len(listed) or (inline and not from_json):
            raise MessageError(
                "attachments must list file names of the folder"
                + (' or objects with "name", "media_type" and "data"' if from_json else "")
            )
        for name in names:
            if name not in self.files:
                raise MessageError(f"attachments names {name!r}, which the folder does not hold")
        if len(set(names)) != len(names):
            raise MessageError("attachments names a file twice")
        order = names + sorted(set(self.files) - set(names))
        count = len(order) + len(inline)
        if count > self.settings.max_count:
            raise MessageError(
                f"{count} attachments is more than max_count ({self.settings.max_count})"
            )
        taken = [self._file(name) for name in order]
        taken += [self._inline(item) for item in inline]
        return tuple(taken)

    def _file(self, name: str) -> Attachment:
        path = self.files[name]
        try:
            file = read_regular_file(
                path,
                self.settings.max_pdf_bytes,
                limit_for=lambda head: size_limit(name, head, self.settings),
            )
        except MessageError as exc:
            raise MessageError(f"{shown(name)}: {exc}") from exc
        return self.store(accept(name, file.data, self.settings))

    def _inline(self, item: dict[str, Any]) -> Attachment:
        unknown = sorted(set(item) - {"name", "media_type", "data"})
        name, media_type, data = item.get("name"), item.get("media_type"), item.get("data")
        if unknown or not all(isinstance(v, str) for v in (name, media_type, data)):
            raise MessageError(
                'each attachment object must have "name", "media_type" and "data" (base64) '
                "strings and nothing else"
            )
        assert isinstance(name, str) and isinstance(data, str)
        check_name(name)
        if len(data) * 3 // 4 > self.settings.max_message_bytes:
            raise MessageError(f"{name}: more than max_message_bytes")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise MessageError(f"{name}: data is not valid base64") from exc
        return self.store(accept(name, raw, self.settings, declared=media_type))

    def store(self, accepted: Accepted) -> Attachment:
        self.total += len(accepted.data)
        limit = self.settings.max_message_bytes
        if self.total > limit:
            raise MessageError(
                f"{accepted.name}: the attachments come to {self.total} bytes, more than "
                f"max_message_bytes ({limit})"
            )
        sha256 = self.blobs.put(accepted.data)
        sent = self.blobs.put(accepted.sent) if accepted.sent is not None else None
        return Attachment(accepted.name, accepted.media_type, len(accepted.data), sha256, sent)


def read_entry(
    claimed: Path,
    name: str,
    inbox: InboxSettings,
    settings: AttachmentSettings,
    blobs: BlobStore,
) -> Message:
    """The message of claimed entry ``claimed`` (inbox name ``name``)."""
    taker = Taker(inbox.attachment_text, settings, blobs, inbox.max_message_bytes)
    info = os.lstat(claimed)
    if stat.S_ISDIR(info.st_mode):
        return _folder(claimed, name, taker, info.st_mtime_ns)
    limits: dict[str, bool] = {}

    def limit_for(head: bytes) -> tuple[int, str]:
        if sniff(head) is None:
            return inbox.max_message_bytes, "max_message_bytes"
        limits["lone"] = True
        return size_limit(name, head, settings)

    try:
        file = read_regular_file(claimed, inbox.max_message_bytes, limit_for=limit_for)
    except MessageError as exc:
        if limits.get("lone"):
            raise MessageError(f"{shown(name)}: {exc}") from exc
        raise
    modified = datetime.fromtimestamp(file.mtime_ns / 1e9, UTC)
    if limits.get("lone"):  # an image or PDF by itself
        attachment = taker.store(accept(name, file.data, settings))
        return attachments_message(name, file.data, modified, taker.text, (attachment,))
    return parse_message(name, file.data, modified=modified, attachments=taker)


def _folder(folder: Path, name: str, taker: Taker, mtime_ns: int) -> Message:
    texts: list[str] = []
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    for entry in entries:
        if entry.name.startswith("."):
            continue  # .DS_Store and the like; a writer's temp files
        if not entry.is_file(follow_symlinks=False):
            raise MessageError(
                f"{shown(entry.name)}: not a regular file (a folder message holds files)"
            )
        if entry.name.lower().endswith(SUFFIXES):
            texts.append(entry.name)
        taker.files[entry.name] = child(folder, entry.name)
    own = [t for t in texts if t.rsplit(".", 1)[0].lower() == MESSAGE_STEM]
    if len(own) > 1 or (not own and len(texts) > 1):
        listed = ", ".join(shown(t) for t in (own or texts)[:5])
        raise MessageError(
            f"the folder holds {len(own or texts)} text files ({listed}); a folder message has at "
            f"most one (or one named {MESSAGE_STEM}.md, .txt or .json, the others attachments)"
        )
    text_name = (own or texts)[0] if own or texts else None
    if text_name is None:
        if not taker.files:
            raise MessageError("the folder is empty")
        modified = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
        taken = taker.take(None, from_json=False)
        manifest = "\0".join(a.sha256 for a in taken).encode()
        return attachments_message(name, manifest, modified, taker.text, taken)
    text_path = taker.files.pop(text_name)
    file = read_regular_file(text_path, taker.message_bytes)
    if sniff(file.data[:HEAD_BYTES]) is not None:
        raise MessageError(f"{text_name}: the bytes are not text, but the name says they are")
    modified = datetime.fromtimestamp(file.mtime_ns / 1e9, UTC)
    message = parse_message(text_name, file.data, modified=modified, attachments=taker)
    return replace(message, source_name=display_name(name))


def drop_folder_message(
    inbox: Path, text: str, attachments: list[tuple[str, bytes]], *, message_id: str, **fields: Any
) -> Path:
    """Write a folder message into ``inbox``: ``message.md`` and each attachment ``(name,
    bytes)``, written and fsynced under a temporary (dot) name, then renamed into place, as
    writers should."""
    names = [name for name, _ in attachments]
    for name in names:
        check_name(name)
    if len(set(names)) != len(names):
        raise MessageError("two attachments have the same name; rename one")
    if f"{MESSAGE_STEM}.md" in names:
        raise MessageError(f"an attachment may not be named {MESSAGE_STEM}.md")
    inbox.mkdir(parents=True, exist_ok=True)
    final = child(inbox, drop_name(message_id).removesuffix(".md"))
    staging = child(inbox, f".{final.name}.tmp")
    staging.mkdir(mode=0o700)
    try:
        body = render_message_file(text, id=message_id, attachments=names or None, **fields)
        atomic_write(child(staging, f"{MESSAGE_STEM}.md"), body, mode=None)
        for name, data in attachments:
            atomic_write(child(staging, name), data, mode=None)
        os.rename(staging, final)
    except BaseException:
        remove_entry(staging)
        raise
    fsync_dir(inbox)
    return final


def shown(name: str) -> str:
    """A file name in a reason: one line, whatever bytes it holds."""
    return visible(display_name(name))


def drop_name(message_id: str) -> str:
    stamp = iso(datetime.now(UTC)).replace(":", "-")
    return f"{stamp}-{UNSAFE_IN_NAMES.sub('_', message_id)[:80]}.md"
