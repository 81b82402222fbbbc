"""Schedules: ``schedules``, and ``schedule`` with its actions ``add``, ``rm``, ``pause``,
``resume`` and ``run``."""

from __future__ import annotations

import argparse

from ...errors import ExitCode, UsageError
from ..common import now, rooted
from ..parser import Commands, command, option

# The --conversation help, here: the parser is built without importing the work modules.
CONVERSATION_HELP = (
    "new: a new conversation each run (default); same: one conversation for every run; or a "
    "conversation's id (or unique prefix) to continue"
)
ID_HELP = "the schedule's name, id, or a unique prefix of either"


def register(commands: Commands) -> None:
    commands.add(schedules)
    actions = Commands.under(
        commands.command("schedule", None, "add, remove, pause, resume or run a schedule"),
        dest="schedule_command",
        required=True,
    )
    for declared in (add, remove, pause, resume, run):
        actions.add(declared)


@command("schedules", "list schedules: source, next run (local time), last run and outcome")
@option("--json", action="store_true", help="print JSON")
def schedules(args: argparse.Namespace) -> int:
    from ..schedules import print_schedules

    with rooted(args) as root:
        print_schedules(root.schedules, as_json=args.json, now=now())
    return ExitCode.OK


@command("add", "add a schedule that sends TEXT (stored in the database)")
@option("name", metavar="NAME", help="a letter, then letters, digits, - or _")
@option("--cron", metavar="EXPR", help='a cron expression, as "0 8 * * mon-fri"')
@option("--every", metavar="INTERVAL", help='an interval, as "30m" (s, m, h, d)')
@option("--at", metavar="TIME", help='one local time, as "2026-12-01T09:00"')
@option("--timezone", default="", metavar="ZONE", help="default: the system's zone")
@option("--channel", default="default", metavar="CHANNEL", help="default: default")
@option("--conversation", default="new", metavar="ID|new|same", help=CONVERSATION_HELP)
@option("text", metavar="TEXT", help="the message it sends")
def add(args: argparse.Namespace) -> int:
    from ...pipeline.watch import wake_daemon
    from ..schedules import add_schedule

    given = [(k, getattr(args, k)) for k in ("cron", "every", "at") if getattr(args, k)]
    if len(given) != 1:
        raise UsageError("give exactly one of --cron, --every or --at")
    ((kind, expression),) = given
    with rooted(args) as root:
        added = add_schedule(
            root.schedules,
            name=args.name,
            kind=kind,
            expression=expression,
            timezone=args.timezone,
            text=args.text,
            channel=args.channel,
            now=now(),
            conversation=args.conversation,
            find_conversation=lambda key: root.conversations.get(key).id,
        )
        wake_daemon(root.home.inbox)  # a running daemon takes it into account now
        print(f"added schedule {added.label} ({added.id})")
    return ExitCode.OK


def _change(args: argparse.Namespace, action: str) -> int:
    from ...pipeline.watch import wake_daemon
    from ..schedules import change_schedule

    with rooted(args) as root:
        done = change_schedule(root.schedules, args.id, action, now())
        wake_daemon(root.home.inbox)  # a running daemon sends a run now, not at its next look
        print(done)
    return ExitCode.OK


@command("rm", "remove a schedule (one from config.toml is removed there)")
@option("id", metavar="ID", help=ID_HELP)
def remove(args: argparse.Namespace) -> int:
    return _change(args, "rm")


@command("pause", "stop a schedule firing until it is resumed")
@option("id", metavar="ID", help=ID_HELP)
def pause(args: argparse.Namespace) -> int:
    return _change(args, "pause")


@command("resume", "fire a paused schedule again (the slots it was paused for do not fire)")
@option("id", metavar="ID", help=ID_HELP)
def resume(args: argparse.Namespace) -> int:
    return _change(args, "resume")


@command("run", "fire a schedule now, once (a running daemon sends it at once)")
@option("id", metavar="ID", help=ID_HELP)
def run(args: argparse.Namespace) -> int:
    return _change(args, "run")
