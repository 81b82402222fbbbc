"""Every option of every command says what it does."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from smarthole.cli import build_parser


def walk(parser: argparse.ArgumentParser, path: str = "smarthole") -> Iterator[tuple[str, str]]:
    """``(command path, option)`` for every option, positional and subcommand without help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if not choice.help:
                    yield path, f"subcommand {choice.dest}"
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # aliases share a parser
                    seen.add(id(sub))
                    yield from walk(sub, f"{path} {name}")
        elif isinstance(action, argparse._HelpAction | argparse._VersionAction):
            continue
        elif not action.help or action.help == argparse.SUPPRESS:
            yield path, "/".join(action.option_strings) or action.dest


def test_every_option_has_help_text():
    missing = [f"{path}: {option}" for path, option in walk(build_parser())]
    assert not missing, "options without help:\n" + "\n".join(missing)


def test_the_walk_finds_an_option_without_help():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers().add_parser("x", help="x")
    sub.add_argument("--quiet", action="store_true")
    assert list(walk(parser)) == [("smarthole x", "--quiet")]
