"""A human turn and a team agent's turn are one implementation of the loop's protocol where
they do the same: recording each step, the approval gate, the tools' context."""

from __future__ import annotations

import inspect

import pytest

from smarthole.agent.loop import TurnSession
from smarthole.agent.recorder import RecordedTurn
from smarthole.pipeline.turn import TurnRun
from smarthole.teams.session import AgentTurnSession

SHARED = (
    "system",
    "started_tools",
    "record_assistant",
    "approval",
    "outcome_unknown",
    "record_tool_start",
    "record_tool_result",
    "tool_context",
)


@pytest.mark.parametrize("name", SHARED)
def test_both_kinds_of_turn_run_the_same_method(name):
    assert getattr(TurnRun, name) is getattr(RecordedTurn, name)
    assert getattr(AgentTurnSession, name) is getattr(RecordedTurn, name)


@pytest.mark.parametrize("kind", [TurnRun, AgentTurnSession])
def test_each_kind_of_turn_has_the_whole_protocol(kind):
    wanted = {name for name, _ in inspect.getmembers(TurnSession, inspect.isfunction)} - set(
        dir(object)
    )
    assert wanted <= set(dir(kind))
    assert kind.tool_control is not RecordedTurn.tool_control
