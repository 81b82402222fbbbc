"""Looking inside: the lifecycle ``events``, and the ``plugins`` with their hooks and tools."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ...errors import ExitCode
from ..common import dumps, home_of, one_line, print_json, rooted
from ..output import short
from ..parser import Commands, command, number, option

if TYPE_CHECKING:
    from ...daemon.runtime import Runtime
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

    with (
        capture_signals(signals=INTERRUPT_SIGNALS, enabled=args.follow) as captured,
        rooted(args) as root,
    ):
        conversation = task = None
        if args.conversation:
            conversation = root.conversations.get(args.conversation).id
        if args.task:
            task = root.tasks.find(args.task).id
        log = root.events
        last_id = log.latest_id()
        past = log.last(args.limit, conversation=conversation, task=task) if args.limit > 0 else []
        last_id = _print_events(root, past, last_id, as_json=args.json)
        while args.follow and not captured.stop.wait(FOLLOW_POLL_SECONDS):
            batch = log.since(last_id, conversation=conversation, task=task)
            last_id = _print_events(root, batch, last_id, as_json=args.json)
    return captured.exit_code()


def _print_events(root: Runtime, batch: list[Event], last_id: int, *, as_json: bool) -> int:
    """Print ``batch``; returns the highest event id printed so far."""
    from ..render import event_line

    texts = {} if as_json else _texts(root, batch)
    for event in batch:
        if as_json:
            line = dumps(event.as_dict(), indent=None)
        else:
            line = event_line(event, texts.get(event.id or 0))
        print(line, flush=True)
        last_id = max(last_id, event.id or 0)
    return last_id


def _texts(root: Runtime, batch: list[Event]) -> dict[int, str]:
    """The text behind each event that has one, by event id: a stored message's (the person's
    words, the agent's), and an agent turn's, for a preview."""
    store = root.store
    messages: dict[tuple[str, int], dict[int, str]] = {}
    turns: dict[str, dict[int, str]] = {}
    texts: dict[int, str] = {}
    for event in batch:
        data = event.data
        if event.type == "message_stored" and event.conversation and event.turn is not None:
            place = (event.conversation, event.turn)
            if place not in messages:
                stored = store.messages(event.conversation, turn=event.turn)
                messages[place] = {m.id: m.text for m in stored}
            stored_id = data.get("stored_id")
            text = messages[place].get(stored_id) if isinstance(stored_id, int) else None
        elif event.type == "agent_turn_finished" and isinstance(data.get("task"), str):
            if data["task"] not in turns:
                turns[data["task"]] = {t.index: t.text for t in root.tasks.turns(data["task"])}
            number = data.get("agent_turn")
            text = turns[data["task"]].get(number - 1) if isinstance(number, int) else None
        else:
            continue
        if text and event.id is not None:
            texts[event.id] = text
    return texts


@command("plugins", "list plugins, their hooks and tools (a running daemon's, beside the disk)")
@option("--json", action="store_true", help="a JSON list")
def plugins(args: argparse.Namespace) -> int:
    """The plugins on disk; with a daemon running, the ones it has loaded, each marked where
    the disk now differs (``loaded``, ``on_disk``, ``changed`` in the JSON)."""
    from ...daemon.loaded import beside_disk, plugin_listing
    from ...daemon.state import recorded
    from ..render import loaded_footer, loaded_mark

    home = home_of(args)
    listing = beside_disk(home, recorded(home, "plugins"), plugin_listing)
    if listing.disk_error:
        print(f"smarthole: {listing.disk_error} (the next start would fail)", file=sys.stderr)
    if args.json:
        print_json(listing.entries)
        return ExitCode.OK
    if listing.from_daemon:
        print("As loaded by the running daemon:")
    for plugin in listing.entries:
        where = f"({one_line(plugin['source'])}: {one_line(plugin['location'])})"
        print(f"{one_line(plugin['name'])}  {where}{loaded_mark(plugin)}")
        print(f"  hooks: {', '.join(plugin['hooks']) or '-'}")
        for tool in plugin["tools"]:
            print(f"  tool {one_line(tool['name'])}: {short(tool['description'], 200)}")
    for line in loaded_footer(listing.entries):
        print(line)
    return ExitCode.OK
