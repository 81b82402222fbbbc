"""The command line: every option of every command says what it does, and a mistake says what
was meant."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

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


# -- a mistake on the command line: the usage of its command, and what was probably meant ----


@pytest.mark.parametrize(
    ("argv", "usage", "error"),
    [
        (
            ["send", "--wiat", "x"],
            "smarthole send",
            "smarthole send: error: unrecognized arguments: --wiat (did you mean --wait?)",
        ),
        (
            ["lsit"],
            "smarthole",
            "smarthole: error: argument COMMAND: invalid choice: 'lsit', did you mean 'ls'? "
            "(choose from 'init', 'run',",
        ),
        (
            ["--hme", "x", "ls"],
            "smarthole",
            "smarthole: error: unrecognized arguments: --hme (did you mean --home?)",
        ),
        (
            ["ls", "--hme=x"],
            "smarthole conversations",
            "smarthole conversations: error: unrecognized arguments: --hme=x "
            "(did you mean --home?)",
        ),
        (
            ["tasks", "shwo", "1f"],
            "smarthole tasks",
            "argument ACTION: invalid choice: 'shwo', did you mean 'show'? "
            "(choose from 'show', 'abort')",
        ),
        (
            ["service", "instal"],
            "smarthole service",
            "invalid choice: 'instal', did you mean 'install'? (choose from",
        ),
        (
            ["export", "--format", "mardown", "1f"],
            "smarthole export",
            "argument --format: invalid choice: 'mardown', did you mean 'markdown'?",
        ),
        (
            ["events", "--follw"],
            "smarthole events",
            "unrecognized arguments: --follw (did you mean --follow?)",
        ),
    ],
)
def test_a_mistake_shows_its_commands_usage_and_the_nearest_name(capsys, argv, usage, error):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(f"usage: {usage} [-h]")
    assert error in err


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["bogus"], "argument COMMAND: invalid choice: 'bogus' (choose from 'init'"),
        (["ls", "--zzz"], "smarthole conversations: error: unrecognized arguments: --zzz\n"),
    ],
)
def test_nothing_near_suggests_nothing(capsys, argv, error):
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert error in err and "did you mean" not in err
