"""Forks: a new conversation holding turns 1..N of another, which goes on from there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.daemon import Runtime
from smarthole.home import Home
from smarthole.testing import text, tool_use
from tests.helpers import TEST_PLUGINS, db, drop, run_once, write_config


def cli(home: Path, *args: str) -> int:
    return main([args[0], "--home", str(home), *args[1:]])


def history_json(messages: list[dict]) -> str:
    """The JSON text of a request's messages, as the SDK sent them (key order kept)."""
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))


def listing(home: Path, capsys) -> dict[str, dict]:
    capsys.readouterr()
    assert cli(home, "ls", "--json", "--all") == 0
    return {c["id"]: c for c in json.loads(capsys.readouterr().out)}


def stored(home: Path, conversation: str) -> list[tuple]:
    connection = db(home)
    try:
        rows = connection.execute(
            "SELECT turn, kind, content, tool_use_id, created_at FROM messages "
            "WHERE conversation_id = ? ORDER BY id",
            (conversation,),
        ).fetchall()
        return [tuple(row) for row in rows]
    finally:
        connection.close()


def forked(home: Path, capsys, *args: str) -> str:
    capsys.readouterr()
    assert cli(home, "fork", *args) == 0
    return capsys.readouterr().out.strip()


@pytest.fixture
def five_turns(home, fake, env) -> str:
    """A conversation of five turns; turns 2 and 4 ran ``record`` (not read-only), turn 3
    ``list_files`` (read-only). Returns its id."""
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]})
    script = {
        2: [tool_use("record", {"value": "eggs"})],
        3: [tool_use("list_files", {})],
        4: [tool_use("record", {"value": "Lists/Groceries.md"})],
    }
    for number in range(1, 6):
        for reply in script.get(number, []):
            fake.add(reply)
        fake.add(text(f"answer {number}"))
        drop(home, f"message {number}", f"m{number}")
        run_once(home, env)
    connection = db(home)
    (conversation,) = connection.execute("SELECT id FROM conversations").fetchone()
    connection.close()
    return conversation


def first_request_of_turn(fake, turn: int):
    for request in fake.requests:
        last = request.messages[-1]
        if last["role"] == "user" and f"Turn {turn}," in last["content"][0].get("text", ""):
            return request
    raise AssertionError(f"no request of turn {turn}")


def test_the_forks_next_request_carries_turns_1_to_n_as_the_original_sent_them(
    home, fake, env, capsys, five_turns
):
    before = stored(home, five_turns)
    fork = forked(home, capsys, five_turns, "--turn", "2")
    assert stored(home, five_turns) == before, "the original is untouched"
    assert [row[1:] for row in stored(home, fork)] == [row[1:] for row in before if row[0] <= 2], (
        "turns 1..2 copied, times and tool-use ids too"
    )

    original_turn_3 = first_request_of_turn(fake, 3)
    fake.add(text("forked answer"))
    drop(home, "another way", "f3")  # the fork is the channel's current conversation
    run_once(home, env)
    request = fake.requests[-1]
    kept = len(original_turn_3.messages) - 1  # turns 1..2, before turn 3's user message
    assert history_json(request.messages[:kept]) == history_json(original_turn_3.messages[:kept])
    context = request.messages[kept]["content"][0]["text"]
    assert context.startswith("<context>Turn 3, sent ")
    assert "the original conversation also ran: record Lists/Groceries.md (turn 4)" in context
    assert "list_files" not in context, "read-only tools are not side effects"
    assert request.messages[kept]["content"][-1]["text"] == "another way"
    assert len(request.messages) == kept + 1

    fake.add(text("and on"))
    drop(home, "once more", "f4")
    run_once(home, env)
    later = fake.requests[-1]
    assert "also ran" in later.messages[kept]["content"][0]["text"], "kept in turn 3's context"
    assert "also ran" not in later.messages[-1]["content"][0]["text"], "said once"


def test_forked_from_is_shown_by_show_and_ls_and_the_fork_is_current(home, capsys, five_turns):
    fork = forked(home, capsys, five_turns, "--turn", "3", "--title", "Other way")
    listed = listing(home, capsys)
    assert listed[fork]["forked_from"] == {"conversation": five_turns, "turn": 3}
    assert listed[fork]["replay_of"] is None
    assert listed[fork]["current"] is True and listed[fork]["turns"] == 3
    assert listed[fork]["title"] == "Other way"
    assert listed[five_turns]["current"] is False and listed[five_turns]["forked_from"] is None
    assert cli(home, "show", fork) == 0
    shown = capsys.readouterr().out
    assert f"forked from conversation {five_turns} after turn 3" in shown
    assert "message 3" in shown and "message 4" not in shown


def test_keep_current_leaves_the_channels_conversation_current(home, capsys, five_turns):
    fork = forked(home, capsys, five_turns, "--turn", "1", "--keep-current")
    listed = listing(home, capsys)
    assert listed[five_turns]["current"] is True
    assert listed[fork]["current"] is False and listed[fork]["status"] == "ended"


def test_a_fork_of_a_fork(home, fake, env, capsys, five_turns):
    first = forked(home, capsys, five_turns, "--turn", "4")
    second = forked(home, capsys, first, "--turn", "2", "--channel", "elsewhere")
    listed = listing(home, capsys)
    assert listed[second]["forked_from"] == {"conversation": first, "turn": 2}
    assert listed[second]["channel"] == "elsewhere" and listed[second]["current"] is True
    assert listed[first]["current"] is True, "another channel's fork leaves this one's"
    assert [r[1:] for r in stored(home, second)] == [
        r[1:] for r in stored(home, five_turns) if r[0] <= 2
    ]
    fake.add(text("deep"))
    drop(home, "go", "g1", channel="elsewhere")
    run_once(home, env)
    assert (
        "record Lists/Groceries.md (turn 4)" in fake.requests[-1].messages[-1]["content"][0]["text"]
    ), "what the first fork's own original ran after turn 2 is what it copied"


def test_forgetting_the_original_leaves_the_fork_whole(home, capsys, five_turns):
    fork = forked(home, capsys, five_turns, "--turn", "2")
    copied = stored(home, fork)
    root = Runtime.for_home(Home(home))
    try:
        root.store.delete_conversation(five_turns)
    finally:
        root.close()
    assert stored(home, fork) == copied
    assert listing(home, capsys)[fork]["forked_from"] == {"conversation": five_turns, "turn": 2}


def test_a_turn_the_conversation_does_not_have_is_refused(home, capsys, five_turns):
    assert cli(home, "fork", five_turns, "--turn", "6") == 2
    assert "there is no turn 6" in capsys.readouterr().err
