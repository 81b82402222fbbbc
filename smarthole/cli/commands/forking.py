"""Forks and replays: take a conversation another way from a turn (``fork``), or run its
human messages again against another model or prompt, tools standing in (``replay``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ...errors import ExitCode
from ..common import rooted
from ..parser import ID_HELP, Commands, bounded, command, option

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...home import Home


def register(commands: Commands) -> None:
    for declared in (fork,):
        commands.add(declared)


@command("fork", "copy a conversation's turns 1..N into a new conversation (the original stays)")
@option("id", metavar="CONVERSATION", help=ID_HELP)
@option("--turn", type=bounded(int, 1), metavar="N", help="keep turns 1..N (default: all)")
@option("--title", metavar="T", help='its title (default: the original\'s, "(fork at turn N)")')
@option("--channel", metavar="C", help="its channel (default: the original's)")
@option(
    "--keep-current",
    action="store_true",
    help="leave the channel's current conversation current (the fork is not)",
)
def fork(args: argparse.Namespace) -> int:
    """Print the new conversation's id."""
    from ...pipeline.forking import fork as fork_conversation

    with rooted(args) as root:
        forked = fork_conversation(
            root.store,
            root.conversations,
            root.events,
            args.id,
            turn=int(args.turn) if args.turn is not None else None,
            title=args.title,
            channel=args.channel,
            keep_current=args.keep_current,
            read_only=known_read_only(root.home),
        )
    print(forked.id)
    return ExitCode.OK


def known_read_only(home: Home) -> Callable[[str], bool]:
    """Which tools are read-only, as the home's plugins register them (an MCP server's tools
    are not known here: they count as having side effects, which is the safe side)."""
    from ...app import App
    from ...errors import ConfigError, PluginError
    from ...pipeline.forking import read_only_tools

    try:
        app = App.load(home)
    except (ConfigError, PluginError):
        return lambda name: False
    try:
        return read_only_tools(app.tools)
    finally:
        app.close()
