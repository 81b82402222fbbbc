"""Memory and forget across kill -9, with real daemon processes.

A memory write commits with its tool result, so a daemon killed in a run of writes applies
each exactly once, counted by the store. A forget works while the daemon runs, takes effect
at once, and a forget killed after its commit is finished by the next one.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

from smarthole.agent.memorytext import PROFILE
from smarthole.agent.prompts import SUMMARY_SYSTEM, TITLE_SYSTEM
from smarthole.testing import memory_call, text
from tests.helpers import db, drop, drop_folder, finals, smarthole, wait_for, write_config

WRITES = 30
CANARY = b"zqxcanary"


def writes_so_far(request) -> int:
    return sum(
        1
        for message in request.messages
        if message["role"] == "assistant"
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    )


def one_write_a_call(request):
    """Create /memories/log.md, then add a line per call, WRITES in all, then answer."""
    done = writes_so_far(request)
    if done == 0:
        return memory_call("create", path="/memories/log.md", file_text="line 0\n")
    if done < WRITES:
        return memory_call(
            "insert", path="/memories/log.md", insert_line=done, insert_text=f"line {done}"
        )
    return text("All written.")


def count(home, sql):
    with db(home) as connection:
        return connection.execute(sql).fetchone()[0]


def test_kill_9_during_memory_writes_applies_each_exactly_once(home, fake, env, daemons):
    write_config(home, conversation={"max_tool_iterations": WRITES + 5})
    fake.default = one_write_a_call
    first = daemons(home, env)
    drop(home, "write it all down", "m1")
    wait_for(lambda: count(home, "SELECT count(*) FROM memory_writes") >= 8, 30)
    first.kill()
    second = daemons(home, env)
    wait_for(lambda: finals(home), 60, "the final reply")
    second.close()
    (reply,) = finals(home)
    assert reply.text == "All written."
    expected = "".join(f"line {n}\n" for n in range(WRITES))
    with db(home) as connection:
        (log,) = connection.execute("SELECT text FROM memory_files").fetchone()
        writes = connection.execute("SELECT count(*) FROM memory_writes").fetchone()[0]
        results = connection.execute(
            "SELECT count(*) FROM message_rows m JOIN tool_calls t ON t.tool_use_id = "
            "m.tool_use_id WHERE t.name = 'memory' AND m.kind = 2"
        ).fetchone()[0]
    assert log == expected, "each write once: none lost, none twice"
    assert writes == WRITES
    assert results == WRITES, "each write acknowledged by one stored result"


def a_turn(request) -> bool:
    return request.system_text not in (TITLE_SYSTEM, SUMMARY_SYSTEM)


def say_the_canary(home, fake, env):
    """Through the running daemon: conversation A says the canary (text, attachment, tool
    result, reply, title, memory); B begins, which ends A (its summary) and adds to the
    profile. Returns (A, B)."""
    fake.add(
        memory_call("create", path=PROFILE, file_text="Secret word: zqxcanary-memory"),
        when=a_turn,
    )
    fake.add(memory_call("view", path=PROFILE), when=a_turn)
    fake.add(text("I will remember zqxcanary-reply."), when=a_turn)
    fake.add(text("The zqxcanary-title talk"), when=lambda r: r.system_text == TITLE_SYSTEM)
    drop_folder(
        home,
        "secret",
        {"message.md": b"My secret word is zqxcanary-text", "notes.txt": b"zqxcanary-attachment"},
    )
    wait_for(lambda: len(finals(home)) == 1, 30, "A's reply")
    fake.add(
        memory_call("insert", path=PROFILE, insert_line=1, insert_text="Likes tea"), when=a_turn
    )
    fake.add(text("Noted."), when=a_turn)
    fake.add(text("They said zqxcanary-summary."), when=lambda r: r.system_text == SUMMARY_SYSTEM)
    fake.add(text("Tea"), when=lambda r: r.system_text == TITLE_SYSTEM)
    drop(home, "I like tea", "m-tea", new_conversation=True)
    wait_for(lambda: len(finals(home)) == 2, 30, "B's reply")
    with db(home) as connection:
        wait_for(
            lambda: connection.execute(
                "SELECT count(*) FROM conversations WHERE summary LIKE '%zqxcanary%'"
            ).fetchone()[0],
            30,
            "A's summary",
        )
        wait_for(lambda: fake.pending() == 0, 30, "B's title")
        ids = [r[0] for r in connection.execute("SELECT id FROM conversations ORDER BY key")]
    return ids[0], ids[1]


def found_in(*roots) -> list[str]:
    return [
        str(path)
        for root in roots
        for path in sorted(root.rglob("*") if root.is_dir() else [root])
        if path.is_file() and CANARY in path.read_bytes()
    ]


def test_forget_with_the_daemon_running_leaves_nothing_and_later_turns_never_see_it(
    home, fake, env, daemons
):
    write_config(home, titles={"enabled": True})
    daemon = daemons(home, env)
    first, _ = say_the_canary(home, fake, env)
    assert found_in(home)
    done = smarthole("forget", first, "--yes", "--home", str(home), env=env)
    assert done.returncode == 0, done.stderr
    assert found_in(home, daemon.log) == [], "not in the home, nor in the daemon's log"
    fake.add(text("Tea it is."), when=a_turn)
    drop(home, "What do I like?", "m-next")
    wait_for(lambda: len(finals(home)) == 2 and fake.pending() == 0, 30, "the next reply")
    later = fake.requests[-1]
    assert CANARY.decode() not in str(later.body), "no later turn sees it"
    assert "Likes tea" in str(later.body)
    daemon.close()
    assert found_in(home, daemon.log) == []


def test_a_forget_killed_after_its_commit_is_finished_by_the_next(home, fake, env, daemons):
    write_config(home, titles={"enabled": True})
    daemon = daemons(home, env)
    first, _ = say_the_canary(home, fake, env)
    reader = sqlite3.connect(home / ".smarthole" / "smarthole.db", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM conversations").fetchone()  # holds the WAL
    forget = subprocess.Popen(
        [sys.executable, "-m", "smarthole", "forget", first, "--yes", "--home", str(home)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    watcher = sqlite3.connect(home / ".smarthole" / "smarthole.db")
    wait_for(
        lambda: watcher.execute("SELECT count(*) FROM forget_jobs").fetchone()[0], 30, "commit"
    )
    wait_for(lambda: not (home / "outbox").exists() or not found_in(home / "outbox"), 30)
    forget.kill()  # while it waits to checkpoint the WAL the reader holds
    forget.wait(10)
    watcher.close()
    reader.rollback()
    reader.close()
    assert count(home, "SELECT count(*) FROM forget_jobs") == 1, "a job left to finish"
    again = smarthole("forget", first, "--yes", "--home", str(home), env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"finished forgetting {first}"
    assert count(home, "SELECT count(*) FROM forget_jobs") == 0
    assert found_in(home, daemon.log) == []
    daemon.close()
