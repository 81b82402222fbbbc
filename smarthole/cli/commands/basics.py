"""Getting going: ``init`` a home, ``run`` its daemon, ``send`` it a message, or watch ``demo``."""

from __future__ import annotations

import argparse
import sys

from ...db.states import OutboxKind
from ...errors import ConfigError, ExitCode, MessageError
from ...home import Home
from ..common import (
    daemon_pid,
    home_of,
    now,
    one_line,
    preflight,
    rooted,
    run_command,
    starting,
)
from ..parser import Commands, command, number, one_of, option
from .web import serve_beside_daemon


def register(commands: Commands) -> None:
    for declared in (init, run, send, demo):
        commands.add(declared)


@command("init", "create the home folder and its config.toml")
@option("--force", action="store_true", help="replace config.toml (the old one is kept as .bak)")
def init(args: argparse.Namespace) -> int:
    from ...config import set_up_home

    home = home_of(args, must_exist=False)
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
    return ExitCode.OK


@command("run", "run the daemon in the foreground")
@option("--once", action="store_true", help="process everything runnable now, then exit")
@option(
    "--log-format",
    choices=("text", "journal", "json"),
    help="text (with times), journal (syslog priorities; the default under systemd) or "
    "json (one object per line)",
)
@option("--log-file", metavar="PATH", help="also log to PATH (reopened after logrotate)")
@option(
    "--log-level",
    choices=("debug", "info", "warning", "error"),
    help="default: [daemon] log_level (info)",
)
def run(args: argparse.Namespace) -> int:
    from ...daemon import Daemon
    from ...daemon.logs import set_level

    home = home_of(args)
    # A Ctrl-C from the first line on, while the SDK loads, ends quietly; the daemon then owns it.
    with starting(f"Starting smarthole for {one_line(home.root)}..."):
        config = preflight(home)
        follow = not (args.log_level or args.verbose)  # the command line wins over [daemon]
        if follow:
            set_level(config.daemon.log_level)
        # [web] enabled: the view in this process too, over the daemon's own root
        web = serve_beside_daemon(home, config)
        daemon = Daemon(home, once=args.once, follow_log_level=follow, beside=web)
    code = daemon.run()
    if args.once and daemon.summary.get("deferred"):
        due = daemon.summary["next_due"]
        print(
            f"{daemon.summary['deferred']} message(s) deferred; the next is due at "
            f"{due.astimezone():%Y-%m-%d %H:%M:%S}.",
            file=sys.stderr,
        )
    return code


@command("send", "drop a message into the inbox and print its id")
@option("--channel", metavar="NAME", help="the channel (queue) of the message")
@one_of(
    option("--conversation", metavar="ID", help="continue this conversation"),
    option("--new", action="store_true", help="start a new conversation"),
)
@option("--wait", action="store_true", help="wait for the reply and print it")
@number("--timeout", 300.0, "SECONDS", "how long --wait waits", above=True)
@option(
    "--attach",
    metavar="FILE",
    action="append",
    default=[],
    help="attach a photo, PDF or text file (repeatable)",
)
@option("text", nargs="*", help="the message (use - to read standard input)")
def send(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..mailbox import Mailbox, Progress, Retrying, ToolCalled, retry_line, waiting_for
    from ..output import plain

    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    if not text.strip() and not args.attach:
        raise MessageError("the message text is empty")
    attachments = [Path(name) for name in args.attach]
    with rooted(args) as root:
        home = root.home
        conversation = args.conversation
        if conversation is not None:
            conversation = root.conversations.get(conversation).id  # fail now, not at timeout
        running = daemon_pid(home) is not None
        mailbox = Mailbox(home, root.outbox_record, root.events)
        message_id = mailbox.send(
            text,
            channel=args.channel,
            conversation=conversation,
            new_conversation=args.new,
            attachments=attachments,
        )
        if not running:
            why = ", so no reply can come yet" if args.wait else ""
            print(
                f"smarthole: no daemon is running for {one_line(home.root)}{why}; message "
                f"{message_id} waits in the inbox until one starts (`{run_command(args, home)}`)",
                file=sys.stderr,
            )
        if not args.wait:
            print(message_id)
            return ExitCode.OK
        if not running:
            return ExitCode.FAILED
        print(f"sent {message_id}; waiting for the reply...", file=sys.stderr)
        final = None
        last: Progress | None = None  # what was seen last: says what a timeout waited for
        for item in mailbox.follow(message_id, timeout=args.timeout):
            last = item if not isinstance(item, ToolCalled) else last
            if isinstance(item, Retrying):
                print(retry_line(item, now()), file=sys.stderr, flush=True)
                continue
            if isinstance(item, ToolCalled):
                continue
            print(plain(item.text), flush=True)
            final = item if item.final else final
            if not item.final:
                print()
        if final is None:
            why = waiting_for(last, running=daemon_pid(home) is not None)
            print(
                f"smarthole: no reply to {message_id} within {args.timeout:g}s: {why}",
                file=sys.stderr,
            )
            return ExitCode.FAILED
        return ExitCode.FAILED if final.kind == OutboxKind.ERROR else ExitCode.OK


@command(
    "demo",
    "watch a scripted exchange against a bundled fake API",
    home_help="keep the demo's home in DIR (a new or empty folder) to look around after",
)
@option("--tour", action="store_true", help="walk every feature, a step at a time (< 20 s)")
def demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    # Only a --home given here, never $SMARTHOLE_HOME: that is likely a real home.
    keep = Home.resolve(args.home).root if args.home else None
    return run_demo(sys.stdout, keep_in=keep, tour=args.tour)
