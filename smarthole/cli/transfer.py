"""A conversation out as JSON, Markdown or seed 001's context JSON (``export``), and a context
JSON back in as a new conversation (``import``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DocumentError, UsageError
from ..formats import loads_json, visible
from .output import dumps

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime
    from ..home import Home

MAX_IMPORT_CHARACTERS = 64 << 20  # a context of text only; far above any real conversation


def export_text(root: Runtime, wanted: str, format: str, output: Path | None = None) -> str:
    """Conversation ``wanted`` (an id or a unique prefix) as ``json``, ``context`` or Markdown.

    Attachments: Markdown writes them into a folder beside the export (``output``'s, else
    ``<conversation id>.attachments`` here) and links them; JSON names them by hash and, with
    ``output``, writes them beside it named so, for ``import`` to restore.
    """
    from ..conversations import context_of

    home = root.home
    conversations = root.conversations
    entry = root.config.agent.name
    data = conversations.export(conversations.get(wanted), root.outbox_record, entry_agent=entry)
    attached = {a["sha256"]: a for turn in data["turns"] for a in turn.get("attachments", [])}
    folder = attachments_folder(output, data["conversation_id"])
    if format == "json":
        if attached and output is not None:
            _write_blobs(home, folder, {sha: sha for sha in attached})
        return dumps(data)
    if format == "context":
        return dumps(context_of(data))
    names = {sha: f"{sha[:12]}-{a['name']}" for sha, a in attached.items()}
    if attached:
        _write_blobs(home, folder, names)
    relative = folder.name if output is not None else str(folder)
    return export_markdown(data, {sha: f"{relative}/{name}" for sha, name in names.items()})


def attachments_folder(output: Path | None, conversation_id: str) -> Path:
    """Where an export's attachments go: beside ``output``, else in the current folder."""
    if output is None:
        return Path(f"{conversation_id}.attachments")
    return output.with_name(output.name + ".attachments")


def _write_blobs(home: Home, folder: Path, names: dict[str, str]) -> None:
    from ..attachments import BlobStore
    from ..fsutil import atomic_write

    blobs = BlobStore(home.blobs)
    try:
        folder.mkdir(exist_ok=True)
        for sha256, name in names.items():
            atomic_write(folder / name, blobs.read(sha256), mode=None)
    except FileNotFoundError as exc:
        raise DocumentError(f"an attachment's blob is missing from this home: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"cannot write attachments to {folder}: {exc.strerror or exc}") from exc


def restore_attachments(home: Home, data: Any, file: str) -> int:
    """Make sure every attachment an import names is stored in this home: found already, or
    read from ``<file>.attachments/<sha256>`` (checked against its hash). How many came in."""
    import hashlib

    from ..attachments import BlobStore
    from ..conversations import parse_context

    blobs = BlobStore(home.blobs)
    folder = attachments_folder(None if file == "-" else Path(file), "import")
    restored = 0
    for _, _, attached in parse_context(data):
        for attachment in attached:
            for sha256 in attachment.hashes():
                if blobs.exists(sha256):
                    continue
                try:
                    raw = (folder / sha256).read_bytes()
                except OSError as exc:
                    raise DocumentError(
                        f"attachment {visible(attachment.name)} ({sha256[:12]}) is neither in "
                        f"this home nor in {folder}"
                    ) from exc
                if hashlib.sha256(raw).hexdigest() != sha256:
                    raise DocumentError(f"{folder / sha256} does not match its hash")
                blobs.put(raw)
                restored += 1
    return restored


def import_channel(data: Any, given: str | None) -> str:
    """The channel an import goes to: ``--channel`` if given, else the export's own (checked
    as an inbox message's channel is), else ``default``."""
    from ..pipeline.message import CHANNEL_PATTERN, DEFAULT_CHANNEL

    if given is not None:
        if not CHANNEL_PATTERN.fullmatch(given):
            raise UsageError(
                f"--channel '{visible(given)}' must be 1-64 letters, digits or . _ @ + -"
            )
        return given
    channel = data.get("channel") if isinstance(data, dict) else None
    if isinstance(channel, str) and CHANNEL_PATTERN.fullmatch(channel):
        return channel
    return DEFAULT_CHANNEL


def read_context(file: str) -> Any:
    """The JSON document in ``file`` (``-``: standard input), for ``import``."""
    source = "standard input" if file == "-" else file
    return loads_json(_read_document(file, source), source=source)


def _read_document(file: str, source: str) -> str:
    """The text of a context JSON: UTF-8, at most :data:`MAX_IMPORT_CHARACTERS` characters."""
    try:
        if file == "-":
            text = sys.stdin.read(MAX_IMPORT_CHARACTERS + 1)
        else:
            with open(file, encoding="utf-8") as handle:
                text = handle.read(MAX_IMPORT_CHARACTERS + 1)
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{source} is not UTF-8 text (byte offset {exc.start})") from exc
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from exc
    if len(text) > MAX_IMPORT_CHARACTERS:
        raise DocumentError(
            f"{source} is over {MAX_IMPORT_CHARACTERS >> 20}M characters; not a context"
        )
    return text


def export_markdown(data: dict[str, Any], links: dict[str, str] | None = None) -> str:
    """The Markdown export; ``links`` gives each attachment's file (by hash) beside it."""
    lines = [
        f"# {data['title']}",
        "",
        f"Conversation `{data['conversation_id']}` on channel `{data['channel']}`.",
        "",
    ]
    current = None
    for entry in data["turns"]:
        if entry["turn"] != current:
            current = entry["turn"]
            lines += [f"## Turn {current}", ""]
        who = "**You**" if entry["role"] == "human" else f"**{data['entry_agent']}**"
        lines += [f"{who}: {entry['content'].strip()}", ""]
        for attachment in entry.get("attachments", []):
            name = attachment["name"]
            target = (links or {}).get(attachment["sha256"])
            if target is None:
                lines += [f"- attached: {name} ({attachment['media_type']})", ""]
            else:
                bang = "!" if attachment["media_type"].startswith("image/") else ""
                lines += [f"{bang}[{_md_label(name)}](<{target}>)", ""]
    return "\n".join(lines)


def _md_label(name: str) -> str:
    return "".join("\\" + c if c in "[]\\*_`<>" else c for c in name)
