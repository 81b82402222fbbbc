"""search_conversations: the agent recalls what was said in other conversations."""

from __future__ import annotations

from smarthole.testing import text, tool_use
from tests.helpers import drop, finals, run_once


def test_the_agent_finds_what_another_conversation_said(home, fake, env):
    fake.add(text("Noted: the plumber comes on Tuesday."))
    drop(home, "The plumber Mario comes on Tuesday", "m1")
    run_once(home, env)
    earlier = finals(home)[0]["conversation"]
    fake.add(tool_use("search_conversations", {"query": "plumber"}))
    fake.add(text("On Tuesday."))
    drop(home, "when does the plumber come?", "m2", new_conversation=True)
    run_once(home, env)
    (result,) = fake.requests[-1].tool_results
    assert not result["is_error"]
    lines = result["content"].splitlines()
    assert lines[0] == "2 matches, best first:"
    assert all(f"conversation {earlier} (untitled), " in line for line in lines[1:])
    assert {line.split(" UTC, ")[1] for line in lines[1:]} == {
        "person: The **plumber** Mario comes on Tuesday",
        "agent: Noted: the **plumber** comes on Tuesday.",
    }
    # the asking conversation's own "when does the plumber come?" is not a match
    assert "come?" not in result["content"]


def test_nothing_found_and_bad_queries_are_answers_the_model_can_use(home, fake, env):
    fake.add(tool_use("search_conversations", {"query": "NEAR(", "limit": 500}))
    fake.add(tool_use("search_conversations", {"query": "   "}))
    fake.add(text("ok"))
    drop(home, "search please", "m1")
    run_once(home, env)
    first, second = (request.tool_results[0] for request in fake.requests[1:3])
    assert (first["is_error"], first["content"]) == (
        False,
        "No other conversation mentions 'NEAR('.",
    )
    assert second["is_error"] and "the search query is empty" in second["content"]
