"""Stored text never acts on the terminal: control characters are shown, not sent.

A title comes from the model, and the model reads whatever anyone dropped into the inbox, so
``ESC ] 0 ; … BEL`` (window title), ``ESC [ 2 J`` (clear screen) or OSC 52 (clipboard) can
reach any field. Every command that prints stored text shows them as ``^[``; ``--json`` stays
exact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smarthole.agent.prompts import SUMMARY_SYSTEM, TITLE_SYSTEM
from smarthole.cli import main
from smarthole.cli.output import dumps
from smarthole.formats import visible
from smarthole.testing import text, tool_use
from tests.helpers import db, drop, run_once, write_config

WINDOW_TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
C1_CSI = "\x9b31m"
HOSTILE = f"Groceries{WINDOW_TITLE}{CLEAR}{CLIPBOARD}{C1_CSI}\x7f"
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # anything but newline and tab


def cli(home: Path, *args: str) -> int:
    return main([args[0], "--home", str(home), *args[1:]])


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain text", "plain text"),
        ("\x1b[2J", "^[[2J"),
        ("\x1b]0;t\x07", "^[]0;t^G"),
        ("a\x00b\x7fc", "a^@b^?c"),
        ("\x9b31m", "\\x9b31m"),
        ("line\nnext\ttab\r", "line^Jnext^Itab^M"),
        ("é ✓ 日本", "é ✓ 日本"),
    ],
)
def test_control_characters_are_shown_in_caret_notation(raw, shown):
    assert visible(raw) == shown


def test_a_body_keeps_newlines_and_tabs():
    assert visible("a\nb\tc\x1b", keep="\n\t") == "a\nb\tc^["


@given(st.text())
def test_nothing_visible_can_reach_a_terminal_as_a_control(value):
    assert not RAW.search(visible(value, keep="\n\t"))
    assert "\n" not in visible(value)


@given(st.recursive(st.text() | st.integers(), lambda inner: st.lists(inner, max_size=3)))
def test_json_output_is_exact_and_holds_no_raw_control(value):
    out = dumps({"value": value})
    assert json.loads(out) == {"value": value}
    assert not RAW.search(out)


@pytest.fixture
def hostile_home(home, fake, env):
    """A conversation whose every field the model or a sender wrote holds escape sequences."""
    write_config(home, titles={"enabled": True}, agents={"critic": {"description": "Checks"}})
    fake.default = lambda request: (
        text(f"Title: {HOSTILE}")
        if request.system_text == TITLE_SYSTEM
        else text(f"Summary: {HOSTILE}")
        if request.system_text == SUMMARY_SYSTEM
        else text("ok")
    )
    fake.add(tool_use(f"evil{CLEAR}", {}), entry_agent=True)
    fake.add(
        tool_use("start_task", {"task": f"check {HOSTILE}", "agents": ["critic"], "max_turns": 1}),
        entry_agent=True,
    )
    fake.add(text(f"checked {CLIPBOARD}"), agent="critic")
    fake.add(text(f"Here you go {WINDOW_TITLE}\nline two"), entry_agent=True)
    drop(home, f"hello {CLEAR} there", "m1")
    (home / "inbox" / f"bad{CLEAR}.xyz").write_text("not a message")
    run_once(home, env)
    return home


def test_a_generated_title_is_cleaned_before_it_is_stored(hostile_home):
    (row,) = db(hostile_home).execute("SELECT title FROM conversations")
    assert not RAW.search(row["title"]) and row["title"].startswith("Groceries")


COMMANDS = [
    ("conversations",),
    ("show", "{id}"),
    ("show", "{id}", "--usage"),
    ("events",),
    ("status",),
    ("tasks",),
    ("export", "{id}", "--format", "markdown"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_no_command_sends_a_control_character_to_the_terminal(hostile_home, capsys, command):
    with db(hostile_home) as connection:  # a title stored before titles were cleaned
        connection.execute("UPDATE conversations SET title = ?, summary = ?", (HOSTILE, HOSTILE))
    (row,) = db(hostile_home).execute("SELECT id FROM conversations")
    main_args = [part.format(id=row["id"]) for part in command]
    cli(hostile_home, *main_args)
    out, err = capsys.readouterr()
    assert not RAW.search(out), repr(out)
    assert not RAW.search(err), repr(err)
    assert "^[" in out  # the hostile text was there, and shown


def test_tasks_show_shows_the_task_text_safely(hostile_home, capsys):
    (task,) = db(hostile_home).execute("SELECT id FROM tasks")
    assert cli(hostile_home, "tasks", "show", task["id"]) == 0
    out = capsys.readouterr().out
    assert not RAW.search(out) and "check Groceries^[]0;pwned^G" in out


def test_json_output_keeps_the_exact_title(hostile_home, capsys):
    with db(hostile_home) as connection:
        connection.execute("UPDATE conversations SET title = ?", (HOSTILE,))
    assert cli(hostile_home, "conversations", "--json") == 0
    out = capsys.readouterr().out
    assert not RAW.search(out)
    (listed,) = json.loads(out)
    assert listed["title"] == HOSTILE


def test_rename_refuses_a_title_with_a_control_character(hostile_home, capsys):
    (row,) = db(hostile_home).execute("SELECT id, title FROM conversations")
    assert cli(hostile_home, "rename", row["id"], f"Nice{WINDOW_TITLE}") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "control character" in err and not RAW.search(err)
    (after,) = db(hostile_home).execute("SELECT title FROM conversations")
    assert after["title"] == row["title"]
