"""Helpers of the web view's tests: the view as a subprocess, a home's rows, a scripted team."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from smarthole.testing import text, tool_use
from tests.helpers import db, wait_for

SERVE = (
    "import sys, argparse; from smarthole.web.command import add_arguments, run; "
    "parser = argparse.ArgumentParser(); parser.add_argument('--home'); add_arguments(parser); "
    "sys.exit(run(parser.parse_args(sys.argv[1:])))"
)


class WebProcess:
    """``smarthole web`` as a real process (through the command module the CLI registers)."""

    def __init__(self, home: Path, port: int, env: dict[str, str], *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVE, "--home", str(home), "--port", str(port), *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.first_line = self.process.stdout.readline().strip()

    @property
    def link(self) -> str:
        return self.first_line.removeprefix("Open ")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def close(self) -> str:
        """Stop it (Ctrl-C) and return what it wrote on stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        assert self.process.stderr is not None
        return self.process.stderr.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def counts(home: Path) -> dict[str, int]:
    """How many rows each table the daemon writes has: what a page must never change."""
    tables = ("events", "message_rows", "turn_rows", "tasks", "task_turns", "outbox", "inbox")
    connection = db(home)
    try:
        return {t: connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}
    finally:
        connection.close()


def event_ids(home: Path, after: int = 0) -> list[int]:
    connection = db(home)
    try:
        rows = connection.execute("SELECT id FROM events WHERE id > ? ORDER BY id", (after,))
        return [row[0] for row in rows]
    finally:
        connection.close()


def script_team(fake: Any, *, critic: Any = None, task: str = "Find the capital of France") -> None:
    """The entry agent starts a task; researcher, critic, researcher take turns; the entry
    agent answers. ``critic`` replaces the critic's reply (a held one, say)."""
    fake.add(
        tool_use("start_task", {"task": task, "agents": ["researcher", "critic"], "max_turns": 3}),
        entry_agent=True,
    )
    fake.add(tool_use("read_file", {"path": "geography.md"}), agent="researcher")
    fake.add(text("Paris, according to geography.md."), agent="researcher")
    fake.add(critic or text("Confirmed: **Paris**."), agent="critic")
    fake.add(tool_use("finish_task", {"result": "The capital is Paris."}), agent="researcher")
    fake.add(text("Done."), agent="researcher")
    fake.add(text("The team says: Paris."), entry_agent=True)


def wait_until(predicate: Any, message: str, timeout: float = 20) -> Any:
    return wait_for(predicate, timeout, message)
