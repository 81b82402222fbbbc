"""A task survives kill -9: it resumes at the right turn, with the right agent, once."""

from __future__ import annotations

import threading

import pytest

from smarthole.agent.client import IN_DOUBT
from smarthole.app import App
from smarthole.daemon import Daemon, Runtime
from smarthole.db.tasks import Tasks
from smarthole.errors import InternalError
from smarthole.home import Home
from smarthole.teams import HumanTurn, TaskRequest
from smarthole.testing import hold, text, tool_use
from tests.daemon.test_reliability import assert_one_final_each
from tests.helpers import (
    TEST_PLUGINS,
    db,
    drop,
    finals,
    run_once,
    tool_runs,
    wait_for,
    write_config,
)
from tests.teams.test_tasks import TEAM, start_task


@pytest.fixture
def team_home(home):
    write_config(home, agents=TEAM)
    return home


def agent_turns(home) -> list[tuple[int, str, str]]:
    rows = db(home).execute("SELECT idx, agent, text FROM task_turns ORDER BY idx")
    return [(row["idx"], row["agent"], row["text"]) for row in rows]


def test_kill_9_during_an_agent_turn_resumes_at_that_turn_with_that_agent(
    team_home, fake, env, daemons, threads
):
    stuck = threading.Event()
    fake.add(start_task(max_turns=4), entry_agent=True)
    fake.add(text("r1"), agent="researcher")
    fake.add(text("c1"), agent="critic")
    fake.add(hold(stuck, text("never seen")), agent="researcher")
    first = daemons(team_home, env)
    drop(team_home, "Find it out together.", "m1")
    wait_for(lambda: len([r for r in fake.requests if r.agent == "researcher"]) == 2, 20)
    first.kill()
    assert agent_turns(team_home) == [(0, "researcher", "r1"), (1, "critic", "c1")]
    fake.add(text("r2"), agent="researcher")
    fake.add(text("c2"), agent="critic")
    fake.add(text("All done."), entry_agent=True)
    threads(team_home, env)  # the restart: recovery is the start-up's, in a thread
    assert_one_final_each(team_home, "m1")
    stuck.set()
    assert agent_turns(team_home) == [
        (0, "researcher", "r1"),
        (1, "critic", "c1"),
        (2, "researcher", "r2"),
        (3, "critic", "c2"),
    ]
    (task,) = db(team_home).execute("SELECT status, note FROM tasks")
    assert (task["status"], task["note"]) == ("completed", "completed after 4 of 4 turns")
    # the resumed turn asked the same question: one request message, two model calls
    third = [r for r in fake.requests if r.agent == "researcher"][1:]
    assert len(third) == 2 and third[0].messages == third[1].messages
    started = db(team_home).execute(
        "SELECT COUNT(*) AS n FROM events WHERE type = 'agent_turn_started'"
    )
    assert started.fetchone()["n"] == 4
    assert finals(team_home)[0].text == "All done."


def test_kill_9_during_a_team_agents_tool_reports_it_in_doubt_and_never_reruns_it(
    home, fake, env, daemons, threads
):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools", "blocking_delivery"]},
        agents={"clerk": {"description": "Records things", "tools": ["slow_record"]}},
    )
    fake.add(start_task(task="record x", agents=["clerk"], max_turns=1), entry_agent=True)
    fake.add(tool_use("slow_record", {"tag": "x"}), agent="clerk")
    first = daemons(home, env)
    drop(home, "record x with the clerk", "m1")
    wait_for(lambda: (home / "started-x").exists(), 20, "the tool to start")
    first.kill()
    (home / "started-x").unlink()
    fake.add(text("I could not tell whether it was recorded."), agent="clerk")
    fake.add(text("Unclear whether x was recorded."), entry_agent=True)
    threads(home, env)
    assert_one_final_each(home, "m1")
    clerk = [r for r in fake.requests if r.agent == "clerk"]
    (result,) = clerk[-1].tool_results
    assert result["is_error"] and result["content"] == IN_DOUBT
    assert not (home / "started-x").exists(), "the in-doubt tool was run again"
    assert tool_runs(home) == []


def test_an_agent_no_longer_configured_ends_the_task_and_the_entry_agent_is_told(
    team_home, fake, env
):
    daemon = Daemon(Home(team_home), once=True, env=env, handle_signals=False)

    def stop_then_answer(request):
        daemon.request_stop()
        return text("c1")

    fake.add(start_task(max_turns=4), entry_agent=True)
    fake.add(text("r1"), agent="researcher")
    fake.add(stop_then_answer, agent="critic")
    drop(team_home, "go", "m1")
    daemon.run()
    assert agent_turns(team_home) == [(0, "researcher", "r1")]
    write_config(team_home, agents={"researcher": TEAM["researcher"]})
    fake.add(text("The critic is gone; here is what we have."), entry_agent=True)
    run_once(team_home, env)
    result = fake.requests[-1].tool_results[0]["content"]
    assert result == 'stopped: agent "critic" is no longer configured\n\nr1'
    (task,) = db(team_home).execute("SELECT status FROM tasks")
    assert task["status"] == "completed"
    assert len(finals(team_home)) == 1


def runner_for(home, env):
    app = App.load(Home(home))
    runtime = Runtime.build(app, env=env)
    assert runtime.processor.teams is not None
    return app, runtime, runtime.processor.teams


def test_a_task_with_all_its_turns_stored_completes_without_a_model_call(team_home, fake, env):
    fake.add(text("r1"), agent="researcher")
    fake.add(text("c1"), agent="critic")
    drop(team_home, "go", "m1", agents=["researcher", "critic"], max_turns=2)
    run_once(team_home, env)
    calls = len(fake.requests)
    # as if the daemon died between the last agent turn's commit and the task's
    db_ = db(team_home)
    db_.execute("UPDATE tasks SET status = 'interrupted', note = NULL")
    db_.commit()
    app, runtime, teams = runner_for(team_home, env)
    try:
        (task,) = Tasks(app.store).running()
        place = HumanTurn(task.conversation_id, "default", task.turn, task.message_id)
        done = teams.run(place, task.started_by, TaskRequest(task.task, list(task.agents)))
    finally:
        runtime.close()
        app.close()
    assert (done.status, done.note) == ("completed", "completed after 2 of 2 turns")
    assert len(fake.requests) == calls


def test_no_two_loops_ever_run_one_task(team_home, fake, env):
    release = threading.Event()
    fake.add(hold(release, text("r1")), agent="researcher")
    fake.add(text("c1"), agent="critic")
    app, runtime, teams = runner_for(team_home, env)
    conversation = app.store.create_conversation("default")
    place = HumanTurn(conversation.id, "default", 1, "m1")
    request = TaskRequest("go", ["researcher", "critic"], 2)
    outcomes: list[object] = []
    first = threading.Thread(target=lambda: outcomes.append(teams.run(place, "s1", request)))
    try:
        first.start()
        wait_for(lambda: fake.requests, 10, "the first loop's model call")
        with pytest.raises(InternalError, match="is already running"):
            teams.run(place, "s1", request)
        release.set()
        first.join(20)
    finally:
        release.set()
        runtime.close()
        app.close()
    (task,) = outcomes
    assert task.status == "completed"  # type: ignore[attr-defined]
    assert agent_turns(team_home) == [(0, "researcher", "r1"), (1, "critic", "c1")]
    assert len(fake.requests) == 2
