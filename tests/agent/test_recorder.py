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
    "outcome_unknown",
    "record_tool_start",
    "record_tool_result",
    "tool_context",
    "meter",
)


@pytest.mark.parametrize("name", SHARED)
def test_both_kinds_of_turn_run_the_same_method(name):
    assert getattr(TurnRun, name) is getattr(RecordedTurn, name)
    assert getattr(AgentTurnSession, name) is getattr(RecordedTurn, name)


def test_only_a_human_turn_asks_a_replay_first():
    """A replayed turn's recorded results stand in before the gate (issue 47); a team agent's
    turn is never replayed, so it asks the gate as the shared method does."""
    assert TurnRun.approval is not RecordedTurn.approval
    assert AgentTurnSession.approval is RecordedTurn.approval


@pytest.mark.parametrize("kind", [TurnRun, AgentTurnSession])
def test_each_kind_of_turn_has_the_whole_protocol(kind):
    wanted = {name for name, _ in inspect.getmembers(TurnSession, inspect.isfunction)} - set(
        dir(object)
    )
    assert wanted <= set(dir(kind))
    assert kind.tool_control is not RecordedTurn.tool_control
