"""Tidying conversations: end one (``new``), retitle one (``rename``), drop old ones (``prune``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ...errors import ExitCode
from ..common import daemon_pid, one_line, opened, title_line
from ..parser import ID_HELP, Commands, command, option

if TYPE_CHECKING:
    from ...db.store import Store
    from ...home import Home


def register(commands: Commands) -> None:
    for declared in (new, rename, prune):
        commands.add(declared)


@command("new", "end a channel's active conversation")
@option("--channel", metavar="C", default="default", help="the channel (default: default)")
def new(args: argparse.Namespace) -> int:
    from ...conversations import Conversations

    with opened(args) as (home, store):
        ended = Conversations(store).end_active(args.channel)
        if ended is None:
            print(f"No active conversation on channel {args.channel}.")
            return ExitCode.OK
        _summarise_now(home, store)
        ended = store.conversation(ended.id) or ended
    print(
        f'Ended "{title_line(ended.title)}" ({ended.id}). The next message on channel '
        f"{args.channel} starts a new conversation."
    )
    return ExitCode.OK


def _summarise_now(home: Home, store: Store) -> None:
    """Write due summaries here when no daemon will (no daemon running, and a key is set)."""
    import os

    from ...agent.client import API_KEY_ENV, ModelClient
    from ...agent.titles import Titler
    from ...config import load_config
    from ...db.events import EventLog

    if daemon_pid(home) is not None or not os.environ.get(API_KEY_ENV, "").strip():
        return  # the daemon writes it (now, or when it next starts)
    config = load_config(home)
    client = ModelClient.from_environment(config.model)
    try:
        Titler(store, EventLog(store), client, config.titles).sweep()
    finally:
        client.close()


@command("rename", "set a conversation's title (pinned)")
@option("id", metavar="ID", help=ID_HELP)
@option("title", nargs="+", metavar="TITLE", help="the new title")
def rename(args: argparse.Namespace) -> int:
    from ...conversations import Conversations

    with opened(args) as (_, store):
        conversation = Conversations(store).rename(args.id, " ".join(args.title))
    print(f'Renamed {conversation.id} to "{one_line(conversation.title)}".')
    return ExitCode.OK


@command("prune", "remove the oldest ended conversations beyond [conversation] max_retained")
@option("--dry-run", action="store_true", help="say what would be removed")
def prune(args: argparse.Namespace) -> int:
    from ...config import load_config
    from ...conversations import Conversations

    with opened(args) as (home, store):
        limit = load_config(home).conversation.max_retained
        conversations = Conversations(store)
        victims = conversations.prunable(limit) if args.dry_run else conversations.prune(limit)
    verb = "Would remove" if args.dry_run else "Removed"
    print(f"{verb} {len(victims)} ended conversation(s) beyond the newest {limit}.")
    for conversation in victims:
        ended = conversation.ended_at.date() if conversation.ended_at else "?"
        print(
            f"  {conversation.id} [{one_line(conversation.channel)}] "
            f"{title_line(conversation.title)} (ended {ended})"
        )
    return ExitCode.OK
