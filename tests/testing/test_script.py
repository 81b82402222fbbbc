"""The bundled fake's /fake commands (docs/fake.md), through the real daemon: what a person
types in a message makes the fake model call a tool, start a team task, ask, or say."""

from __future__ import annotations

import pytest

from smarthole.testing.script import parse, title_of
from tests.helpers import drop, read_outbox, run_once, write_config

TEAM = {
    "researcher": {"description": "Finds facts", "instructions": "Research."},
    "critic": {"description": "Checks facts", "instructions": "Be critical."},
}


@pytest.fixture
def scripted_fake(fake):
    from smarthole.testing.script import scripted

    fake.default = scripted
    return fake


def replies(home) -> list[str]:
    return [item.text for item in read_outbox(home)]


def test_a_tool_command_calls_the_tool_with_its_arguments(home, scripted_fake, env):
    drop(home, '/fake tool write_file path=notes/a.md content="hi there"', "m1")
    run_once(home, env)
    assert (home / "workspace" / "notes" / "a.md").read_text() == "hi there"
    (reply,) = replies(home)
    assert reply.startswith("Done: write_file said ")


def test_a_team_command_starts_a_task_and_each_agent_takes_a_turn(home, scripted_fake, env):
    write_config(home, agents=TEAM)
    drop(home, "/fake team researcher,critic: check my trip", "m1")
    run_once(home, env)
    agents = [r.agent for r in scripted_fake.requests if r.agent]
    assert agents == ["researcher", "critic"]
    (reply,) = replies(home)
    assert reply.startswith("The team finished.") and "critic: my part" in reply


def test_an_ask_command_asks_and_the_next_message_is_the_answer(home, scripted_fake, env):
    drop(home, "/fake ask Which list?", "m1")
    run_once(home, env)
    drop(home, "Groceries.", "m2")
    run_once(home, env)
    kinds = [(item["kind"], item.text) for item in read_outbox(home)]
    assert kinds[0] == ("question", "Which list?")
    assert kinds[-1] == ("response", "Thanks, noted: Groceries.")


@pytest.mark.parametrize(
    ("message", "reply"),
    [
        ("/fake say Hello there", "Hello there"),
        ("just words", "echo: just words"),
        ("/fake tool", "The fake did not understand: /fake tool needs a tool name"),
        ("/fake dance", "The fake knows /fake say, tool, team and ask, not 'dance'."),
    ],
)
def test_say_echo_and_what_it_does_not_understand(home, scripted_fake, env, message, reply):
    drop(home, message, "m1")
    run_once(home, env)
    assert replies(home)[0].startswith(reply)


@pytest.mark.parametrize(
    ("first", "title"),
    [
        ("/fake tool write_file path=a.md content=hi", "Using write_file"),
        ("/fake team researcher,critic: check my trip to Lisbon", "Check my trip to Lisbon"),
        ("/fake ask Which list should I use today, please?", "Which list should I use today"),
        ("Add milk to my list, please.", "Add milk to my list, please"),
        ("", "A short conversation"),
    ],
)
def test_titles_read_like_titles(first, title):
    assert title_of(first) == title


def test_only_a_first_line_starting_with_the_prefix_is_a_command():
    assert parse("/fakes are fun") is None
    assert parse("hello\n/fake say hi") is None
    command = parse("  /fake TOOL read_file path=a.md\nmore")
    assert command is not None and (command.verb, command.rest) == ("tool", "read_file path=a.md")
