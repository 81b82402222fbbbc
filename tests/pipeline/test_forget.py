"""``forget``: what was said, and everything derived from it, gone to the last byte.

A canary string is said in a forgotten turn and reaches its text, an attachment, a tool
result, the outbox, a title, a summary, a memory file and another conversation's starting
profile; after the forget, a scan of every byte of every file under the home finds it nowhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smarthole.agent.memorytext import PROFILE
from smarthole.agent.prompts import SUMMARY_SYSTEM, TITLE_SYSTEM
from smarthole.testing import memory_call, text
from tests.helpers import (
    db,
    drop,
    drop_folder,
    finals,
    in_process,
    run_once,
    wait_for,
    write_config,
)

CANARY = b"zqxcanary"


def found_in(root: Path, needle: bytes = CANARY) -> list[str]:
    """Every file under ``root`` whose bytes hold ``needle``."""
    return [
        str(path.relative_to(root))
        for path in sorted(root.rglob("*"))
        if path.is_file() and needle in path.read_bytes()
    ]


def a_turn(request) -> bool:
    return request.system_text not in (TITLE_SYSTEM, SUMMARY_SYSTEM)


def titles(fake, title: str, summary: str | None = None) -> None:
    fake.add(text(title), when=lambda r: r.system_text == TITLE_SYSTEM)
    if summary is not None:
        fake.add(text(summary), when=lambda r: r.system_text == SUMMARY_SYSTEM)


def conversation_ids(home) -> list[str]:
    with db(home) as connection:
        return [r[0] for r in connection.execute("SELECT id FROM conversations ORDER BY key")]


def memory_of(home) -> dict[str, str]:
    with db(home) as connection:
        return {r[0]: r[1] for r in connection.execute("SELECT path, text FROM memory_files")}


@pytest.fixture
def said(home, fake, env):
    """Conversation A says the canary everywhere; conversation B adds to the profile A began.
    Returns (A, B)."""
    write_config(home, titles={"enabled": True})
    fake.add(
        memory_call("create", path=PROFILE, file_text="Secret word: zqxcanary-memory"),
        when=a_turn,
    )
    fake.add(memory_call("view", path=PROFILE), when=a_turn)  # a tool result with it
    fake.add(text("I will remember zqxcanary-reply."), when=a_turn)
    titles(fake, "The zqxcanary-title talk")
    drop_folder(
        home,
        "secret",
        {"message.md": b"My secret word is zqxcanary-text", "notes.txt": b"zqxcanary-attachment"},
    )
    run_once(home, env)
    fake.add(
        memory_call("insert", path=PROFILE, insert_line=1, insert_text="Likes tea"), when=a_turn
    )
    fake.add(text("Noted."), when=a_turn)
    titles(fake, "Tea", summary="They told me zqxcanary-summary.")
    drop(home, "I like tea", "m-tea", new_conversation=True)
    run_once(home, env)
    first, second = conversation_ids(home)
    assert found_in(home), "the canary was stored"
    with db(home) as connection:
        (summary,) = connection.execute(
            "SELECT summary FROM conversations WHERE id = ?", (first,)
        ).fetchone()
    assert "zqxcanary-summary" in summary
    return first, second


def test_forgetting_a_conversation_leaves_no_byte_of_it_in_the_home(home, said, capsys):
    first, second = said
    done = in_process(capsys, "forget", first, "--yes", "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert f"forgot conversation {first}" in done.stdout
    assert f"memory: rewrote {PROFILE} without what came from it" in done.stdout
    assert found_in(home) == []
    assert conversation_ids(home) == [second]
    assert memory_of(home) == {PROFILE: "Likes tea\n"}, "what came from B stays"
    with db(home) as connection:
        events = connection.execute(
            "SELECT type, data FROM events WHERE conversation_id = ?", (first,)
        )
        kept = [(e["type"], json.loads(e["data"])) for e in events]
        (profile,) = connection.execute(
            "SELECT text FROM memory_profiles WHERE conversation_id = ?", (second,)
        ).fetchone()
    assert kept and all(data == {} for _, data in kept), "the events stay, with no text"
    assert profile == "", "B began with A's profile: rewritten without it"
    assert (home / ".smarthole" / "smarthole.db-wal").stat().st_size == 0


def test_forgetting_a_turn_keeps_the_rest_and_recomputes_the_title(home, fake, env, said, capsys):
    first, _ = said
    done = in_process(
        capsys, "forget", first, "--turn", "1", "--yes", "--json", "--home", str(home)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["turns"] == [1] and report["memory_rewritten"] == [PROFILE]
    assert found_in(home) == []
    with db(home) as connection:
        row = connection.execute(
            "SELECT title, title_state, summary FROM conversations WHERE id = ?", (first,)
        ).fetchone()
    assert tuple(row) == (None, "pending", None), "made again from what is left"


def test_forgetting_a_message_forgets_its_turn(home, fake, env, capsys):
    fake.add(text("Hi."))
    drop(home, "hello", "m1")
    run_once(home, env)
    fake.add(memory_call("create", path="/memories/words.md", file_text="zqxcanary-word"))
    fake.add(text("Kept."))
    drop(home, "remember zqxcanary-word", "m2")
    run_once(home, env)
    (conversation,) = conversation_ids(home)
    done = in_process(
        capsys, "forget", conversation, "--message", "m2", "--yes", "--home", str(home)
    )
    assert done.returncode == 0, done.stderr
    assert "memory: deleted /memories/words.md" in done.stdout
    assert found_in(home) == []
    with db(home) as connection:
        left = [r[0] for r in connection.execute("SELECT message_id FROM turns")]
    assert left == ["m1"]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (["nope"], "no conversation"),
        (["{c}", "--turn", "9"], "has no turn 9"),
        (["{c}", "--message", "m9"], "has no message 'm9'"),
        (["{c}", "--turn", "1", "--message", "m1"], "not both"),
    ],
)
def test_an_unknown_conversation_turn_or_message_is_exit_2(
    home, fake, env, capsys, arguments, error
):
    fake.add(text("Hi."))
    drop(home, "hello", "m1")
    run_once(home, env)
    (conversation,) = conversation_ids(home)
    words = [a.format(c=conversation) for a in arguments]
    done = in_process(capsys, "forget", *words, "--yes", "--home", str(home))
    assert done.returncode == 2 and error in done.stderr
    assert conversation_ids(home) == [conversation]


def test_forget_asks_first_and_refuses_without_a_terminal(home, fake, env, capsys):
    fake.add(text("Hi."))
    drop(home, "hello", "m1")
    run_once(home, env)
    (conversation,) = conversation_ids(home)
    done = in_process(capsys, "forget", conversation, "--home", str(home))
    assert done.returncode == 2 and "--yes" in done.stderr
    assert conversation_ids(home) == [conversation]


@pytest.mark.parametrize(("answer", "said"), [("y", "forgot conversation"), ("n", "nothing was")])
def test_forget_on_a_terminal_asks_for_a_yes(home, fake, env, answer, said):
    import os
    import pty
    import subprocess
    import sys

    fake.add(text("Hi."))
    drop(home, "hello", "m1")
    run_once(home, env)
    (conversation,) = conversation_ids(home)
    terminal, other_end = pty.openpty()
    command = [sys.executable, "-m", "smarthole", "forget", conversation, "--home", str(home)]
    process = subprocess.Popen(
        command, stdin=other_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    os.close(other_end)
    os.write(terminal, f"{answer}\n".encode())
    out, err = process.communicate(timeout=60)
    os.close(terminal)
    assert process.returncode == 0, err
    assert f"Forget conversation {conversation} and everything derived from it" in out.decode()
    assert said in out.decode()
    assert conversation_ids(home) == ([] if answer == "y" else [conversation])


def test_a_running_turn_is_not_forgotten_until_it_ends(home, fake, env, threads, capsys):
    import threading

    from smarthole.testing import hold

    release = threading.Event()
    fake.add(hold(release, text("Done.")))
    daemon = threads(home, env)
    drop(home, "take your time", "m1")
    fake.wait_for_requests(1, timeout=30)
    (conversation,) = conversation_ids(home)
    refused = in_process(capsys, "forget", conversation, "--yes", "--home", str(home))
    release.set()
    assert refused.returncode == 2 and "turn 1 of" in refused.stderr and "running" in refused.stderr
    wait_for(lambda: finals(home), 30, "the reply")
    daemon.stop()
    done = in_process(capsys, "forget", conversation, "--yes", "--home", str(home))
    assert done.returncode == 0 and conversation_ids(home) == []


def test_a_queued_message_is_forgotten_with_its_file(home, fake, env, capsys):
    fake.add(text("Hi."))
    drop(home, "hello", "m1")
    run_once(home, env)
    (conversation,) = conversation_ids(home)
    with db(home) as connection:
        connection.execute(
            "INSERT INTO inbox (message_id, content_hash, source_name, claimed_path, payload, "
            "channel, conversation_id, status, sort_at, received_at, updated_at) VALUES "
            "('m2', 'h', 'm2.md', NULL, '{\"text\": \"zqxcanary-queued\"}', 'default', ?, "
            "'queued', '2026-11-28T00:00:00Z', '2026-11-28T00:00:00Z', '2026-11-28T00:00:00Z')",
            (conversation,),
        )
    done = in_process(
        capsys, "forget", conversation, "--message", "m2", "--yes", "--home", str(home)
    )
    assert done.returncode == 0, done.stderr
    assert found_in(home) == []
    assert conversation_ids(home) == [conversation], "the rest of the conversation stays"
