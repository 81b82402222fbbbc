"""The agent's memory as the person sees it: ``memory`` (list), ``memory show``, ``memory
edit``, ``memory rm``; and ``forget``, which erases a conversation and what came of it."""

from __future__ import annotations

import argparse

from ...errors import ExitCode
from ..common import rooted
from ..parser import Commands, command, option

JSON = option("--json", action="store_true", help="print JSON")
PATH = option("path", metavar="PATH", help="a path under /memories (or relative to it)")


def register(commands: Commands) -> None:
    actions = Commands.under(commands.add(memory), dest="memory_command", required=False)
    for declared in (show, edit, remove):
        actions.add(declared)
    commands.add(forget)


@command("memory", "list the agent's memory files: path, size, updated, number of sources")
@JSON
def memory(args: argparse.Namespace) -> int:
    from ..memory import print_files

    with rooted(args) as root:
        print_files(root.memory, as_json=args.json)
    return ExitCode.OK


@command("show", "a memory file, each line with the writes it came from, and those writes")
@PATH
@JSON
def show(args: argparse.Namespace) -> int:
    from ..memory import print_file

    with rooted(args) as root:
        print_file(root.memory, args.path, as_json=args.json)
    return ExitCode.OK


@command("edit", "edit a memory file in $EDITOR (recorded as the person's write)")
@PATH
def edit(args: argparse.Namespace) -> int:
    from ..memory import edit_file

    with rooted(args) as root:
        print(edit_file(root.memory, args.path))
    return ExitCode.OK


@command("rm", "delete a memory file (or a folder of them)")
@PATH
def remove(args: argparse.Namespace) -> int:
    from ..memory import remove_file

    with rooted(args) as root:
        print(remove_file(root.memory, args.path))
    return ExitCode.OK


@command("forget", "erase a conversation (or a turn, or a message) and all that came of it")
@option("conversation", metavar="CONVERSATION", help="the conversation's id or a unique prefix")
@option("--turn", type=int, metavar="N", help="only turn N")
@option("--message", metavar="ID", help="only the turn of message ID")
@option("--yes", action="store_true", help="do not ask first (for scripts)")
@JSON
def forget(args: argparse.Namespace) -> int:
    from ...errors import UsageError
    from ..memory import forget as run_forget
    from ..memory import print_forgotten

    if args.turn is not None and args.message is not None:
        raise UsageError("give --turn or --message, not both")
    with rooted(args) as root:
        done = run_forget(
            root, args.conversation, turn=args.turn, message=args.message, yes=args.yes
        )
        print_forgotten(done, as_json=args.json)
    return ExitCode.OK
