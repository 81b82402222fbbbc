"""Replays: a conversation's messages again, another model or prompt, no tool run twice."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from smarthole.agent.standin import REFUSED
from smarthole.cli import main
from smarthole.daemon import Runtime
from smarthole.home import Home
from smarthole.pipeline.replaying import start_replay
from smarthole.pipeline.replayreport import replay_report
from smarthole.testing import hold, text, tool_use
from tests.helpers import (
    TEST_PLUGINS,
    Command,
    db,
    drop,
    read_outbox,
    run_once,
    tool_runs,
    write_config,
)


def cli(home: Path, *args: str) -> int:
    return main([args[0], "--home", str(home), *args[1:]])


def rows(home: Path, sql: str, *params) -> list[tuple]:
    connection = db(home)
    try:
        return [tuple(r) for r in connection.execute(sql, params).fetchall()]
    finally:
        connection.close()


@pytest.fixture
def original(home, fake, env) -> str:
    """Three turns: turn 2 ran ``record eggs`` (not idempotent, logged per real run) and
    ``list_files``; turn 3 ``record milk``. Returns the conversation's id."""
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]})
    script = {
        2: [tool_use("record", {"value": "eggs"}), tool_use("list_files", {})],
        3: [tool_use("record", {"value": "milk"})],
    }
    for number in (1, 2, 3):
        for reply in script.get(number, []):
            fake.add(reply)
        fake.add(text(f"answer {number}"))
        drop(home, f"message {number}", f"m{number}")
        run_once(home, env)
    assert tool_runs(home) == ["record eggs", "record milk"]
    ((conversation,),) = rows(home, "SELECT id FROM conversations")
    return conversation


def replay_of(home: Path) -> str:
    ((replay,),) = rows(home, "SELECT conversation_id FROM forks WHERE replay_plan IS NOT NULL")
    return replay


def results(home: Path, conversation: str, turn: int) -> list[dict]:
    found = rows(
        home,
        "SELECT content FROM messages WHERE conversation_id = ? AND turn = ? "
        "AND kind = 'tool_result' ORDER BY id",
        conversation,
        turn,
    )
    return [json.loads(content)[0] for (content,) in found]


def test_a_replay_answers_from_the_record_and_refuses_the_rest_running_nothing(
    home, fake, environ, capsys, tmp_path, original
):
    outbox_before = len(read_outbox(home))
    fake.add(text("replayed 1"))
    fake.add(tool_use("record", {"value": "eggs"}))  # as the original: its result stands in
    fake.add(tool_use("record", {"value": "ham"}))  # never made: refused
    fake.add(text("replayed 2"))
    fake.add(tool_use("list_files", {}))  # read-only, but no --live-tools
    fake.add(text("replayed 3"))
    prompt = tmp_path / "prompt.md"
    prompt.write_text("You are the new prompt.")
    report = tmp_path / "report.md"
    capsys.readouterr()
    code = cli(
        home, "replay", original, "--model", "claude-other", "--system-prompt", str(prompt),
        "--report", str(report),
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert tool_runs(home) == ["record eggs", "record milk"], "nothing ran again"
    assert "real tool runs: 0" in err
    replay = replay_of(home)
    eggs, ham = results(home, replay, 2)
    assert eggs["content"] == "recorded eggs" and not eggs["is_error"]
    assert ham == {**ham, "content": REFUSED, "is_error": True}
    (files,) = results(home, replay, 3)
    assert files["content"] == REFUSED
    asked = fake.requests[-6:]
    assert {r.model for r in asked} == {"claude-other"}
    assert all(r.system_text.startswith("You are the new prompt.") for r in asked)
    assert len(read_outbox(home)) == outbox_before, "a replay's replies are never delivered"
    written = report.read_text()
    assert "## replay of" in written and "replayed 2" in written and "answer 2" in written
    assert "record (recorded), record (refused)" in written
    assert "1 recorded, 2 refused, 0 live; real tool runs: 0" in out


def test_a_replay_is_a_conversation_of_its_own_current_nowhere(
    home, fake, environ, capsys, original
):
    for n in (1, 2, 3):
        fake.add(text(f"again {n}"))
    fake.default = lambda request: text("again")
    assert cli(home, "replay", original, "--from-turn", "2", "--json") == 0
    (made,) = json.loads(capsys.readouterr().out)
    assert made["original"] == original and made["real_runs"] == 0
    assert [t["turn"] for t in made["turns"]] == [2, 3]
    assert made["turns"][0]["original"]["reply"] == "answer 2"
    assert made["turns"][0]["replay"]["reply"] is not None
    assert made["turns"][0]["replay"]["cost_micros"] is None
    assert cli(home, "ls", "--json", "--all") == 0
    listed = {c["id"]: c for c in json.loads(capsys.readouterr().out)}
    replay = listed[made["replay"]]
    assert replay["replay_of"] == original and replay["title"].startswith("replay of ")
    assert replay["forked_from"] == {"conversation": original, "turn": 1}
    assert replay["current"] is False and listed[original]["current"] is True
    assert replay["turns"] == 3


def test_live_tools_run_only_the_read_only_ones(home, fake, environ, capsys, original):
    fake.add(text("1"))
    fake.add(tool_use("list_files", {"path": "."}))  # not recorded; read-only: runs
    fake.add(tool_use("record", {"value": "bread"}))  # not recorded; has side effects: refused
    fake.add(text("2"))
    fake.add(text("3"))
    assert cli(home, "replay", original, "--live-tools", "--json") == 0
    out, err = capsys.readouterr()
    (made,) = json.loads(out)
    assert made["real_runs"] == 1 and "real tool runs: 1" in err
    assert made["turns"][1]["replay"]["tool_calls"] == [
        {"tool": "list_files", "how": "live"},
        {"tool": "record", "how": "refused"},
    ]
    assert tool_runs(home) == ["record eggs", "record milk"]


def test_a_replay_killed_mid_turn_resumes_and_still_runs_nothing(
    home, fake, env, environ, capsys, tmp_path, original
):
    asked = len(fake.requests)
    go = threading.Event()
    fake.add(text("replayed 1"))
    fake.add(tool_use("record", {"value": "eggs"}))
    fake.add(hold(go, text("never heard")))  # turn 2's second call: the replay dies waiting
    command = Command(tmp_path, env, "replay", original, "--home", str(home))
    try:
        fake.wait_for_requests(asked + 3, timeout=60)
        command.process.kill()  # kill -9: no clean-up at all
        command.process.wait(timeout=10)
    finally:
        go.set()
        command.close()
    replay = replay_of(home)
    (eggs,) = results(home, replay, 2)
    assert eggs["content"] == "recorded eggs", "stored before the kill"

    fake.add(text("replayed 2"))
    fake.add(text("replayed 3"))
    assert cli(home, "replay", original, "--json") == 0
    out, err = capsys.readouterr()
    assert f"resuming {original} as {replay}" in err
    (made,) = json.loads(out)
    assert made["replay"] == replay and made["real_runs"] == 0 and made["finished"]
    assert [t["replay"]["reply"] for t in made["turns"]] == [
        "replayed 1",
        "replayed 2",
        "replayed 3",
    ]
    assert tool_runs(home) == ["record eggs", "record milk"], "still no real run"
    assert len(rows(home, "SELECT 1 FROM forks WHERE replay_plan IS NOT NULL")) == 1


def test_a_replays_live_call_waits_for_a_persons_yes_like_any_turns(home, fake, env, original):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["list_files"]},
    )
    root = Runtime.for_home(Home(home))
    try:
        replay, _ = start_replay(
            root.store, root.ledger, root.conversations, original, live_tools=True
        )
    finally:
        root.close()
    fake.add(text("1"))
    fake.add(tool_use("list_files", {"path": "."}))  # not recorded; read-only; needs a yes
    run_once(home, env)
    (item,) = [f for f in read_outbox(home) if f["kind"] == "approval"]
    assert item["tool"] == "list_files" and item["conversation"] == replay.conversation_id
    assert report_of(home, replay).real_runs == 0, "waiting, not run"

    fake.add(text("2"))
    fake.add(text("3"))
    drop(home, "", "a1", approve=item["approval"])
    run_once(home, env)
    made = report_of(home, replay)
    assert made.finished and made.real_runs == 1
    assert made.turns[1].replay.tools == [("list_files", "live")]
    replies = [f for f in read_outbox(home) if f["kind"] in ("response", "error")]
    assert len(replies) == 3, "the original's three replies, none of the replay's"


def report_of(home: Path, replay):
    root = Runtime.for_home(Home(home))
    try:
        fork = root.store.fork_of(replay.conversation_id)
        return replay_report(root.store, root.ledger, root.usage, fork)
    finally:
        root.close()


def test_a_tool_gone_since_still_has_its_recorded_results(home, fake, environ, capsys, original):
    write_config(home)  # the test tools are not loaded any more
    fake.add(text("1"))
    fake.add(tool_use("record", {"value": "eggs"}))  # recorded: stands in
    fake.add(tool_use("record", {"value": "bread"}))  # not recorded: refused, as ever
    fake.add(text("2"))
    fake.add(text("3"))
    assert cli(home, "replay", original, "--json") == 0
    (made,) = json.loads(capsys.readouterr().out)
    assert "record" not in fake.requests[-1].tools, "the model is offered today's tools"
    assert made["turns"][1]["replay"]["tool_calls"] == [
        {"tool": "record", "how": "recorded"},
        {"tool": "record", "how": "refused"},
    ]
    eggs, bread = results(home, made["replay"], 2)
    assert eggs["content"] == "recorded eggs" and bread["content"] == REFUSED


def test_show_says_what_a_replay_replays(home, fake, environ, capsys, original):
    fake.default = lambda request: text("again")
    assert cli(home, "replay", original, "--from-turn", "3", "--json") == 0
    (made,) = json.loads(capsys.readouterr().out)
    assert cli(home, "show", made["replay"]) == 0
    shown = capsys.readouterr().out
    assert f"replay of conversation {original} from turn 3" in shown
    assert "message 2" in shown and "answer 2" in shown, "turns 1..2 are the original's"
