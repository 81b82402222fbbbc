"""The busy policy and team tasks: ``interrupt`` aborts the running task as ``/stop`` does, and
``steer`` reaches the entry agent only, never a team agent's session."""

from __future__ import annotations

import threading

from smarthole.testing import hold, text
from tests.helpers import db, drop, finals, wait_for, write_config
from tests.teams.test_tasks import TEAM, start_task

from .bursts import statuses


def team_daemon(home, env, threads, policy: str):
    write_config(home, agents=TEAM, channels={"busy": policy})
    return threads(home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly


def critic_asked(fake) -> bool:
    return any(r.agent == "critic" for r in fake.requests)


def test_interrupt_aborts_the_running_task_and_answers_the_new_message(home, fake, env, threads):
    release = threading.Event()
    fake.add(start_task(max_turns=6), entry_agent=True)
    fake.add(text("Paris."), agent="researcher")
    fake.add(hold(release, text("Still checking.")), agent="critic")
    fake.add(text("Fine, forgotten."), entry_agent=True)
    daemon = team_daemon(home, env, threads, "interrupt")
    drop(home, "Capital? Ask the team.", "m1")
    wait_for(lambda: critic_asked(fake), 20, "the critic's call")
    drop(home, "never mind", "m2")
    wait_for(lambda: db(home).execute("SELECT abort_requested FROM tasks").fetchone()[0], 20)
    release.set()
    wait_for(lambda: statuses(home) == {"m1": "done", "m2": "done"}, 30, "both replies")
    daemon.stop()
    (task,) = db(home).execute("SELECT status FROM tasks")
    assert task["status"] == "aborted"
    replies = {f["in_reply_to"]: f.text for f in finals(home)}
    assert "Interrupted by a newer message" in replies["m1"]
    assert replies["m2"] == "Fine, forgotten."


def test_steer_reaches_the_entry_agent_only(home, fake, env, threads):
    release = threading.Event()
    fake.add(start_task(max_turns=2), entry_agent=True)
    fake.add(text("Paris."), agent="researcher")
    fake.add(hold(release, text("Confirmed.")), agent="critic")
    fake.add(text("Paris, and yes, Lyon is second."), entry_agent=True)
    daemon = team_daemon(home, env, threads, "steer")
    drop(home, "Capital? Ask the team.", "m1")
    wait_for(lambda: critic_asked(fake), 20, "the critic's call")
    drop(home, "and the second city?", "m2")
    wait_for(lambda: "m2" in statuses(home), 20, "the second message to be claimed")
    release.set()
    wait_for(lambda: statuses(home) == {"m1": "done", "m2": "done"}, 30, "the reply")
    daemon.stop()
    team = [r for r in fake.requests if r.agent is not None]
    assert team and all("second city" not in str(r.messages) for r in team)
    entry = [r for r in fake.requests if r.agent is None]
    assert "second city" in entry[-1].last_user_text and entry[-1].tool_results
    (reply,) = finals(home)
    assert reply["answers"] == ["m1", "m2"]
