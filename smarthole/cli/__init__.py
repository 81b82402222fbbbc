"""The ``smarthole`` command: ``main(argv) -> int``, the only place errors become exit codes.

Exit codes: 0 success; 1 a request that could not be met (unknown id, a timeout, an error
reply); 2 the program cannot run as configured (bad config, no API key, a broken plugin,
another daemon running); 3 ``status``: the daemon is not running; 130 interrupted (Ctrl-C);
141 the reader of the output went away (``smarthole events | head``), quietly, as a shell
reports any command cut off by SIGPIPE.
Heavy modules are imported inside the commands so ``smarthole --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import stat
import sys
from collections.abc import Callable, Sequence
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
from .output import body, visible_stdout

logger = logging.getLogger("smarthole")

HOME_HELP = "the agent's folder (default: $SMARTHOLE_HOME, else ~/SmartHole)"
ID_HELP = "a conversation id or a unique prefix of one"
READER_GONE = 141  # 128 + SIGPIPE: the status a shell gives a command its pipe's reader left
USAGE_ERRORS = (ConfigError, PluginError, DaemonError, AlreadyRunning, MessageError, UsageError)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args is None:
        return 0
    configure_logging(args)
    try:
        with visible_stdout():  # stored text may hold escape sequences: shown, never sent
            result: int = args.handler(args)
            sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit
        return result
    except BrokenPipeError:
        if not _output_is_a_pipe():
            raise  # a pipe of something else: not the reader's doing, so a bug to see
        # Python ignores SIGPIPE, so the reader leaving is an exception; end as a tool
        # killed by it would, and point stdout at /dev/null so the flush at exit is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return READER_GONE
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except LookupFailed as exc:
        say(exc)
        return 1
    except USAGE_ERRORS as exc:
        say(exc)
        return 2
    except SmartholeError as exc:
        say(exc)
        return 1
    except OSError as exc:  # the system refused (a full disk, a folder we may not read): say so
        if getattr(args, "verbose", 0):
            raise  # -v: the traceback, to see where
        say(exc)
        return 1


def say(problem: BaseException) -> None:
    """The one line (or lines, for a config with several faults) a failure prints."""
    print(f"smarthole: {body(str(problem))}", file=sys.stderr)


def _output_is_a_pipe() -> bool:
    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (OSError, ValueError):  # closed, or replaced by an object with no descriptor
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def parse(argv: Sequence[str] | None) -> argparse.Namespace | None:
    """The parsed command line; None, having printed the help, when it names no command.

    The parser is not kept: the daemon runs for days after parsing.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return None
    return args


def configure_logging(args: argparse.Namespace) -> None:
    verbose = getattr(args, "verbose", 0)
    if args.command == "run":  # the daemon: journal/JSON formats, a log file, levels
        from pathlib import Path

        from ..daemon.logs import setup_logging

        level = args.log_level or ("debug" if verbose else "info")
        log_file = Path(args.log_file) if args.log_file else None
        setup_logging(level=level, fmt=args.log_format, log_file=log_file, verbose=bool(verbose))
        return
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


def lazy(target: str) -> Callable[[argparse.Namespace], int]:
    """The handler ``module.function`` of this package, imported when its command runs: the
    daemon (``run``) does not load what chat, service, export or mcp need (``command`` takes
    a handler or such a name)."""
    module, _, function = target.partition(".")

    def handler(args: argparse.Namespace) -> int:
        result: int = getattr(importlib.import_module(f".{module}", __name__), function)(args)
        return result

    return handler


def build_parser() -> argparse.ArgumentParser:
    from . import commands

    parser = argparse.ArgumentParser(
        prog="smarthole",
        description="Drop a file in a folder, get an answer from a Claude agent.",
        epilog="Run `smarthole demo` to see it work with no API key. Docs: README.md",
    )
    parser.add_argument("--version", action="version", version=f"smarthole {__version__}")
    parser.add_argument("--home", metavar="DIR", help=HOME_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(
        name: str,
        handler: Any,
        help: str,
        *,
        aliases: Sequence[str] = (),
        under: Any = None,
        home_help: str = HOME_HELP,
    ) -> Any:
        p = (under or sub).add_parser(name, help=help, description=help, aliases=list(aliases))
        # SUPPRESS: a --home given before the command is not reset by the command's default.
        p.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS, help=home_help)
        p.add_argument("-v", "--verbose", action="count", default=0, help="log more")
        p.set_defaults(handler=lazy(handler) if isinstance(handler, str) else handler)
        return p

    p = command("init", commands.init, "create the home folder and its config.toml")
    p.add_argument(
        "--force", action="store_true", help="replace config.toml (the old one is kept as .bak)"
    )

    p = command("run", commands.run, "run the daemon in the foreground")
    p.add_argument("--once", action="store_true", help="process everything runnable now, then exit")
    p.add_argument(
        "--log-format",
        choices=("text", "journal", "json"),
        help="text (with times), journal (syslog priorities; the default under systemd) or "
        "json (one object per line)",
    )
    p.add_argument("--log-file", metavar="PATH", help="also log to PATH (reopened after logrotate)")
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help="default: [daemon] log_level (info)",
    )

    p = command("send", commands.send, "drop a message into the inbox and print its id")
    p.add_argument("--channel", metavar="NAME", help="the channel (queue) of the message")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--conversation", metavar="ID", help="continue this conversation")
    target.add_argument("--new", action="store_true", help="start a new conversation")
    p.add_argument("--wait", action="store_true", help="wait for the reply and print it")
    number_option(p, "--timeout", 300.0, "SECONDS", "how long --wait waits", above=True)
    p.add_argument("text", nargs="+", help="the message (use - to read standard input)")

    command(
        "demo",
        commands.demo,
        "watch a scripted exchange against a bundled fake API",
        home_help="keep the demo's home in DIR (a new or empty folder) to look around after",
    )

    p = command("status", commands.status, "show the daemon, queue, deferred and failed work")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 with one line per problem (dead letters, stranded claims, an old queue, "
        "no daemon)",
    )
    p.add_argument(
        "--max-queue-age",
        type=bounded(float, 0),
        metavar="SECONDS",
        help="with --check: a problem when a message has waited longer",
    )

    command("reload", "service.reload", "make the running daemon re-read config.toml (SIGHUP)")

    p = command("service", "service.main", "run smarthole as a systemd or launchd user service")
    service_arguments(p)

    p = command("retry", commands.retry, "make deferred messages due and redrive dead ones")
    p.add_argument("ids", nargs="*", metavar="ID", help="message ids or unique prefixes")
    p.add_argument("--all", action="store_true", help="every deferred and dead message")

    p = command(
        "conversations",
        commands.conversations,
        "list conversations, most recent first",
        aliases=["ls"],
    )
    p.add_argument("--channel", metavar="C", help="only this channel's conversations")
    p.add_argument(
        "--all", action="store_true", help="include ended conversations older than 30 days"
    )
    p.add_argument("--json", action="store_true", help="a JSON list")
    p.add_argument("--limit", type=bounded(int, 1), metavar="N", help="at most N conversations")

    p = command("show", commands.show, "print a conversation's transcript")
    p.add_argument("id", metavar="ID", help=ID_HELP)
    p.add_argument("--usage", action="store_true", help="the tokens each turn used, and totals")
    p.add_argument("--json", action="store_true", help="with --usage: one JSON object")

    p = command("resume", "chat.resume", "pick a conversation and continue it in chat")
    p.add_argument("id", nargs="?", metavar="ID", help=ID_HELP + "; without one, pick from a list")

    p = command("chat", "chat.chat", "talk to the agent in this terminal")
    p.add_argument("--channel", metavar="C", default=None, help="the channel (default: chat)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--conversation", metavar="ID", help="continue this conversation")
    target.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the channel's most recent conversation",
    )
    number_option(p, "--timeout", 600.0, "SECONDS", "how long to wait for each reply", above=True)

    p = command("export", "transfer.export", "export a conversation as JSON or Markdown")
    p.add_argument("id", metavar="ID", help=ID_HELP)
    p.add_argument(
        "--format",
        choices=("json", "markdown", "context"),
        default="json",
        help="json (default), markdown, or context: the entry agent and the turns only",
    )

    p = command("import", "transfer.import_context", "import a context JSON as a new conversation")
    p.add_argument("file", metavar="FILE", help="the JSON file, or - for standard input")
    p.add_argument("--channel", metavar="C", default="default", help="its channel (default)")

    p = command("agents", "teams.agents", "list the entry agent and the team agents")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command("tasks", "teams.tasks", "list team tasks (running ones and the last 10)")
    p.add_argument("--all", action="store_true", help="list every task")
    p.add_argument("--json", action="store_true", help="print JSON")
    actions = p.add_subparsers(dest="tasks_command", metavar="ACTION")
    p = command("show", "teams.show", "a task and its agent turns", under=actions)
    p.add_argument("id", metavar="ID", help="the task's id or a unique prefix")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = command("abort", "teams.abort", "stop a task after the model call in flight", under=actions)
    p.add_argument("id", metavar="ID", help="the task's id or a unique prefix")

    p = command("new", commands.new, "end a channel's active conversation")
    p.add_argument(
        "--channel", metavar="C", default="default", help="the channel (default: default)"
    )

    p = command("rename", commands.rename, "set a conversation's title (pinned)")
    p.add_argument("id", metavar="ID", help=ID_HELP)
    p.add_argument("title", nargs="+", metavar="TITLE", help="the new title")

    p = command(
        "prune",
        commands.prune,
        "remove the oldest ended conversations beyond [conversation] max_retained",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be removed")

    p = command("events", commands.events, "print lifecycle events")
    p.add_argument("--conversation", metavar="ID", help="only this conversation's events")
    p.add_argument("--task", metavar="ID", help="only the events of this team task")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    number_option(p, "--limit", 100, "N", "how many past events to print first")

    p = command("plugins", commands.plugins, "list plugins, their hooks and tools")
    p.add_argument("--json", action="store_true", help="a JSON list")

    servers = sub.add_parser("mcp", help="list and try the MCP servers of config.toml")
    under = servers.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    p = command("list", "mcp.mcp_list", "each MCP server, its state and its tools", under=under)
    p.add_argument("--json", action="store_true", help="one JSON array")
    p = command("call", "mcp.mcp_call", "call one MCP tool and print the result", under=under)
    p.add_argument("server", metavar="SERVER", help="the server's name in config.toml")
    p.add_argument("tool", metavar="TOOL", help="the tool's name on its server")
    p.add_argument("--args", metavar="JSON", help="the arguments, a JSON object")
    return parser


def service_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``service`` subcommands and their options (run by ``service.main``)."""
    sub = parser.add_subparsers(dest="service_command", metavar="ACTION", required=True)

    def action(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS, help=HOME_HELP)
        p.add_argument(
            "--name",
            metavar="NAME",
            help="run several homes side by side: the unit is smarthole-NAME",
        )
        return p

    p = action("install", "install and start smarthole as a user service")
    p.add_argument(
        "--dry-run", action="store_true", help="print the files and commands; change nothing"
    )
    p.add_argument("--force", action="store_true", help="replace an installed unit of that name")
    p.add_argument("--no-start", action="store_true", help="write the files; run nothing")
    action("uninstall", "stop, disable and remove the service")
    action("status", "the service manager's view, then `smarthole status`")


def number_option(
    parser: argparse.ArgumentParser,
    flag: str,
    default: float,
    metavar: str,
    help: str,
    *,
    above: bool = False,
) -> None:
    """A numeric option whose help ends with its default; an int default takes ints only."""
    parser.add_argument(
        flag,
        type=bounded(type(default), 0, above=above),
        default=default,
        metavar=metavar,
        help=f"{help} (default {default:g})",
    )


def bounded(kind: type[float], minimum: float, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` that is at least ``minimum`` (or ``above`` it)."""

    def parse(text: str) -> float:
        value = kind(text)  # a ValueError: argparse says "invalid int value: 'x'"
        if value < minimum or (above and value == minimum):
            raise argparse.ArgumentTypeError(
                f"must be {'more than' if above else 'at least'} {minimum:g}, not {text}"
            )
        return value

    parse.__name__ = kind.__name__
    return parse
