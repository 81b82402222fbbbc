"""Approvals: ``approvals`` (what waits), ``approve ID`` and ``deny ID``.

An answer is written into the inbox, the same durable path as an answer file: the daemon
applies it when it claims the file (at once, or when it next starts).
"""

from __future__ import annotations

import argparse

from ...errors import ExitCode
from ..common import now, rooted
from ..parser import Commands, command, option

APPROVAL_ID_HELP = "the approval's id or a unique prefix"


def register(commands: Commands) -> None:
    commands.add(approvals)
    commands.add(approve)
    commands.add(deny)


@command("approvals", "list the tool calls waiting for your approval")
@option("--json", action="store_true", help="print JSON")
def approvals(args: argparse.Namespace) -> int:
    from ..approving import print_waiting

    with rooted(args) as root:
        print_waiting(root.approvals, as_json=args.json, now=now())
    return ExitCode.OK


@command("approve", "let a waiting tool call run (through the inbox)")
@option("id", metavar="ID", help=APPROVAL_ID_HELP)
@option(
    "--always", action="store_true", help="and allow this tool for the rest of the conversation"
)
def approve(args: argparse.Namespace) -> int:
    from ..approving import answer

    with rooted(args) as root:
        print(answer(root.home, root.approvals, args.id, "approve", always=args.always))
    return ExitCode.OK


@command("deny", "refuse a waiting tool call (through the inbox)")
@option("id", metavar="ID", help=APPROVAL_ID_HELP)
@option("--reason", metavar="TEXT", default="", help="why; the agent reads it")
def deny(args: argparse.Namespace) -> int:
    from ..approving import answer

    with rooted(args) as root:
        print(answer(root.home, root.approvals, args.id, "deny", reason=args.reason))
    return ExitCode.OK
