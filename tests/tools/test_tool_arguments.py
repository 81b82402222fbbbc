"""A tool's arguments are taken as the model wrote them: an integer is an integer.

Lax validation would turn ``"7"`` into 7 and ``true`` into 1 behind the model's back; strict
validation makes them a tool error the model reads and corrects.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from smarthole.testing import text, tool_use
from smarthole.tools import build_tool
from tests.helpers import drop, run_once, write_config


@dataclass
class Span:
    start: int
    end: int


def measure(count: int, scale: float = 1.0, span: Span | None = None) -> str:
    """Measure something.

    :param count: How many.
    :param scale: How much.
    :param span: Where.
    """
    return f"{count} {scale} {span}"


@pytest.fixture
def tool():
    return build_tool(measure, plugin="tests")


@pytest.mark.parametrize(
    "arguments",
    [{"count": "7"}, {"count": True}, {"count": False}, {"count": 7.0}, {"count": 7.5}],
    ids=["string", "true", "false", "float", "fraction"],
)
def test_an_integer_argument_takes_only_an_integer(tool, arguments):
    result = tool.call(arguments, None)
    assert result.is_error
    assert "invalid arguments for measure: count: Input should be a valid integer" in result.text


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"count": 7}, "7 1.0 None"),
        ({"count": 7, "scale": 2}, "7 2.0 None"),  # an integer is a number
        ({"count": 1, "span": {"start": 1, "end": 2}}, "1 1.0 Span(start=1, end=2)"),
    ],
)
def test_well_typed_arguments_are_taken(tool, arguments, said):
    assert tool.call(arguments, None).text == said


@pytest.mark.parametrize("max_turns", ["7", True])
def test_start_task_refuses_a_max_turns_that_is_not_an_integer(home, fake, env, max_turns):
    write_config(home, agents={"critic": {"description": "Checks"}})
    fake.add(tool_use("start_task", {"task": "t", "agents": ["critic"], "max_turns": max_turns}))
    fake.add(text("I will use a number."))
    drop(home, "go", "m1")
    run_once(home, env)
    (result,) = fake.requests[-1].tool_results
    assert result["is_error"] is True
    assert "max_turns: Input should be a valid integer" in result["content"]


def test_a_wrapped_first_paragraph_stays_one_and_the_listing_shows_its_first_sentence():
    def look(query: str) -> str:
        """Search what was said in other conversations: the person's messages, your replies,
        tool results and titles. Best matches first.

        Then get_conversation reads one.

        :param query: what to look for
        """
        return query

    tool = build_tool(look, plugin="p")
    assert tool.description.splitlines()[:2] == [
        "Search what was said in other conversations: the person's messages, your replies,",
        "tool results and titles. Best matches first.",
    ]
    assert tool.summary == (
        "Search what was said in other conversations: the person's messages, your replies, "
        "tool results and titles."
    )
