"""Tidying conversations: end one (``new``), retitle one (``rename``), drop old ones (``prune``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ...errors import ExitCode
from ..common import daemon_pid, one_line, rooted, title_line
from ..parser import ID_HELP, Commands, command, option

if TYPE_CHECKING:
    from ...daemon.runtime import Runtime


def register(commands: Commands) -> None:
    for declared in (new, rename, prune):
        commands.add(declared)


@command("new", "end a channel's active conversation")
@option("--channel", metavar="C", default="default", help="the channel (default: default)")
def new(args: argparse.Namespace) -> int:
    with rooted(args) as root:
        ended = root.conversations.end_active(args.channel)
        if ended is None:
            print(f"No active conversation on channel {args.channel}.")
            return ExitCode.OK
        _summarise_now(root)
        ended = root.store.conversation(ended.id) or ended
    print(
        f'Ended "{title_line(ended.title)}" ({ended.id}). The next message on channel '
        f"{args.channel} starts a new conversation."
    )
    return ExitCode.OK


def _summarise_now(root: Runtime) -> None:
    """Write due summaries here when no daemon will (no daemon running, and a key is set)."""
    import os

    from ...agent.client import API_KEY_ENV

    if daemon_pid(root.home) is not None or not os.environ.get(API_KEY_ENV, "").strip():
        return  # the daemon writes it (now, or when it next starts)
    root.titler.sweep()


@command("rename", "set a conversation's title (pinned)")
@option("id", metavar="ID", help=ID_HELP)
@option("title", nargs="+", metavar="TITLE", help="the new title")
def rename(args: argparse.Namespace) -> int:
    with rooted(args) as root:
        conversation = root.conversations.rename(args.id, " ".join(args.title))
    print(f'Renamed {conversation.id} to "{one_line(conversation.title)}".')
    return ExitCode.OK


@command("prune", "remove the oldest ended conversations beyond [conversation] max_retained")
@option("--dry-run", action="store_true", help="say what would be removed")
def prune(args: argparse.Namespace) -> int:
    with rooted(args) as root:
        limit = root.config.conversation.max_retained
        conversations = root.conversations
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
