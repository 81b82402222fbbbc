"""Forks and replays: take a conversation another way from a turn (``fork``), or run its
human messages again against another model or prompt, tools standing in (``replay``)."""

from __future__ import annotations

import argparse
import sys

from ...errors import ExitCode, UsageError
from ..common import print_json, rooted
from ..parser import ID_HELP, Commands, bounded, command, number, option


def register(commands: Commands) -> None:
    for declared in (fork, replay):
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
    from ...pipeline.forking import home_read_only

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
            read_only=home_read_only(root.home),
        )
    print(forked.id)
    return ExitCode.OK


@command("replay", "run conversations' messages again with another model or prompt, side by side")
@option("ids", nargs="+", metavar="CONVERSATION", help=ID_HELP + " (one or more)")
@option("--model", metavar="M", help="the model to ask (default: the configured one)")
@option("--system-prompt", metavar="FILE", help="a file whose text replaces the agent's prompt")
@option("--from-turn", type=bounded(int, 1), default=1, metavar="N", help="replay turns N on")
@option(
    "--live-tools",
    action="store_true",
    help="let read-only tools run for real (others never run in a replay)",
)
@option("--report", metavar="FILE", help="write the side-by-side report to FILE.md or FILE.html")
@option("--json", action="store_true", help="print the reports as JSON")
@number("--timeout", 3600.0, "SECONDS", "how long to wait for the replays", above=True)
def replay(args: argparse.Namespace) -> int:
    """Start (or resume) a replay per conversation, wait for them, report; each replay is a
    new conversation ("replay of ..."), current nowhere, its replies never delivered."""
    from pathlib import Path

    from ...fsutil import atomic_write
    from ...pipeline.replaying import start_replay
    from ...pipeline.replayreport import replay_report
    from ..replaying import html_report, markdown, read_prompt, replay_daemon, summary_lines
    from ..replaying import wait_for as wait_for_replays

    report = Path(args.report) if args.report else None
    if report is not None and report.suffix.lower() not in (".md", ".html"):
        raise UsageError(f"--report {args.report}: name a .md or .html file")
    prompt = read_prompt(args.system_prompt)
    with rooted(args) as root:
        forks = []
        for wanted in args.ids:
            started, resumed = start_replay(
                root.store,
                root.ledger,
                root.conversations,
                wanted,
                model=args.model,
                system_prompt=prompt,
                from_turn=int(args.from_turn),
                live_tools=args.live_tools,
            )
            turns = len((started.replay_plan or {}).get("turns", ()))
            verb = "resuming" if resumed else "replaying"
            print(
                f"{verb} {started.forked_from} as {started.conversation_id} ({turns} turns)",
                file=sys.stderr,
            )
            forks.append(started)
        with replay_daemon(root.home) as local:
            done = wait_for_replays(root, forks, local, args.timeout)
        reports = [replay_report(root.store, root.ledger, root.usage, f) for f in forks]
    if report is not None:
        text = markdown(reports) if report.suffix.lower() == ".md" else html_report(reports)
        atomic_write(report, text.encode(), mode=None)
    if args.json:
        print_json([r.as_dict() for r in reports])
    else:
        for made in reports:
            print("\n".join(summary_lines(made)))
    print(f"real tool runs: {sum(r.real_runs for r in reports)}", file=sys.stderr)
    if not done:
        print("smarthole: the replays are not done yet; they go on in the daemon", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK
