"""``smarthole export`` and ``import``: a conversation out as JSON, Markdown or seed 001's
context JSON, and a context JSON back in as a new conversation."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import UsageError
from .commands import opened
from .output import print_json


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
    try:
        raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
        data = json.loads(raw)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {source}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source} is not JSON: {exc}") from exc
    with opened(args) as (_, store):
        conversation = Conversations(store).import_context(data, channel=args.channel)
    print(conversation.id)
    return 0
