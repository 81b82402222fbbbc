"""``smarthole memory``: the person reads, corrects and erases what the agent keeps."""

from __future__ import annotations

import json
import sys

import pytest

from smarthole.agent.memorytext import PROFILE
from smarthole.testing import memory_call, text
from tests.helpers import db, drop, in_process, run_once


@pytest.fixture
def remembered(home, fake, env):
    """A profile the agent wrote in turn 1 of a conversation (message m1)."""
    fake.add(memory_call("create", path=PROFILE, file_text="Name: Ana\nLikes tea\n"))
    fake.add(memory_call("create", path="/memories/notes/work.md", file_text="Works at a bakery"))
    fake.add(text("Noted."))
    drop(home, "I'm Ana, I like tea and bake bread for a living", "m1")
    run_once(home, env)
    return home


def smarthole(capsys, home, *args, **kwargs):
    return in_process(capsys, *args, "--home", str(home), **kwargs)


def test_memory_lists_each_file_with_its_size_and_sources(remembered, capsys):
    listed = smarthole(capsys, remembered, "memory")
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["PATH", "SIZE", "UPDATED", "SOURCES"]
    assert [line.split()[0] for line in lines[1:]] == ["/memories/notes/work.md", PROFILE]
    assert lines[2].split()[1] == "20" and lines[2].split()[-1] == "1"
    data = json.loads(smarthole(capsys, remembered, "memory", "--json").stdout)
    assert [(f["path"], f["size"], f["sources"]) for f in data] == [
        ("/memories/notes/work.md", 17, 1),
        (PROFILE, 20, 1),
    ]


def test_show_gives_each_line_with_the_writes_it_came_from(remembered, capsys):
    shown = smarthole(capsys, remembered, "memory", "show", "profile.md")
    assert shown.returncode == 0, shown.stderr
    assert "        w1 | Name: Ana" in shown.stdout
    assert "        w1 | Likes tea" in shown.stdout
    (write,) = [line for line in shown.stdout.splitlines() if line.startswith("  w1 ")]
    assert "create" in write and "by agent (assistant)" in write
    assert "turn 1, message m1" in write
    data = json.loads(smarthole(capsys, remembered, "memory", "show", PROFILE, "--json").stdout)
    assert data["text"] == "Name: Ana\nLikes tea\n"
    assert data["lines"][:2] == [
        {"text": "Name: Ana", "writes": [1]},
        {"text": "Likes tea", "writes": [1]},
    ]
    (write,) = data["writes"]
    assert (write["operation"], write["by"], write["sources"], write["turn"]) == (
        "create",
        "agent",
        ["m1"],
        1,
    )


def test_edit_opens_the_editor_and_records_the_persons_write(remembered, capsys, monkeypatch):
    script = "import sys; p = sys.argv[1]; open(p, 'a').write('Prefers mornings\\n')"
    monkeypatch.setenv("EDITOR", f'{sys.executable} -c "{script}"')
    monkeypatch.delenv("VISUAL", raising=False)
    edited = smarthole(capsys, remembered, "memory", "edit", PROFILE)
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.strip() == f"saved {PROFILE}"
    data = json.loads(smarthole(capsys, remembered, "memory", "show", PROFILE, "--json").stdout)
    assert data["text"] == "Name: Ana\nLikes tea\nPrefers mornings\n"
    assert [(w["by"], w["sources"]) for w in data["writes"]] == [("agent", ["m1"]), ("person", [])]
    assert data["lines"][2] == {"text": "Prefers mornings", "writes": [3]}
    with db(remembered) as connection:
        (event,) = connection.execute(
            "SELECT data FROM events WHERE type = 'memory_written' AND json_extract(data, "
            "'$.by') = 'person'"
        ).fetchall()
    assert json.loads(event[0])["operation"] == "create"


def test_an_editor_that_fails_changes_nothing(remembered, capsys, monkeypatch):
    monkeypatch.setenv("EDITOR", f'{sys.executable} -c "raise SystemExit(3)"')
    failed = smarthole(capsys, remembered, "memory", "edit", PROFILE)
    assert failed.returncode == 2 and "unchanged" in failed.stderr


def test_rm_deletes_a_file_and_says_so(remembered, capsys):
    removed = smarthole(capsys, remembered, "memory", "rm", "/memories/notes")
    assert removed.returncode == 0 and removed.stdout.strip() == "removed /memories/notes"
    listed = json.loads(smarthole(capsys, remembered, "memory", "--json").stdout)
    assert [f["path"] for f in listed] == [PROFILE]
    with db(remembered) as connection:
        (event,) = connection.execute(
            "SELECT data FROM events WHERE type = 'memory_deleted'"
        ).fetchall()
    assert json.loads(event[0])["path"] == "/memories/notes/work.md"


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["memory", "show", "nothing.md"], 1, "no memory file /memories/nothing.md"),
        (["memory", "rm", "nothing.md"], 1, "no memory file /memories/nothing.md"),
        (["memory", "show", "/etc/passwd"], 1, "Path must start with /memories"),
        (["memory", "show", "../x"], 1, "would escape"),
    ],
)
def test_an_unknown_or_bad_path_is_refused(remembered, capsys, args, code, said):
    done = smarthole(capsys, remembered, *args)
    assert done.returncode == code and said in done.stderr


def test_an_empty_memory_says_so(home, capsys):
    assert smarthole(capsys, home, "memory").stdout.strip() == "The memory is empty."


def test_search_memory_finds_the_files_holding_every_word(remembered, capsys):
    found = smarthole(capsys, remembered, "search", "--memory", "TEA ana")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0].startswith(f"{PROFILE} · updated ")
    assert lines[1].strip() == "Name: Ana"
    hits = json.loads(
        smarthole(capsys, remembered, "search", "--memory", "bakery", "--json").stdout
    )
    assert [(h["path"], h["line"]) for h in hits] == [
        ("/memories/notes/work.md", "Works at a bakery")
    ]
    nothing = smarthole(capsys, remembered, "search", "--memory", "coffee")
    assert nothing.stdout.strip() == "Nothing found."


def test_show_marks_the_turns_that_wrote_memory(remembered, fake, env, capsys):
    fake.add(text("Hi."))
    drop(remembered, "hello", "m2")
    run_once(remembered, env)
    with db(remembered) as connection:
        (conversation,) = [r[0] for r in connection.execute("SELECT id FROM conversations")]
    shown = smarthole(capsys, remembered, "show", conversation).stdout
    first, second = shown.split("── turn 2")
    assert f"   memory: wrote {PROFILE}, /memories/notes/work.md" in first
    assert "memory:" not in second
