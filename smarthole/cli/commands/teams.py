"""Agent teams: ``agents``, and ``tasks`` with its actions ``show`` and ``abort``."""

from __future__ import annotations

import argparse

from ...errors import ExitCode
from ..common import rooted
from ..parser import Commands, command, option

TASK_ID_HELP = "the task's id or a unique prefix"
JSON = option("--json", action="store_true", help="print JSON")


def register(commands: Commands) -> None:
    commands.add(agents)
    actions = Commands.under(commands.add(tasks), dest="tasks_command", required=False)
    actions.add(show_task)
    actions.add(abort_task)


@command("agents", "list the entry agent and the team agents")
@JSON
def agents(args: argparse.Namespace) -> int:
    from ..teams import print_agents

    with rooted(args) as root:
        print_agents(root.home, as_json=args.json)
    return ExitCode.OK


@command("tasks", "list team tasks (running ones and the last 10)")
@option("--all", action="store_true", help="list every task")
@JSON
def tasks(args: argparse.Namespace) -> int:
    from ..teams import print_tasks

    with rooted(args) as root:
        print_tasks(root.tasks, everything=args.all, as_json=args.json)
    return ExitCode.OK


@command("show", "a task and its agent turns")
@option("id", metavar="ID", help=TASK_ID_HELP)
@JSON
def show_task(args: argparse.Namespace) -> int:
    from ..teams import print_task

    with rooted(args) as root:
        print_task(root.tasks, args.id, as_json=args.json)
    return ExitCode.OK


@command("abort", "stop a task after the model call in flight")
@option("id", metavar="ID", help=TASK_ID_HELP)
def abort_task(args: argparse.Namespace) -> int:
    from ..teams import abort

    with rooted(args) as root:
        said = abort(root, args.id)
    print(said)
    return ExitCode.OK
