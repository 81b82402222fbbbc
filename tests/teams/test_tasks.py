"""Agent teams through the daemon: start_task, turns, finish_task, the human conversation."""

from __future__ import annotations

import json

import pytest

from smarthole.app import App
from smarthole.home import Home
from smarthole.testing import text, tool_use
from tests.helpers import db, drop, finals, run_once, write_config

TEAM = {
    "researcher": {"description": "Finds facts in the notes", "instructions": "Research well."},
    "critic": {"description": "Checks the facts", "instructions": "Be critical."},
}


@pytest.fixture
def team_home(home):
    write_config(home, agents=TEAM)
    return home


def start_task(task="Find the capital of France", agents=("researcher", "critic"), **more):
    return tool_use("start_task", {"task": task, "agents": list(agents), **more})


def test_the_entry_agent_hands_a_task_to_agents_that_take_turns(team_home, fake, env):
    fake.add(start_task(max_turns=4), entry_agent=True)
    fake.add(text("Paris, according to geography.md."), agent="researcher")
    fake.add(text("Confirmed: Paris."), agent="critic")
    fake.add(tool_use("finish_task", {"result": "The capital is Paris."}), agent="researcher")
    fake.add(text("Done."), agent="researcher")
    fake.add(text("The team says: Paris."), entry_agent=True)
    drop(team_home, "What is the capital of France? Ask the team.", "m1")
    run_once(team_home, env)

    (reply,) = finals(team_home)
    assert reply.text == "The team says: Paris."
    entry_calls = [r for r in fake.requests if r.agent is None]
    result = entry_calls[-1].tool_results[0]
    assert result["content"].startswith("completed after 3 of 4 turns\n\nThe capital is Paris.")
    (task,) = db(team_home).execute("SELECT * FROM tasks")
    assert (task["status"], task["max_turns"]) == ("completed", 4)
    turns = db(team_home).execute("SELECT idx, agent, text FROM task_turns ORDER BY idx")
    assert [(t["idx"], t["agent"]) for t in turns] == [
        (0, "researcher"),
        (1, "critic"),
        (2, "researcher"),
    ]
    # the human conversation holds the person, the entry agent and start_task: no agent turn
    stored = db(team_home).execute("SELECT content FROM messages").fetchall()
    everything = " ".join(row["content"] for row in stored)
    assert "start_task" in everything
    assert "Confirmed: Paris." not in everything
    # each agent turn ran with its own prompt: the first got the task, the second the transcript
    critic = next(r for r in fake.requests if r.agent == "critic")
    assert "## Turn 1: researcher\nParis, according to geography.md." in critic.last_user_text
    assert "Be critical." in critic.system_text
    assert critic.tools == ["finish_task"]
    types = [row["type"] for row in db(team_home).execute("SELECT type FROM events ORDER BY id")]
    assert types.count("agent_turn_started") == types.count("agent_turn_finished") == 3
    assert types.count("task_started") == types.count("task_finished") == 1
    (event,) = db(team_home).execute("SELECT * FROM events WHERE type = 'task_finished'")
    data = json.loads(event["data"])
    assert data == {"task": task["id"], "status": "completed", "agent_turns": 3}
    assert event["turn"] == 1 and event["conversation_id"] == task["conversation_id"]


def test_a_task_ends_after_max_turns_with_the_last_turn_as_its_result(team_home, fake, env):
    fake.add(start_task(max_turns=3), entry_agent=True)
    fake.add(text("one"), agent="researcher")
    fake.add(text("two"), agent="critic")
    fake.add(text("three"), agent="researcher")
    fake.add(text("ok"), entry_agent=True)
    drop(team_home, "go", "m1")
    run_once(team_home, env)
    result = [r for r in fake.requests if r.agent is None][-1].tool_results[0]["content"]
    assert result == "completed after 3 of 3 turns\n\nthree"
    third = [r for r in fake.requests if r.agent == "researcher"][-1]
    assert "This is turn 3 of at most 3; 0 turns remain after this one." in third.last_user_text
    first = next(r for r in fake.requests if r.agent == "researcher")
    assert "You go first. 2 agents take part (the others: critic)." in first.last_user_text


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (
            {"agents": ["nobody"]},
            "unknown agent 'nobody'; the configured agents: researcher, critic",
        ),
        ({"agents": []}, "name at least one agent; the configured agents: researcher, critic"),
        ({"agents": ["critic", "critic"]}, "agent 'critic' is listed more than once"),
        ({"max_turns": 0}, "max_turns must be between 1 and 50 (got 0)"),
        ({"max_turns": 51}, "max_turns must be between 1 and 50 (got 51)"),
        ({"task": "  "}, "the task is empty"),
    ],
)
def test_a_bad_request_is_a_tool_error_the_model_can_correct(
    team_home, fake, env, arguments, problem
):
    fake.add(
        tool_use("start_task", {"task": "t", "agents": ["critic"], **arguments}), entry_agent=True
    )
    fake.add(text("sorry"), entry_agent=True)
    drop(team_home, "go", "m1")
    run_once(team_home, env)
    (result,) = fake.requests[-1].tool_results
    assert result["is_error"] is True
    assert result["content"] == f"Error: {problem}"
    assert not db(team_home).execute("SELECT * FROM tasks").fetchall()


def test_more_agents_than_max_agents_is_refused(home, fake, env):
    agents = {f"a{i}": {"description": f"agent {i}"} for i in range(3)}
    write_config(home, agents=agents, teams={"max_agents": 2})
    fake.add(tool_use("start_task", {"task": "t", "agents": list(agents)}), entry_agent=True)
    fake.add(text("sorry"), entry_agent=True)
    drop(home, "go", "m1")
    run_once(home, env)
    (result,) = fake.requests[-1].tool_results
    assert result["content"] == "Error: at most 2 agents may take part (3 named)"


def test_start_task_is_offered_only_when_agents_are_configured(home, fake, env):
    fake.default = text("hi")
    drop(home, "hello", "m1")
    run_once(home, env)
    assert "start_task" not in fake.requests[0].tools
    assert "finish_task" not in fake.requests[0].tools
    write_config(home, agents=TEAM)
    drop(home, "hello again", "m2")
    run_once(home, env)
    offered = fake.requests[-1].body["tools"]
    (start,) = [tool for tool in offered if tool["name"] == "start_task"]
    assert "- researcher: Finds facts in the notes" in start["description"]
    assert "- critic: Checks the facts" in start["description"]
    assert "finish_task" not in fake.requests[-1].tools


def test_the_team_tools_are_a_built_in_plugin_like_any_other(team_home, fake, env):
    app = App.load(Home(team_home))
    try:
        assert app.plugins.info["teams"].source == "built-in"
        assert app.plugins.hook_names("teams") == ["register_tools"]
        assert {t.name for t in app.tools if t.plugin == "teams"} == {"start_task", "finish_task"}
    finally:
        app.close()
    write_config(team_home, agents=TEAM, plugins={"disabled": ["teams"]})
    fake.default = text("hi")
    drop(team_home, "hello", "m1")
    run_once(team_home, env)
    assert not {"start_task", "finish_task"} & set(fake.requests[0].tools)


def test_each_agent_runs_with_its_own_model_tools_and_instructions_file(home, fake, env):
    (home / "agents").mkdir()
    (home / "agents" / "reader.md").write_text("You read notes carefully.\n")
    write_config(
        home,
        agents={
            "reader": {
                "description": "Reads notes",
                "instructions_file": "agents/reader.md",
                "model": "claude-sonnet-4-6",
                "tools": ["read_file", "list_files"],
            }
        },
    )
    (home / "workspace" / "a.md").write_text("the answer is 42")
    fake.add(
        tool_use("start_task", {"task": "read a.md", "agents": ["reader"], "max_turns": 1}),
        entry_agent=True,
    )
    fake.add(tool_use("read_file", {"path": "a.md"}), agent="reader")
    fake.add(text("It says 42."), agent="reader")
    fake.add(text("42"), entry_agent=True)
    drop(home, "what does a.md say?", "m1")
    run_once(home, env)
    reader = [r for r in fake.requests if r.agent == "reader"]
    assert reader[0].model == "claude-sonnet-4-6"
    assert sorted(reader[0].tools) == ["finish_task", "list_files", "read_file"]
    assert reader[0].system_text.startswith("You read notes carefully.")
    assert "the answer is 42" in reader[1].tool_results[0]["content"]
    assert next(r for r in fake.requests if r.agent is None).model == "claude-haiku-4-5"


def test_an_inbox_file_naming_agents_runs_the_team_and_replies_with_its_result(
    team_home, fake, env
):
    fake.add(text("Paris."), agent="researcher")
    fake.add(tool_use("finish_task", {"result": "Paris is the capital."}), agent="critic")
    fake.add(text("agreed"), agent="critic")
    drop(team_home, "Capital of France?", "m1", agents=["researcher", "critic"], max_turns=4)
    run_once(team_home, env)
    (reply,) = finals(team_home)
    assert (reply["kind"], reply.text) == ("response", "Paris is the capital.")
    assert all(r.agent is not None for r in fake.requests)
    (task,) = db(team_home).execute("SELECT * FROM tasks")
    assert task["started_by"] == f"{task['conversation_id']}:m1"
    assert task["task"] == "Capital of France?"
    kinds = [row["kind"] for row in db(team_home).execute("SELECT kind FROM messages ORDER BY id")]
    assert kinds == ["user", "assistant"]


def test_a_bad_team_request_in_an_inbox_file_gets_an_error_reply_and_no_retry(team_home, fake, env):
    drop(team_home, "Do it", "m1", agents=["ghost"])
    run_once(team_home, env)
    (reply,) = finals(team_home)
    assert reply["kind"] == "error"
    assert "unknown agent 'ghost'; the configured agents: researcher, critic" in reply.text
    assert not fake.requests
    (entry,) = db(team_home).execute("SELECT status, attempts FROM inbox")
    assert (entry["status"], entry["attempts"]) == ("dead", 1)


def test_a_task_whose_human_turn_dies_fails_with_it(home, fake, env):
    from smarthole.testing import error

    write_config(home, agents=TEAM, retry={"max_attempts": 1})
    fake.add(start_task(max_turns=4), entry_agent=True)
    fake.add(text("r1"), agent="researcher")
    fake.add(error(400, "invalid_request_error", "bad request"), agent="critic")
    drop(home, "go", "m1")
    run_once(home, env)
    (reply,) = finals(home)
    assert reply["kind"] == "error"
    (task,) = db(home).execute("SELECT id, status, note FROM tasks")
    assert task["status"] == "failed" and task["note"].startswith("failed: ")
    (event,) = db(home).execute("SELECT * FROM events WHERE type = 'task_finished'")
    assert json.loads(event["data"]) == {"task": task["id"], "status": "failed", "agent_turns": 1}
    assert event["channel"] == "default"
