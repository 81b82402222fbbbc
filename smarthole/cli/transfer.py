"""``smarthole export`` and ``import``: a conversation out as JSON, Markdown or seed 001's
context JSON, and a context JSON back in as a new conversation."""

from __future__ import annotations

import argparse
import sys

from ..errors import DocumentError, UsageError
from ..formats import loads_json
from .commands import opened
from .output import print_json

MAX_IMPORT_CHARACTERS = 64 << 20  # a context of text only; far above any real conversation


def export(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..conversations import Conversations, context_of
    from ..db.outbox import OutboxRecord
    from .render import export_markdown

    with opened(args) as (home, store):
        conversations = Conversations(store)
        entry = load_config(home).agent.name
        data = conversations.export(
            conversations.get(args.id), OutboxRecord(home, store), entry_agent=entry
        )
    if args.format == "json":
        print_json(data)
    elif args.format == "context":
        print_json(context_of(data))
    else:
        print(export_markdown(data))
    return 0


def import_context(args: argparse.Namespace) -> int:
    """Read a context JSON (seed 001's shape) into a new conversation; print its id."""
    from ..conversations import Conversations

    source = "standard input" if args.file == "-" else args.file
    data = loads_json(_read_document(args.file, source), source=source)
    with opened(args) as (_, store):
        conversation = Conversations(store).import_context(data, channel=args.channel)
    print(conversation.id)
    return 0


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
