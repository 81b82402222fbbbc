"""How commands declare themselves: the :class:`Commands` registrar and the parser it builds.

Each module of ``cli.commands`` gets a :class:`Commands` and adds its commands with their
options right beside their handlers; plugins add theirs the same way (``register_commands``).
The parser is a :class:`Parser`: a mistake shows the usage of the command it was made in, and
the nearest flag or command when one is close (``--wiat``: did you mean ``--wait``?).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

HOME_HELP = "the agent's folder (default: $SMARTHOLE_HOME, else ~/SmartHole)"
ID_HELP = "a conversation id or a unique prefix of one"

Handler = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors name what was meant.

    argparse hands a subcommand's unknown flags up to the top-level parser, which reports them
    under its own usage; here each command's parser refuses them itself, so the usage shown is
    the command's, followed by the nearest of its own flags.
    """

    _given: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._nearest_flags(extras)}")
        return parsed, extras

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # Where argparse checks a choice (a command, an ACTION, --format): add what was meant.
        # A private method, but the one place that sees the action and the value together
        # (Python 3.14's own suggest_on_error hooks in here too).
        if action.choices is None or value in action.choices:
            return
        if isinstance(action, argparse._SubParsersAction):
            # `--hme x ls`: the unknown flag made its value look like the command; name the flag.
            unknown = self._unknown_flags(self._given[: self._index(value)])
            if unknown:
                message = f"unrecognized arguments: {' '.join(unknown)}"
                raise argparse.ArgumentError(None, message + self._nearest_flags(unknown))
        choices = ", ".join(map(repr, action.choices))
        close = nearest(str(value), [str(c) for c in action.choices])
        hint = f", did you mean {_either([repr(c) for c in close])}?" if close else ""
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}{hint} (choose from {choices})"
        )

    def _index(self, value: Any) -> int:
        return self._given.index(value) if value in self._given else len(self._given)

    def _flags(self) -> list[str]:
        return [flag for action in self._actions for flag in action.option_strings]

    def _unknown_flags(self, words: Sequence[str]) -> list[str]:
        """The words that look like flags this parser does not have (abbreviations are known)."""
        flags = self._flags()

        def known(word: str) -> bool:
            if not word.startswith("--"):
                return word[:2] in flags  # -v, or a cluster such as -vv
            return any(flag.startswith(word.split("=")[0]) for flag in flags)

        return [word for word in words if word.startswith("-") and word != "-" and not known(word)]

    def _nearest_flags(self, words: Sequence[str]) -> str:
        """`` (did you mean --wait?)`` for the first flag among ``words`` with a near one."""
        flags = self._flags()
        for word in words:
            if word.startswith("-"):
                close = nearest(word.split("=")[0], flags)
                if close:
                    return f" (did you mean {_either(close)}?)"
        return ""


def nearest(word: str, candidates: Sequence[str]) -> list[str]:
    """The candidates close to ``word``, best first: those about as close as the closest
    (``instal``: ``install``, not also ``uninstall``)."""
    import difflib  # only a mistake needs it; --help does not

    close = difflib.get_close_matches(word, candidates, n=3)
    if not close:
        return []
    best = difflib.SequenceMatcher(None, word, close[0]).ratio()
    return [c for c in close if difflib.SequenceMatcher(None, word, c).ratio() >= best - 0.1]


def _either(words: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


# -- a command declared beside its handler, as click (and so llm) writes them -----------------

_OPTIONS = "_smarthole_options"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Option:
    """One ``add_argument`` call, written as a decorator of the handler that reads it."""

    flags: tuple[str, ...]
    settings: dict[str, Any]

    def __call__(self, handler: F) -> F:
        _declared_options(handler).insert(0, self)  # decorators apply bottom-up; help reads down
        return handler

    def add_to(self, parser: argparse._ActionsContainer) -> None:
        parser.add_argument(*self.flags, **self.settings)


@dataclass(frozen=True)
class OneOf:
    """Options of which a command takes at most one (``--conversation`` or ``--new``)."""

    options: tuple[Option, ...]

    def __call__(self, handler: F) -> F:
        _declared_options(handler).insert(0, self)
        return handler

    def add_to(self, parser: argparse._ActionsContainer) -> None:
        group = parser.add_mutually_exclusive_group()
        for declared in self.options:
            declared.add_to(group)


def option(*flags: str, **settings: Any) -> Option:
    """An option or a positional argument, with ``add_argument``'s own parameters."""
    return Option(flags, settings)


def one_of(*options: Option) -> OneOf:
    return OneOf(options)


def number(flag: str, default: float, metavar: str, help: str, *, above: bool = False) -> Option:
    """A numeric option whose help ends with its default; an int default takes ints only."""
    return option(
        flag,
        type=bounded(type(default), 0, above=above),
        default=default,
        metavar=metavar,
        help=f"{help} (default {default:g})",
    )


def _declared_options(handler: Callable[..., Any]) -> list[Option | OneOf]:
    found: list[Option | OneOf] | None = getattr(handler, _OPTIONS, None)
    if found is None:
        found = []
        setattr(handler, _OPTIONS, found)
    return found


@dataclass(frozen=True)
class Command:
    """A command as declared: its name, help and options, and its handler (still callable)."""

    name: str
    help: str
    handler: Handler
    options: tuple[Option | OneOf, ...] = ()
    aliases: tuple[str, ...] = ()
    home_help: str = HOME_HELP
    verbose: bool = True

    def __call__(self, args: argparse.Namespace) -> int:
        return self.handler(args)


def command(
    name: str,
    help: str,
    *,
    aliases: Sequence[str] = (),
    home_help: str = HOME_HELP,
    verbose: bool = True,
) -> Callable[[Handler], Command]:
    """Declare the decorated handler as command ``name``; its ``option`` decorators go below."""

    def declare(handler: Handler) -> Command:
        options = tuple(_declared_options(handler))
        return Command(name, help, handler, options, tuple(aliases), home_help, verbose)

    return declare


class Commands:
    """Adds commands to the parser: the ones declared with :func:`command`, and plugins'.

    Every command takes ``--home`` and ``-v``; its handler, ``handler(args) -> int``, is what
    ``main`` runs when the command is chosen.
    """

    def __init__(self, subparsers: argparse._SubParsersAction[Parser]) -> None:
        self._subparsers = subparsers

    def names(self) -> set[str]:
        """Every command name and alias added here so far."""
        return set(self._subparsers.choices)

    def add(self, declared: Command) -> Parser:
        """Add a command declared with :func:`command`; returns its parser."""
        parser = self.command(
            declared.name,
            declared.handler,
            declared.help,
            aliases=declared.aliases,
            home_help=declared.home_help,
            verbose=declared.verbose,
        )
        for each in declared.options:
            each.add_to(parser)
        return parser

    def command(
        self,
        name: str,
        handler: Handler | None,
        help: str,
        *,
        aliases: Sequence[str] = (),
        home_help: str = HOME_HELP,
        verbose: bool = True,
    ) -> Parser:
        """Add command ``name`` and return its parser, for its options (what plugins get).

        ``handler`` is None for a command whose subcommands have the handlers.
        """
        p = self._subparsers.add_parser(name, help=help, description=help, aliases=list(aliases))
        # SUPPRESS: a --home given before the command is not reset by the command's default.
        p.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS, help=home_help)
        if verbose:
            p.add_argument("-v", "--verbose", action="count", default=0, help="log more")
        if handler is not None:
            p.set_defaults(handler=handler)
        return p

    def group(self, name: str, help: str, *, dest: str) -> Commands:
        """A command that is only a name for its subcommands (``mcp list``, ``mcp call``)."""
        p = self._subparsers.add_parser(name, help=help)
        return Commands(p.add_subparsers(dest=dest, metavar="COMMAND", required=True))

    @staticmethod
    def under(parser: Parser, *, dest: str, metavar: str = "ACTION", required: bool) -> Commands:
        """The subcommands of the command ``parser`` (``tasks show``, ``service install``)."""
        return Commands(parser.add_subparsers(dest=dest, metavar=metavar, required=required))


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
