"""``smarthole schedules`` and ``schedule add|rm|pause|resume|run``."""

from __future__ import annotations

import json
import re

import pytest

from smarthole.cli import main
from smarthole.testing import text
from tests.helpers import db, finals, wait_for, write_schedules


def cli(home, *args: str) -> int:
    return main(
        [*args[:2], "--home", str(home), *args[2:]]
        if args[0] == "schedule"
        else [args[0], "--home", str(home), *args[1:]]
    )


def listed(home, capsys) -> list[dict]:
    capsys.readouterr()
    assert cli(home, "schedules", "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_add_lists_with_the_next_run_in_local_time(home, capsys):
    assert (
        cli(
            home,
            "schedule",
            "add",
            "brief",
            "--cron",
            "0 8 * * mon-fri",
            "--timezone",
            "Europe/Berlin",
            "Summarise my notes.",
        )
        == 0
    )
    (row,) = listed(home, capsys)
    assert row["name"] == "brief" and row["source"] == "cli" and row["state"] == "active"
    assert row["cron"] == "0 8 * * mon-fri" and row["next_local"].endswith(("CET", "CEST"))
    assert " 08:00 " in row["next_local"] and row["last_run"] is None
    assert cli(home, "schedules") == 0
    out = capsys.readouterr().out
    assert "brief" in out and "next:" in out and "Summarise my notes." in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--cron", "0 25 * * *"), "Bad hour"),
        (("--every", "0s"), "at least 1s"),
        (("--at", "2020-01-01T09:00"), "has passed"),
        (("--every", "1h", "--at", "2030-01-01T09:00"), "exactly one of"),
        (("--every", "1h", "--timezone", "Moon/Base"), "unknown time zone"),
    ],
)
def test_add_refuses_what_cannot_fire(home, capsys, args, says):
    assert cli(home, "schedule", "add", "x", *args, "Text") == 2
    assert says in capsys.readouterr().err
    assert listed(home, capsys) == []


def test_names_are_checked_and_unique(home, capsys):
    assert cli(home, "schedule", "add", "9x", "--every", "1h", "Text") == 2
    assert cli(home, "schedule", "add", "x", "--every", "1h", "Text") == 0
    assert cli(home, "schedule", "add", "x", "--every", "2h", "Text") != 0
    assert "exists already" in capsys.readouterr().err


def test_pause_resume_and_rm(home, capsys):
    cli(home, "schedule", "add", "x", "--every", "1h", "Text")
    assert cli(home, "schedule", "pause", "x") == 0
    assert listed(home, capsys)[0]["state"] == "paused"
    (row,) = listed(home, capsys)
    assert cli(home, "schedule", "resume", row["id"][:6]) == 0
    assert listed(home, capsys)[0]["state"] == "active"
    assert cli(home, "schedule", "rm", "x") == 0
    assert listed(home, capsys) == []
    assert cli(home, "schedule", "rm", "x") == 1


def test_run_fires_now_and_the_daemon_sends_it(home, fake, live_daemon, capsys):
    fake.add(text("Done now."))
    cli(home, "schedule", "add", "later", "--every", "7d", "Do it.")
    assert cli(home, "schedule", "run", "later") == 0
    (reply,) = wait_for(lambda: finals(home), 20, "the reply to the run")
    assert reply.text == "Done now."
    wait_for(lambda: listed(home, capsys)[0]["last_run"]["outcome"] == "done", 10)
    (row,) = listed(home, capsys)
    assert row["last_run"]["reason"] == "manual"


def sent_runs(home) -> int:
    rows = db(home).execute(
        "SELECT COUNT(*) FROM schedule_fires WHERE reason = 'manual' AND state = 'sent'"
    )
    return rows.fetchone()[0]


def test_run_wakes_the_running_daemon_at_once(home, fake, live_daemon):
    fake.add(text("First."))
    fake.add(text("Second."))
    cli(home, "schedule", "add", "later", "--every", "7d", "Do it.")
    assert cli(home, "schedule", "run", "later") == 0
    wait_for(lambda: sent_runs(home) == 1, 20, "the first run to be sent")
    # The daemon has just looked at its schedules; left alone, its next look is 5 s away.
    assert cli(home, "schedule", "run", "later") == 0
    wait_for(lambda: sent_runs(home) == 2, 1.5, "the second run, sent as the daemon is woken")


def test_a_config_schedule_is_removed_in_the_file(home, capsys):
    write_schedules(home, {"name": "filed", "every": "1h", "text": "x"})
    from smarthole.app import App
    from smarthole.daemon.runtime import Runtime
    from smarthole.home import Home

    app = App.load(Home(home))  # the daemon keeps the file's schedules in the store
    runtime = Runtime.build(app, env={"ANTHROPIC_API_KEY": "x"})
    runtime.scheduler.tick()
    runtime.close()
    app.close()
    assert cli(home, "schedule", "rm", "filed") == 2
    assert "config.toml" in capsys.readouterr().err
    assert cli(home, "schedule", "pause", "filed") == 0
    assert db(home).execute("SELECT state FROM schedules").fetchone()[0] == "paused"


def test_rm_pause_resume_and_run_take_a_unique_prefix_of_the_name(home, capsys):
    cli(home, "schedule", "add", "morning-brief", "--every", "1h", "Text")
    cli(home, "schedule", "add", "morning-walk", "--every", "1h", "Text")
    assert cli(home, "schedule", "pause", "morning-b") == 0
    assert "paused schedule morning-brief" in capsys.readouterr().out
    assert cli(home, "schedule", "pause", "morning") == 1  # two match: say so, change nothing
    assert "matches more than one" in capsys.readouterr().err
    assert cli(home, "schedule", "rm", "morning-w") == 0
    assert [row["name"] for row in listed(home, capsys)] == ["morning-brief"]


def test_the_next_run_within_the_hour_is_shown_to_the_second(home, capsys):
    cli(home, "schedule", "add", "soon", "--every", "20s", "Text")
    cli(home, "schedule", "add", "later", "--every", "1d", "Text")
    capsys.readouterr()
    assert cli(home, "schedules") == 0
    out = capsys.readouterr().out
    assert re.search(r"next: \d\d:\d\d:\d\d \(in \d+ s\)", out)  # soon's
    assert re.search(r"next: \d{4}-\d\d-\d\d \d\d:\d\d \S+ ", out)  # later's, to the minute


@pytest.mark.parametrize("given", ["same", "id"])
def test_every_run_of_a_schedule_can_go_to_one_conversation(home, fake, env, capsys, given):
    from tests.helpers import drop, run_once

    fake.default = lambda request: text("Noted.")
    drop(home, "hello", "m0")
    run_once(home, env)
    first = db(home).execute("SELECT id FROM conversations").fetchone()["id"]
    conversation = first[:6] if given == "id" else "same"
    args = ("schedule", "add", "tick", "--every", "7d", "--conversation", conversation, "Tick.")
    assert cli(home, *args) == 0
    for _ in range(3):
        assert cli(home, "schedule", "run", "tick") == 0
        run_once(home, env)
    ids = {row["id"] for row in db(home).execute("SELECT id FROM conversations")}
    assert len(ids) == (1 if given == "id" else 2)  # "same": one for every run, its own
    turns = db(home).execute("SELECT MAX(turns) FROM conversations").fetchone()[0]
    assert turns == (4 if given == "id" else 3)


def test_a_conversation_that_does_not_exist_is_refused(home, capsys):
    assert cli(home, "schedule", "add", "x", "--every", "1h", "--conversation", "ffff", "T") != 0
    assert "ffff" in capsys.readouterr().err
    assert listed(home, capsys) == []
