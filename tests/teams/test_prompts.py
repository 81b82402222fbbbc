"""What an agent turn is told about the turns left: English for every count."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from smarthole.teams.prompts import turn_request


@dataclass
class FakeTask:  # only what turn_request reads
    task: str
    agents: tuple[str, ...]
    max_turns: int


@pytest.mark.parametrize(
    ("max_turns", "said"),
    [
        (1, "This is turn 1 of at most 1; 0 turns remain after this one."),
        (2, "This is turn 1 of at most 2; 1 turn remains after this one."),
        (3, "This is turn 1 of at most 3; 2 turns remain after this one."),
    ],
)
def test_the_turns_left_are_counted_in_english(max_turns, said):
    request = turn_request(FakeTask("Find it", ("a", "b"), max_turns), 0, [])  # type: ignore[arg-type]
    assert said in request
