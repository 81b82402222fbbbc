"""The team commands: agents, tasks, tasks show / abort, events --task, import / export."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.testing import hold, text
from tests.helpers import db, drop, finals, run_once, wait_for, write_config
from tests.teams.test_tasks import TEAM, start_task


def cli(home: Path, *args: str) -> int:
    return main([args[0], "--home", str(home), *args[1:]])


@pytest.fixture
def team_home(home):
    write_config(home, agents=TEAM)
    return home


def finished_task(team_home, fake, env) -> str:
    fake.add(start_task(max_turns=2), entry_agent=True)
    fake.add(text("Paris."), agent="researcher")
    fake.add(text("Confirmed."), agent="critic")
    fake.add(text("Paris it is."), entry_agent=True)
    drop(team_home, "Capital of France? Ask the team.", "m1")
    run_once(team_home, env)
    (row,) = db(team_home).execute("SELECT id FROM tasks")
    return str(row["id"])


def test_agents_lists_the_entry_agent_first(team_home, capsys):
    assert cli(team_home, "agents", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in listed] == ["assistant", "researcher", "critic"]
    assert "start_task" in listed[0]["tools"]
    assert listed[1] == {
        "name": "researcher",
        "role": "team",
        "description": "Finds facts in the notes",
        "model": "claude-haiku-4-5",
        "tools": ["finish_task"],
    }
    assert cli(team_home, "agents") == 0
    out = capsys.readouterr().out
    assert out.startswith("assistant (entry agent): the agent you talk to\n")
    assert "critic: Checks the facts" in out


def test_tasks_and_tasks_show(team_home, fake, env, capsys):
    task_id = finished_task(team_home, fake, env)
    capsys.readouterr()
    assert cli(team_home, "tasks", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["id"], listed["status"], listed["turns_done"]) == (task_id, "completed", 2)
    assert cli(team_home, "tasks") == 0
    line = capsys.readouterr().out
    assert task_id in line and "completed" in line and "turns=2/2" in line
    assert "Capital of France? Ask the team." not in line  # the task text, not the message
    assert cli(team_home, "tasks", "show", task_id[:6], "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "completed"
    assert shown["agents"] == ["researcher", "critic"]
    assert shown["max_turns"] == 2
    assert shown["turns"] == [
        {"agent": "researcher", "index": 0, "text": "Paris."},
        {"agent": "critic", "index": 1, "text": "Confirmed."},
    ]
    assert cli(team_home, "tasks", "show", task_id) == 0
    out = capsys.readouterr().out
    assert "--- turn 1: researcher\nParis." in out and "--- turn 2: critic\nConfirmed." in out
    assert cli(team_home, "tasks", "show", "nope") == 1


def test_tasks_lists_running_ones_and_the_last_ten_unless_all(team_home, fake, env, capsys):
    fake.default = text("ok")
    for index in range(12):
        fake.add(start_task(task=f"task {index}", agents=["critic"], max_turns=1), entry_agent=True)
        fake.add(text("done"), agent="critic")
        drop(team_home, f"go {index}", f"m{index}")
        run_once(team_home, env)
    capsys.readouterr()
    assert cli(team_home, "tasks", "--json") == 0
    assert len(json.loads(capsys.readouterr().out)) == 10
    assert cli(team_home, "tasks", "--all", "--json") == 0
    assert len(json.loads(capsys.readouterr().out)) == 12


def test_events_can_be_filtered_by_task(team_home, fake, env, capsys):
    task_id = finished_task(team_home, fake, env)
    capsys.readouterr()
    assert cli(team_home, "events", "--task", task_id, "--json") == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["type"] for e in events] == [
        "task_started",
        "agent_turn_started",
        "agent_turn_finished",
        "agent_turn_started",
        "agent_turn_finished",
        "task_finished",
    ]
    assert all(e["turn"] == 1 and e["conversation"] for e in events)
    assert {k: events[1][k] for k in ("task", "agent", "agent_turn", "max_turns")} == {
        "task": task_id,
        "agent": "researcher",
        "agent_turn": 1,
        "max_turns": 2,
    }


def test_abort_without_a_daemon_stops_the_task_and_the_entry_agent_hears_it(
    team_home, fake, env, capsys
):
    drop(team_home, "Capital? Ask the team.", "m1")
    from smarthole.daemon import Daemon
    from smarthole.home import Home

    daemon = Daemon(Home(team_home), once=True, env=env, handle_signals=False)

    def stop_after_the_first_agent_turn(request):
        if request.agent == "critic":
            daemon.request_stop()
        return text("I will check.")

    fake.add(start_task(max_turns=4), entry_agent=True)
    fake.add(text("Paris."), agent="researcher")
    fake.add(stop_after_the_first_agent_turn, agent="critic")
    assert daemon.run() == 0
    (task,) = db(team_home).execute("SELECT id, status FROM tasks")
    assert task["status"] == "interrupted"
    capsys.readouterr()
    assert cli(team_home, "tasks", "abort", task["id"]) == 0
    assert "aborted" in capsys.readouterr().out
    (task,) = db(team_home).execute("SELECT id, status, note FROM tasks")
    assert (task["status"], task["note"]) == ("aborted", "aborted by the user")
    fake.add(text("The team was stopped."), entry_agent=True)
    run_once(team_home, env)
    (reply,) = finals(team_home)
    assert reply.text == "The team was stopped."
    result = fake.requests[-1].tool_results[0]["content"]
    assert result.startswith("aborted by the user")
    assert cli(team_home, "tasks", "abort", task["id"]) == 1  # already finished


def test_abort_with_a_running_daemon_stops_after_the_call_in_flight(
    team_home, fake, env, live_daemon, capsys
):
    release = threading.Event()
    fake.add(start_task(max_turns=6), entry_agent=True)
    fake.add(text("Paris."), agent="researcher")
    fake.add(hold(release, text("Still checking.")), agent="critic")
    fake.add(text("The team was stopped."), entry_agent=True)
    drop(team_home, "Capital? Ask the team.", "m1")
    wait_for(lambda: any(r.agent == "critic" for r in fake.requests), 20, "the critic's call")
    (task,) = db(team_home).execute("SELECT id FROM tasks")
    assert cli(team_home, "tasks", "abort", task["id"]) == 0
    assert "after the model call in flight" in capsys.readouterr().out
    assert db(team_home).execute("SELECT status FROM tasks").fetchone()["status"] == "active"
    release.set()
    wait_for(lambda: finals(team_home), 20, "the reply")
    (task,) = db(team_home).execute("SELECT status, note FROM tasks")
    assert (task["status"], task["note"]) == ("aborted", "aborted by the user")
    turns = db(team_home).execute("SELECT agent FROM task_turns ORDER BY idx").fetchall()
    assert [t["agent"] for t in turns] == ["researcher"]  # the critic's turn never completed
    assert finals(team_home)[0].text == "The team was stopped."


def test_status_lists_running_and_interrupted_tasks(team_home, fake, env, capsys):
    from smarthole.daemon import Daemon
    from smarthole.home import Home

    daemon = Daemon(Home(team_home), once=True, env=env, handle_signals=False)

    def stop(request):
        daemon.request_stop()
        return text("later")

    fake.add(start_task(max_turns=4), entry_agent=True)
    fake.add(stop, agent="researcher")
    drop(team_home, "go", "m1")
    daemon.run()
    capsys.readouterr()
    cli(team_home, "status", "--json")
    (task,) = json.loads(capsys.readouterr().out)["tasks"]
    assert (task["status"], task["turns_done"], task["agents"]) == (
        "interrupted",
        0,
        ["researcher", "critic"],
    )
    cli(team_home, "status")
    assert "team tasks running or interrupted: 1" in capsys.readouterr().out


# -- the human conversation as seed 001's context ------------------------------------------


def test_export_context_holds_the_human_and_the_entry_agent_only(team_home, fake, env, capsys):
    finished_task(team_home, fake, env)
    (conversation,) = db(team_home).execute("SELECT id FROM conversations")
    capsys.readouterr()
    assert cli(team_home, "export", conversation["id"], "--format", "context") == 0
    assert json.loads(capsys.readouterr().out) == {
        "entry_agent": "assistant",
        "turns": [
            {"role": "human", "content": "Capital of France? Ask the team."},
            {"role": "entry_agent", "content": "Paris it is."},
        ],
    }


def test_import_then_export_gives_back_the_same_context(home, fake, env, capsys, monkeypatch):
    context = {
        "entry_agent": "assistant",
        "turns": [
            {"role": "human", "content": "Plan my week"},
            {"role": "entry_agent", "content": "Which days are free?"},
            {"role": "human", "content": "Tuesday and Friday"},
            {"role": "entry_agent", "content": "Then gym on Tuesday, writing on Friday."},
        ],
    }
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(context)))
    assert cli(home, "import", "-") == 0
    conversation_id = capsys.readouterr().out.strip()
    assert cli(home, "export", conversation_id, "--format", "context") == 0
    assert json.loads(capsys.readouterr().out) == context
    # the imported history is what the entry agent sees when the conversation goes on
    fake.default = text("Noted.")
    drop(home, "And Sunday?", "m1", conversation=conversation_id)
    run_once(home, env)
    messages = fake.requests[-1].messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"][0]["text"] == "Which days are free?"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"entry_agent": "a"}', 'needs a "turns" list'),
        ('{"turns": [{"role": "bot", "content": "x"}]}', "turn 1: unknown role 'bot'"),
        ('{"turns": [{"role": "human", "content": " "}]}', "turn 1: content must be non-empty"),
        ('{"turns": []}', "its turns list is empty"),
        ("[1, 2]", 'needs a "turns" list'),
        ("not json", "is not JSON"),
        ('{"entry_agent": "a", "turns": ' + "[" * 100_000 + "]" * 100_000 + "}", "too deeply"),
        ('{"turns": [' + "[" * 500 + "]" * 500 + "]}", "turn 1: unknown role [[[[[[[...]]]]]]]"),
        ('{"turns": [], "n": ' + "9" * 5_000 + "}", "is not JSON: Exceeds the limit"),
        ('{"turns": [{"role": "human", "content": "\u0000"}]} \x80', "is not JSON"),
    ],
)
def test_import_refuses_what_is_not_a_context(home, tmp_path, capsys, content, problem):
    path = tmp_path / "context.json"
    path.write_text(content)
    assert cli(home, "import", str(path)) == 1
    err = capsys.readouterr().err
    assert problem in err and len(err.strip().splitlines()) == 1
    tables = {row[0] for row in db(home).execute("SELECT name FROM sqlite_master")}
    assert (
        "conversations" not in tables
        or not db(home).execute("SELECT * FROM conversations").fetchall()
    )
