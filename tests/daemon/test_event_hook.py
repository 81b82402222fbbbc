"""Every event reaches the ``event`` hook in order, whichever process wrote it, once.

The daemon follows the events table from a cursor kept in the database: its own events, a CLI
command's while it runs, and those written while it was down all reach the hook, in id order;
only a crash between a hook call and its cursor's commit delivers that one event again.
"""

from __future__ import annotations

import json

import pytest

from smarthole.cli import main
from smarthole.daemon.runtime import Runtime
from smarthole.home import Home
from smarthole.testing import text
from tests.helpers import TEST_PLUGINS, db, drop, run_once, wait_for, write_config


@pytest.fixture
def watched(home, fake):
    """A home whose plugin logs every event it is told of; one answered conversation."""
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["eventlog"]})
    fake.default = text("ok")
    return home


def seen(home) -> list[tuple[int, str]]:
    log = home / "events-seen.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(int(number), kind) for number, kind in (line.split() for line in lines)]


def stored(home) -> list[tuple[int, str]]:
    return [(r["id"], r["type"]) for r in db(home).execute("SELECT id, type FROM events")]


def conversation_id(home) -> str:
    (row,) = db(home).execute("SELECT id FROM conversations")
    return row["id"]


def test_the_daemons_own_events_reach_the_hook_in_order(watched, env):
    drop(watched, "hello", "m1")
    run_once(watched, env)
    assert seen(watched) == stored(watched)
    assert "turn_completed" in {kind for _, kind in seen(watched)}


def test_events_written_while_the_daemon_was_down_reach_it_when_it_starts(watched, env):
    drop(watched, "hello", "m1")
    run_once(watched, env)
    conversation = conversation_id(watched)
    assert main(["rename", conversation, "Milk", "--home", str(watched)]) == 0
    assert main(["new", "--channel", "default", "--home", str(watched)]) == 0
    before = len(seen(watched))
    run_once(watched, env)
    assert seen(watched) == stored(watched)  # each once, in order, the CLI's included
    kinds = [kind for _, kind in seen(watched)[before:]]
    assert kinds[:2] == ["conversation_renamed", "conversation_ended"]
    run_once(watched, env)
    assert seen(watched) == stored(watched)  # nothing again


def test_the_events_of_rename_new_and_tasks_abort_reach_the_hook(watched, env):
    drop(watched, "hello", "m1")
    run_once(watched, env)
    conversation = conversation_id(watched)
    root = Runtime.for_home(Home(watched))
    try:
        task, _ = root.tasks.create(
            conversation_id=conversation, turn=1, message_id="m1", started_by="toolu_1",
            task="Do it", agents=["researcher"], max_turns=2,
        )  # fmt: skip
    finally:
        root.close()
    before = len(seen(watched))
    assert main(["rename", conversation, "Milk", "--home", str(watched)]) == 0
    assert main(["new", "--channel", "default", "--home", str(watched)]) == 0
    assert main(["tasks", "abort", task.id, "--home", str(watched)]) == 0
    run_once(watched, env)
    assert seen(watched) == stored(watched)
    commands = {"conversation_renamed", "conversation_ended", "task_finished"}
    kinds = [kind for _, kind in seen(watched)[before:] if kind in commands]
    assert kinds == ["conversation_renamed", "conversation_ended", "task_finished"]
    (row,) = db(watched).execute("SELECT data FROM events WHERE type = 'task_finished'")
    assert json.loads(row["data"])["status"] == "aborted"


def test_a_cli_command_reaches_a_running_daemons_hook(watched, env, threads):
    drop(watched, "hello", "m1")
    run_once(watched, env)
    daemon = threads(watched, env)
    assert main(["rename", conversation_id(watched), "Milk", "--home", str(watched)]) == 0
    wait_for(lambda: (seen(watched) or [(0, "")])[-1][1] == "conversation_renamed")
    assert seen(watched) == stored(watched)
    assert daemon.stop() == 0
    assert seen(watched) == stored(watched)


def test_a_crash_between_the_hook_and_the_cursor_delivers_that_one_event_again(
    watched, env, daemons
):
    drop(watched, "hello", "m1")
    run_once(watched, env)
    daemon = daemons(watched, env)
    (watched / "hold-conversation_renamed").touch()
    assert main(["rename", conversation_id(watched), "Milk", "--home", str(watched)]) == 0
    wait_for(lambda: (watched / "holding-conversation_renamed").exists())
    daemon.kill()  # the hook has run; its cursor has not moved past the event
    (watched / "hold-conversation_renamed").unlink()
    renamed = int((watched / "holding-conversation_renamed").read_text())
    assert main(["new", "--channel", "default", "--home", str(watched)]) == 0
    run_once(watched, env)
    ids = [number for number, _ in seen(watched)]
    assert ids.count(renamed) == 2
    assert [n for n in ids if n != renamed] == [n for n, _ in stored(watched) if n != renamed]
    assert sorted(set(ids)) == [n for n, _ in stored(watched)]


def test_a_home_without_a_cursor_does_not_replay_its_history(home, fake, env):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)  # no event plugin yet: the cursor follows along
    with db(home) as connection:  # as a home from before the cursor had none
        connection.execute("DELETE FROM meta WHERE key LIKE 'cursor:%'")
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["eventlog"]})
    assert main(["rename", conversation_id(home), "Milk", "--home", str(home)]) == 0
    run_once(home, env)
    assert seen(home) == []  # history stays history; the plugin sees what comes next
    drop(home, "again", "m2")
    run_once(home, env)
    assert seen(home) and seen(home)[0][0] > max(
        n for n, k in stored(home) if k == "conversation_renamed"
    )


def test_events_json_carries_each_events_id(watched, env, capsys):
    drop(watched, "hello", "m1")
    run_once(watched, env)
    assert main(["events", "--json", "--home", str(watched)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["id"], e["type"]) for e in printed] == stored(watched)
