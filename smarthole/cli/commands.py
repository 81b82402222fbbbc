"""The CLI's commands, one function each: ``handler(args) -> exit code``.

They print; they raise ``SmartholeError`` subclasses for ``cli.main`` to turn into one-line
messages and exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..config import set_up_home
from ..errors import ConfigError, MessageError, UsageError
from ..home import Home
from .output import dumps, one_line, print_json

if TYPE_CHECKING:
    from ..config import Config
    from ..db.events import Event
    from ..db.store import Store

FOLLOW_POLL_SECONDS = 0.2
NOT_RUNNING = 3  # `status` when the daemon is down (the LSB and systemctl convention)


def _home(args: argparse.Namespace, *, must_exist: bool = True) -> Home:
    home = Home.resolve(args.home)
    if must_exist and not home.root.is_dir():
        raise ConfigError(
            f"no smarthole home at {home.root}; run `smarthole init --home {home.root}` first"
        )
    return home


def _store(home: Home) -> Store:
    from ..db.store import Store
    from ..formats import utc_now

    home.state.mkdir(parents=True, exist_ok=True)
    return Store.open(home.database, clock=utc_now)


@contextlib.contextmanager
def opened(args: argparse.Namespace) -> Iterator[tuple[Home, Store]]:
    """The home named by ``args`` and its database, closed again when the block ends."""
    home = _home(args)
    store = _store(home)
    try:
        yield home, store
    finally:
        store.close()


def _now() -> Any:
    from ..formats import utc_now

    return utc_now()


# -- init / run / send / demo -----------------------------------------------------------------


def init(args: argparse.Namespace) -> int:
    home = _home(args, must_exist=False)
    if home.root.exists() and not home.root.is_dir():
        raise ConfigError(f"cannot use {home.root} as a home: it is a file, not a folder")
    try:
        existed = home.config_file.exists()
        created = set_up_home(home, force=args.force)
    except OSError as exc:
        raise ConfigError(f"cannot create a home at {home.root}: {exc.strerror or exc}") from exc
    if created and existed:
        print(f"Wrote {home.config_file}; the old one is {home.config_file.name}.bak.")
    elif created:
        print(f"Created {home.root} with {home.config_file.name}.")
    else:
        print(f"{home.config_file} already exists; left it unchanged (--force replaces it).")
    print(
        "Next: export ANTHROPIC_API_KEY=..., then `smarthole run"
        f"{'' if args.home is None else f' --home {home.root}'}`."
    )
    return 0


def preflight(home: Home) -> Config:
    """Fail before anything starts if the config is bad or there is no API key."""
    import os

    from ..agent.client import ModelClient
    from ..config import load_config

    config = load_config(home)
    ModelClient.from_environment(config.model, os.environ).close()
    return config


def run(args: argparse.Namespace) -> int:
    from ..daemon import Daemon
    from ..daemon.logs import set_level

    home = _home(args)
    config = preflight(home)
    follow = not (args.log_level or args.verbose)  # the command line wins over [daemon]
    if follow:
        set_level(config.daemon.log_level)
    daemon = Daemon(home, once=args.once, follow_log_level=follow)
    code = daemon.run()
    if args.once and daemon.summary.get("deferred"):
        due = daemon.summary["next_due"]
        print(
            f"{daemon.summary['deferred']} message(s) deferred; the next is due at "
            f"{due.astimezone():%Y-%m-%d %H:%M:%S}.",
            file=sys.stderr,
        )
    return code


def send(args: argparse.Namespace) -> int:
    from .mailbox import Mailbox

    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    if not text.strip():
        raise MessageError("the message text is empty")
    with opened(args) as (home, store):
        conversation = args.conversation
        if conversation is not None:
            from ..conversations import Conversations

            conversation = Conversations(store).get(conversation).id  # fail now, not at timeout
        mailbox = Mailbox(home, store)
        message_id = mailbox.send(
            text, channel=args.channel, conversation=conversation, new_conversation=args.new
        )
        if not args.wait:
            print(message_id)
            return 0
        print(f"sent {message_id}; waiting for the reply...", file=sys.stderr)
        final = None
        for item in mailbox.replies(message_id, timeout=args.timeout):
            print(item.text, flush=True)
            final = item if item.final else final
            if not item.final:
                print()
        if final is None:
            print(
                f"smarthole: no reply to {message_id} within {args.timeout:g}s (is the daemon "
                "running? `smarthole status`)",
                file=sys.stderr,
            )
            return 1
        return 1 if final.kind == "error" else 0


def demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    # Only a --home given here, never $SMARTHOLE_HOME: that is likely a real home.
    return run_demo(sys.stdout, keep_in=Home.resolve(args.home).root if args.home else None)


# -- operations -------------------------------------------------------------------------------


def status(args: argparse.Namespace) -> int:
    from .admin import status_report
    from .render import status_text

    with opened(args) as (home, store):
        report = status_report(home, store)
    if args.check or args.max_queue_age is not None:
        from .health import problems

        found = problems(report, args.max_queue_age)
        for line in found:
            print(line)
        return 1 if found else 0
    if args.json:
        print_json(report)
    else:
        print(status_text(report))
    return 0 if report["running"] else NOT_RUNNING


def retry(args: argparse.Namespace) -> int:
    from .admin import retry as retry_messages

    if not args.ids and not args.all:
        raise UsageError("name message ids to retry, or use --all")
    with opened(args) as (home, store):
        done = retry_messages(home, store, None if args.all else args.ids)
    if not done:
        print("Nothing to retry.")
    for message_id, what in done:
        print(f"{message_id}: {what}")
    return 0


# -- conversations ----------------------------------------------------------------------------


def conversations(args: argparse.Namespace) -> int:
    from ..conversations import Conversations
    from .render import conversation_list

    with opened(args) as (_, store):
        views = Conversations(store).recent(
            channel=args.channel, include_all=args.all, limit=args.limit, now=_now()
        )
    if args.json:
        print_json([v.as_dict() for v in views])
    elif not views:
        print("No conversations yet.")
    else:
        print(conversation_list(views, _now()))
    return 0


def show(args: argparse.Namespace) -> int:
    from ..conversations import Conversations
    from ..db.outbox import OutboxRecord
    from .render import transcript

    if args.usage:
        from .usage import show_usage

        with opened(args) as (_, store):
            return show_usage(store, args.id, as_json=args.json)
    if args.json:
        raise UsageError("--json works with --usage (for the transcript, use smarthole export)")
    with opened(args) as (home, store):
        conversation = Conversations(store).get(args.id)
        print(
            transcript(
                conversation,
                store.turns(conversation.id),
                store.messages(conversation.id),
                OutboxRecord(home, store).items_for_conversation(conversation.id),
            )
        )
    return 0


def rename(args: argparse.Namespace) -> int:
    from ..conversations import Conversations

    with opened(args) as (_, store):
        conversation = Conversations(store).rename(args.id, " ".join(args.title))
    print(f'Renamed {conversation.id} to "{one_line(conversation.title)}".')
    return 0


def new(args: argparse.Namespace) -> int:
    from ..conversations import Conversations

    with opened(args) as (home, store):
        ended = Conversations(store).end_active(args.channel)
        if ended is None:
            print(f"No active conversation on channel {args.channel}.")
            return 0
        _summarise_now(home, store)
        ended = store.conversation(ended.id) or ended
    title = one_line(ended.title or "Untitled conversation")
    print(
        f'Ended "{title}" ({ended.id}). The next message on channel {args.channel} starts '
        "a new conversation."
    )
    return 0


def _summarise_now(home: Home, store: Store) -> None:
    """Write due summaries here when no daemon will (no daemon running, and a key is set)."""
    import os

    from ..agent.client import API_KEY_ENV, ModelClient
    from ..agent.titles import Titler
    from ..config import load_config
    from ..db.events import EventLog
    from .mailbox import daemon_running

    if daemon_running(home) or not os.environ.get(API_KEY_ENV, "").strip():
        return  # the daemon writes it (now, or when it next starts)
    config = load_config(home)
    client = ModelClient.from_environment(config.model)
    try:
        Titler(store, EventLog(store), client, config.titles).sweep()
    finally:
        client.close()


def prune(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..conversations import Conversations

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
            f"{one_line(conversation.title or 'Untitled conversation')} (ended {ended})"
        )
    return 0


def events(args: argparse.Namespace) -> int:
    """Print recent events; with ``--follow``, new ones until Ctrl-C (then exit 130).

    When following, Ctrl-C is captured before the first event is printed, so it is recorded
    (and the command ends cleanly) wherever it lands.
    """
    from ..daemon.signals import INTERRUPT_SIGNALS, capture_signals
    from ..db.events import EventLog

    with (
        capture_signals(signals=INTERRUPT_SIGNALS, enabled=args.follow) as captured,
        opened(args) as (_, store),
    ):
        conversation = task = None
        if args.conversation:
            from ..conversations import Conversations

            conversation = Conversations(store).get(args.conversation).id
        if args.task:
            from ..db.tasks import Tasks

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
    from .render import event_line

    for event in batch:
        line = dumps(event.as_dict(), indent=None) if as_json else event_line(event)
        print(line, flush=True)
        last_id = max(last_id, event.id or 0)
    return last_id


def plugins(args: argparse.Namespace) -> int:
    from ..app import App

    app = App.load(_home(args))
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
        return 0
    for plugin in listing:
        print(f"{plugin['name']}  ({plugin['source']}: {plugin['location']})")
        print(f"  hooks: {', '.join(plugin['hooks']) or '-'}")
        for tool in plugin["tools"]:
            print(f"  tool {tool['name']}: {tool['description']}")
    return 0
