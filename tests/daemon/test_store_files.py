"""The store's files stay the ones the daemon holds, whatever runs beside it (issue 41, 0a/0c).

Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
included; a connection of another process that then closes believes it is the last one and
deletes the WAL the daemon still writes into. From then on the daemon commits into a deleted
file: no other process sees it, and a kill -9 loses it. These tests run every read-only
command beside a daemon in each way one can run, then look at ``/proc/<pid>/fd`` and kill -9.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from smarthole.cli.health import deleted_store_files
from smarthole.home import Home
from smarthole.testing import FakeMessagesAPI
from smarthole.testing.replies import echo
from tests.helpers import Command, drop, smarthole, wait_for, write_config

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")


@pytest.fixture(autouse=True)
def echoing(fake: FakeMessagesAPI) -> None:
    fake.default = echo()


# Every command that only reads the store, each in the same process, one after the other:
# each opens the store and closes it again, as a person running them one by one would.
READ_ONLY = (
    ("status",),
    ("status", "--json"),
    ("status", "--check"),
    ("ls",),
    ("ls", "--json"),
    ("search", "hello"),
    ("events",),
    ("usage",),
    ("approvals",),
    ("schedules",),
    ("tasks",),
    ("agents",),
    ("plugins",),
)
RUN_ALL = """
import sys
from smarthole.cli import main
home = sys.argv[1]
for argv in {commands!r}:
    main([*argv, "--home", home])
"""


def run_read_only_commands(home: Path, env: dict[str, str]) -> None:
    script = RUN_ALL.format(commands=READ_ONLY)
    done = subprocess.run(
        [sys.executable, "-c", script, str(home)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr


def committed_replies(home: Path, *message_ids: str) -> int:
    """How many of ``message_ids`` have a final reply recorded in the store, read as a new
    process reads it after a crash."""
    marks = ", ".join("?" * len(message_ids))
    with contextlib.closing(sqlite3.connect(Home(home).database)) as db:
        (count,) = db.execute(
            f"SELECT count(*) FROM outbox WHERE kind = 'response' AND in_reply_to IN ({marks})",
            message_ids,
        ).fetchone()
    return int(count)


def read_through_the_view(output: str) -> None:
    """One API read through the view whose link is in ``output``."""
    url, token = re.search(r"Open (http://[^/]+/)\?token=([\w-]+)", output).groups()
    request = urllib.request.Request(
        url + "api/conversations", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


def exchange(home: Path, message_id: str) -> None:
    """Drop a message and wait until its reply is committed (the file comes just before)."""
    drop(home, f"hello {message_id}", message_id)
    wait_for(lambda: committed_replies(home, message_id), timeout=60)


def check_beside(home: Path, env: dict[str, str], holders: list[subprocess.Popen[str]]) -> None:
    """Run the read-only commands beside ``holders`` (the processes holding the store), then
    check none of them writes into a deleted store file and a kill -9 keeps what was said."""
    exchange(home, "before")
    run_read_only_commands(home, env)
    for holder in holders:
        assert deleted_store_files(Home(home), holder.pid) == [], holder.args
    exchange(home, "after")  # committed after the commands ran...
    for holder in holders:
        holder.kill()
        holder.wait(timeout=10)
    assert committed_replies(home, "before", "after") == 2  # ...and still there after the kill -9


@pytest.mark.parametrize("web", [False, True], ids=["plain", "web-enabled"])
def test_read_only_commands_beside_run_leave_its_store_files(home, env, daemons, web):
    if web:
        write_config(home, web={"enabled": True, "port": 0})
    daemon = daemons(home, env)
    if web:
        wait_for(lambda: "Open http" in daemon.output(), timeout=30)
        read_through_the_view(daemon.output())
    check_beside(home, env, [daemon.process])


def test_read_only_commands_beside_run_and_a_web_process(home, env, daemons, tmp_path):
    daemon = daemons(home, env)
    web = Command(tmp_path, env, "web", "--port", "0", "--home", str(home))
    try:
        wait_for(lambda: "Open http" in web.stdout(), timeout=30)
        read_through_the_view(web.stdout())
        check_beside(home, env, [daemon.process, web.process])
    finally:
        web.close()


def test_read_only_commands_beside_a_chats_own_daemon(home, env, tmp_path):
    chat = Command(tmp_path, env, "chat", "--home", str(home))
    try:
        wait_for(lambda: "runs one itself" in chat.stdout(), timeout=60)
        chat.type("hello from the chat\n")
        wait_for(lambda: "echo: hello from the chat" in chat.stdout(), timeout=60)
        check_beside(home, env, [chat.process])
    finally:
        chat.close()


def test_status_check_reports_a_daemon_writing_into_deleted_store_files(home, env, daemons):
    daemon = daemons(home, env)
    exchange(home, "first")
    wal = Home(home).database.with_name("smarthole.db-wal")
    wal.unlink()  # what a WAL-deleting neighbour did before the fix
    checked = smarthole("status", "--check", "--home", str(home), env=env)
    assert checked.returncode == 1
    assert f"the daemon (pid {daemon.process.pid}) writes into deleted store files" in (
        checked.stdout + checked.stderr
    )
    assert "smarthole.db-wal" in checked.stdout + checked.stderr


def test_a_hard_link_of_the_database_in_the_inbox_is_set_aside_unopened(home, env, daemons):
    daemon = daemons(home, env)
    exchange(home, "first")
    os.link(Home(home).database, Home(home).inbox / "store.md")
    reason = wait_for(lambda: list(Home(home).failed.glob("*store.md.error.txt")), timeout=30)
    assert "hard-linked" in reason[0].read_text()
    run_read_only_commands(home, env)
    assert deleted_store_files(Home(home), daemon.process.pid) == []
    exchange(home, "after")
    daemon.kill()
    assert committed_replies(home, "first", "after") == 2
