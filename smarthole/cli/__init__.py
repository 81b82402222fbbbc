"""The ``smarthole`` command: ``main(argv) -> int``, the only place errors become exit codes.

The commands declare themselves, beside their handlers, in ``cli.commands``; installed plugins
add theirs through ``register_commands``. What each exit status means is :class:`ExitCode`'s:
success; a request that could not be met (unknown id, a timeout, an error reply); the program
cannot run as configured (bad config, no API key, a broken plugin, another daemon running);
``status`` finds no daemon; interrupted (Ctrl-C); and the reader of the output went away
(``smarthole events | head``), quietly, as a shell reports any command cut off by SIGPIPE.
Heavy modules are imported inside the handlers so ``smarthole --help`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import stat
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import (
    AlreadyRunning,
    ConfigError,
    DaemonError,
    ExitCode,
    LookupFailed,
    MessageError,
    PluginError,
    SmartholeError,
    UsageError,
)
from .commands import add_plugin_commands, register_all
from .output import body, visible_stdout
from .parser import HOME_HELP, Commands, Parser

logger = logging.getLogger("smarthole")

USAGE_ERRORS = (ConfigError, PluginError, DaemonError, AlreadyRunning, MessageError, UsageError)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args is None:
        return ExitCode.OK
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
        return ExitCode.READER_GONE
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return ExitCode.INTERRUPTED
    except LookupFailed as exc:
        say(exc)
        return ExitCode.FAILED
    except USAGE_ERRORS as exc:
        say(exc)
        return ExitCode.USAGE
    except SmartholeError as exc:
        say(exc)
        return ExitCode.FAILED
    except OSError as exc:  # the system refused (a full disk, a folder we may not read): say so
        if getattr(args, "verbose", 0):
            raise  # -v: the traceback, to see where
        say(exc)
        return ExitCode.FAILED


def say(problem: BaseException | str) -> None:
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
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    if not getattr(args, "command", None):
        parser.print_help()
        return None
    return args


def build_parser(words: Sequence[str] | None = None) -> Parser:
    """Every command: smarthole's own, then those of installed plugins (``register_commands``).

    ``words`` is the command line the parser is for: when it names one of smarthole's own
    commands, no plugin is loaded, since none may take such a name (so ``run`` and ``send``
    start as fast as they can). A plugin that fails to add its commands costs only the
    plugins' commands: one line on stderr says so, and smarthole's own commands still work
    (``run`` then refuses to start, naming the plugin, as it always does).
    """
    parser, commands = _own_commands()
    if words is not None and _command_word(words) in commands.names():
        return parser
    try:
        add_plugin_commands(commands)
    except PluginError as exc:
        say(f"{exc}; the commands of plugins are left out")
        parser, _ = _own_commands()  # without what the plugins added before one failed
    return parser


def _own_commands() -> tuple[Parser, Commands]:
    parser = Parser(
        prog="smarthole",
        description="Drop a file in a folder, get an answer from a Claude agent.",
        epilog="Run `smarthole demo` to see it work with no API key. Docs: README.md",
    )
    parser.add_argument("--version", action="version", version=f"smarthole {__version__}")
    parser.add_argument("--home", metavar="DIR", help=HOME_HELP)
    commands = Commands(parser.add_subparsers(dest="command", metavar="COMMAND"))
    register_all(commands)
    return parser, commands


def _command_word(words: Sequence[str]) -> str | None:
    """The word in the command's place: the first that is not an option or ``--home``'s
    value; None when there is none, or ``--help`` comes first (it lists every command)."""
    value_next = False
    for word in words:
        if value_next:
            value_next = False
        elif word in ("-h", "--help"):
            return None
        elif word.startswith("-") and word != "-":
            value_next = "=" not in word and len(word) > 3 and "--home".startswith(word)
        else:
            return word
    return None


def configure_logging(args: argparse.Namespace) -> None:
    verbose = getattr(args, "verbose", 0)
    if args.command == "run":  # the daemon: journal/JSON formats, a log file, levels
        from pathlib import Path

        from ..daemon.logs import setup_logging

        level = args.log_level or ("debug" if verbose else "info")
        log_file = Path(args.log_file) if args.log_file else None
        setup_logging(level=level, fmt=args.log_format, log_file=log_file, verbose=bool(verbose))
        return
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    )
    if not verbose:
        for noisy in ("httpx2", "httpcore2", "anthropic", "mcp"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        # watchdog complains when events race its own shutdown; its events are only hints.
        logging.getLogger("watchdog").setLevel(logging.CRITICAL)
