"""The ``smarthole`` command: ``main(argv) -> int``, the only place errors become exit codes.

Exit codes: 0 success; 1 a request that could not be met (unknown id, a timeout, an error
reply); 2 the program cannot run as configured (bad config, no API key, a broken plugin,
another daemon running); 3 ``status``: the daemon is not running; 130 interrupted (Ctrl-C).
Heavy modules are imported inside the commands so ``smarthole --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import (
    AlreadyRunning,
    ConfigError,
    DaemonError,
    LookupFailed,
    MessageError,
    PluginError,
    SmartholeError,
    UsageError,
)

logger = logging.getLogger("smarthole")

HOME_HELP = "the agent's folder (default: $SMARTHOLE_HOME, else ~/SmartHole)"
USAGE_ERRORS = (ConfigError, PluginError, DaemonError, AlreadyRunning, MessageError, UsageError)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    configure_logging(args)
    try:
        result: int = args.handler(args)
        return result
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except LookupFailed as exc:
        print(f"smarthole: {exc}", file=sys.stderr)
        return 1
    except USAGE_ERRORS as exc:
        print(f"smarthole: {exc}", file=sys.stderr)
        return 2
    except SmartholeError as exc:
        print(f"smarthole: {exc}", file=sys.stderr)
        return 1


def configure_logging(args: argparse.Namespace) -> None:
    verbose = getattr(args, "verbose", 0)
    level = (
        logging.DEBUG if verbose else (logging.INFO if args.command == "run" else logging.WARNING)
    )
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s"
    )
    if not verbose:
        for noisy in ("httpx2", "httpcore2", "anthropic", "mcp"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        # watchdog complains when events race its own shutdown; its events are only hints.
        logging.getLogger("watchdog").setLevel(logging.CRITICAL)


def build_parser() -> argparse.ArgumentParser:
    from . import chat, commands, teams

    parser = argparse.ArgumentParser(
        prog="smarthole",
        description="Drop a file in a folder, get an answer from a Claude agent.",
        epilog="Run `smarthole demo` to see it work with no API key. Docs: README.md",
    )
    parser.add_argument("--version", action="version", version=f"smarthole {__version__}")
    parser.add_argument("--home", metavar="DIR", help=HOME_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(
        name: str, handler: Any, help: str, *, aliases: Sequence[str] = (), under: Any = None
    ) -> Any:
        p = (under or sub).add_parser(name, help=help, description=help, aliases=list(aliases))
        # SUPPRESS: a --home given before the command is not reset by the command's default.
        p.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS, help=HOME_HELP)
        p.add_argument("-v", "--verbose", action="count", default=0, help="log more")
        p.set_defaults(handler=handler)
        return p

    command("init", commands.init, "create the home folder and its config.toml")

    p = command("run", commands.run, "run the daemon in the foreground")
    p.add_argument("--once", action="store_true", help="process everything runnable now, then exit")

    p = command("send", commands.send, "drop a message into the inbox and print its id")
    p.add_argument("--channel", metavar="NAME")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--conversation", metavar="ID", help="continue this conversation")
    target.add_argument("--new", action="store_true", help="start a new conversation")
    p.add_argument("--wait", action="store_true", help="wait for the reply and print it")
    number_option(p, "--timeout", 300.0, "SECONDS", "how long --wait waits")
    p.add_argument("text", nargs="+", help="the message (use - to read standard input)")

    command("demo", commands.demo, "watch a scripted exchange against a bundled fake API")

    p = command("status", commands.status, "show the daemon, queue, deferred and failed work")
    p.add_argument("--json", action="store_true", help="one JSON object")

    p = command("retry", commands.retry, "make deferred messages due and redrive dead ones")
    p.add_argument("ids", nargs="*", metavar="ID", help="message ids or unique prefixes")
    p.add_argument("--all", action="store_true", help="every deferred and dead message")

    p = command(
        "conversations",
        commands.conversations,
        "list conversations, most recent first",
        aliases=["ls"],
    )
    p.add_argument("--channel", metavar="C")
    p.add_argument(
        "--all", action="store_true", help="include ended conversations older than 30 days"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--limit", type=int, metavar="N")

    p = command("show", commands.show, "print a conversation's transcript")
    p.add_argument("id", metavar="ID")

    p = command("resume", chat.resume, "pick a conversation and continue it in chat")
    p.add_argument("id", nargs="?", metavar="ID")

    p = command("chat", chat.chat, "talk to the agent in this terminal")
    p.add_argument("--channel", metavar="C", default=None)
    target = p.add_mutually_exclusive_group()
    target.add_argument("--conversation", metavar="ID")
    target.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the channel's most recent conversation",
    )
    number_option(p, "--timeout", 600.0, "SECONDS", "how long to wait for each reply")

    p = command("export", commands.export, "export a conversation as JSON or Markdown")
    p.add_argument("id", metavar="ID")
    p.add_argument(
        "--format",
        choices=("json", "markdown", "context"),
        default="json",
        help="json (default), markdown, or context: the entry agent and the turns only",
    )

    p = command("import", teams.import_context, "import a context JSON as a new conversation")
    p.add_argument("file", metavar="FILE", help="the JSON file, or - for standard input")
    p.add_argument("--channel", metavar="C", default="default", help="its channel (default)")

    p = command("agents", teams.agents, "list the entry agent and the team agents")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command("tasks", teams.tasks, "list team tasks (running ones and the last 10)")
    p.add_argument("--all", action="store_true", help="list every task")
    p.add_argument("--json", action="store_true", help="print JSON")
    tasks = p.add_subparsers(dest="tasks_command", metavar="ACTION")
    q = tasks.add_parser("show", help="a task and its agent turns", description="show a task")
    q.add_argument("id", metavar="ID")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(handler=teams.show)
    q = tasks.add_parser("abort", help="stop a task", description="stop a task after its call")
    q.add_argument("id", metavar="ID")
    q.set_defaults(handler=teams.abort)

    p = command("new", commands.new, "end a channel's active conversation")
    p.add_argument("--channel", metavar="C", default="default")

    p = command("rename", commands.rename, "set a conversation's title (pinned)")
    p.add_argument("id", metavar="ID")
    p.add_argument("title", nargs="+", metavar="TITLE")

    p = command(
        "prune",
        commands.prune,
        "remove the oldest ended conversations beyond [conversation] max_retained",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be removed")

    p = command("events", commands.events, "print lifecycle events")
    p.add_argument("--conversation", metavar="ID")
    p.add_argument("--task", metavar="ID", help="only the events of this team task")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    number_option(p, "--limit", 100, "N", "how many past events to print first")

    p = command("plugins", commands.plugins, "list plugins, their hooks and tools")
    p.add_argument("--json", action="store_true")

    from . import mcp

    servers = sub.add_parser("mcp", help="list and try the MCP servers of config.toml")
    under = servers.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    p = command("list", mcp.mcp_list, "each MCP server, its state and its tools", under=under)
    p.add_argument("--json", action="store_true", help="one JSON array")
    p = command("call", mcp.mcp_call, "call one MCP tool and print the result", under=under)
    p.add_argument("server", metavar="SERVER")
    p.add_argument("tool", metavar="TOOL", help="the tool's name on its server")
    p.add_argument("--args", metavar="JSON", help="the arguments, a JSON object")
    return parser


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def number_option(
    parser: argparse.ArgumentParser, flag: str, default: float, metavar: str, help: str
) -> None:
    """A numeric option whose help ends with its default; an int default takes ints only."""
    parser.add_argument(
        flag,
        type=type(default),
        default=default,
        metavar=metavar,
        help=f"{help} (default {default:g})",
    )
