"""A conversation out as JSON, Markdown or seed 001's context JSON (``export``), and a context
JSON back in as a new conversation (``import``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ..errors import DocumentError, UsageError
from ..formats import loads_json, visible
from .output import dumps

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime

MAX_IMPORT_CHARACTERS = 64 << 20  # a context of text only; far above any real conversation


def export_text(root: Runtime, wanted: str, format: str) -> str:
    """Conversation ``wanted`` (an id or a unique prefix) as ``json``, ``context`` or Markdown."""
    from ..conversations import context_of
    from .render import export_markdown

    conversations = root.conversations
    entry = root.config.agent.name
    data = conversations.export(conversations.get(wanted), root.outbox_record, entry_agent=entry)
    if format == "json":
        return dumps(data)
    if format == "context":
        return dumps(context_of(data))
    return export_markdown(data)


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
