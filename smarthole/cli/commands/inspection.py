"""Looking inside: the lifecycle ``events``, and the ``plugins`` with their hooks and tools."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ...errors import ExitCode
from ..common import dumps, home_of, opened, print_json
from ..parser import Commands, command, number, option

if TYPE_CHECKING:
    from ...db.events import Event

FOLLOW_POLL_SECONDS = 0.2


def register(commands: Commands) -> None:
    commands.add(events)
    commands.add(plugins)


@command("events", "print lifecycle events")
@option("--conversation", metavar="ID", help="only this conversation's events")
@option("--task", metavar="ID", help="only the events of this team task")
@option("--follow", "-f", action="store_true", help="keep printing new events")
@option("--json", action="store_true", help="one JSON object per line")
@number("--limit", 100, "N", "how many past events to print first")
def events(args: argparse.Namespace) -> int:
    """Print recent events; with ``--follow``, new ones until Ctrl-C (then exit 130).

    When following, Ctrl-C is captured before the first event is printed, so it is recorded
    (and the command ends cleanly) wherever it lands.
    """
    from ...daemon.signals import INTERRUPT_SIGNALS, capture_signals
    from ...db.events import EventLog

    with (
        capture_signals(signals=INTERRUPT_SIGNALS, enabled=args.follow) as captured,
        opened(args) as (_, store),
    ):
        conversation = task = None
        if args.conversation:
            from ...conversations import Conversations

            conversation = Conversations(store).get(args.conversation).id
        if args.task:
            from ...db.tasks import Tasks

            task = Tasks(store).find(args.task).id
        log = EventLog(store)
        last_id = log.latest_id()
        past = log.last(args.limit, conversation=conversation, task=task) if args.limit > 0 else []
        last_id = _print_events(past, last_id, as_json=args.json)
        while args.follow and not captured.stop.wait(FOLLOW_POLL_SECONDS):
            batch = log.since(last_id, conversation=conversation, task=task)
            last_id = _print_events(batch, last_id, as_json=args.json)
    return captured.exit_code()


def _print_events(batch: list[Event], last_id: int, *, as_json: bool) -> int:
    """Print ``batch``; returns the highest event id printed so far."""
    from ..render import event_line

    for event in batch:
        line = dumps(event.as_dict(), indent=None) if as_json else event_line(event)
        print(line, flush=True)
        last_id = max(last_id, event.id or 0)
    return last_id


@command("plugins", "list plugins, their hooks and tools")
@option("--json", action="store_true", help="a JSON list")
def plugins(args: argparse.Namespace) -> int:
    from ...app import App

    app = App.load(home_of(args))
    listing: list[dict[str, Any]] = []
    for info in app.plugins.info.values():
        listing.append(
            {
                "name": info.name,
                "source": info.source,
                "location": info.location,
                "hooks": app.plugins.hook_names(info.name),
                "tools": [
                    {"name": t.name, "description": t.summary, "idempotent": t.idempotent}
                    for t in app.tools
                    if t.plugin == info.name
                ],
            }
        )
    if args.json:
        print_json(listing)
        return ExitCode.OK
    for plugin in listing:
        print(f"{plugin['name']}  ({plugin['source']}: {plugin['location']})")
        print(f"  hooks: {', '.join(plugin['hooks']) or '-'}")
        for tool in plugin["tools"]:
            print(f"  tool {tool['name']}: {tool['description']}")
    return ExitCode.OK
