"""Helpers the tests share: polling with a deadline, looking into a home, running smarthole."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smarthole.daemon import Daemon
from smarthole.formats import dumps_toml
from smarthole.home import Home
from smarthole.pipeline.inbox import drop_message

REPO = Path(__file__).resolve().parent.parent


TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, message: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or predicate}")
        time.sleep(0.01)


def db(home: Path) -> sqlite3.Connection:
    """A plain connection to a home's database, for looking at what the daemon stored."""
    connection = sqlite3.connect(home / ".smarthole" / "smarthole.db")
    connection.row_factory = sqlite3.Row
    return connection


def write_config(home: Path, **sections: dict[str, Any]) -> None:
    """A config.toml with fast test timings, plus the given sections."""
    base: dict[str, dict[str, Any]] = {
        "inbox": {"rescan_seconds": 0.5},
        "retry": {"base_delay_seconds": 0.05, "max_delay_seconds": 5.0},
        "daemon": {"shutdown_grace_seconds": 5.0},
        "titles": {"enabled": False},
        "plugins": {"paths": []},
    }
    for name, values in sections.items():
        base.setdefault(name, {}).update(values)
    (home / "config.toml").write_text(dumps_toml(base))


@dataclass
class OutboxFile:
    path: Path
    fields: dict[str, Any]
    text: str

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


def read_outbox(home: Path) -> list[OutboxFile]:
    """Every outbox file, parsed, in name (time) order."""
    files = []
    for path in sorted((home / "outbox").glob("*.md")):
        content = path.read_text()
        _, header, body = content.split("+++\n", 2)
        files.append(OutboxFile(path, tomllib.loads(header), body.rstrip("\n")))
    return files


def finals(home: Path) -> list[OutboxFile]:
    return [f for f in read_outbox(home) if f["kind"] in ("response", "error")]


def forget_modules_under(folder: Path) -> None:
    """Drop modules imported from ``folder``, so the next test imports its own."""
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
            del sys.modules[name]


def drop(home: Path, text: str, message_id: str, **fields: Any) -> Path:
    return drop_message(home / "inbox", text, message_id=message_id, **fields)


def run_once(home: Path, env: dict[str, str], **kwargs: Any) -> Daemon:
    """Run ``--once`` in this process (fast); the subprocess tests cover the real CLI."""
    daemon = Daemon(Home(home), once=True, env=env, handle_signals=False, **kwargs)
    assert daemon.run() == 0
    return daemon


def smarthole(
    *args: str, env: dict[str, str], timeout: float = 60, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "smarthole", *args],
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
        input=input,
    )


class DaemonProcess:
    """``smarthole run`` as a real subprocess."""

    def __init__(self, home: Path, env: dict[str, str], *extra: str) -> None:
        self.home = home
        self.log = home.parent / f"daemon-{time.monotonic_ns()}.log"
        self._log_file = self.log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "smarthole", "run", "--home", str(home), *extra],
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def wait_ready(self, timeout: float = 20) -> DaemonProcess:
        wait_for(
            lambda: "is watching" in self.output() or self.process.poll() is not None,
            timeout,
            "the daemon to start",
        )
        assert self.process.poll() is None, self.output()
        return self

    def output(self) -> str:
        return self.log.read_text()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 30) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def close(self, grace: float = 15) -> None:
        """End the daemon as a service manager would: SIGTERM, so it stops what it started
        (MCP servers, their process groups), then SIGKILL if it has not gone after ``grace``."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_file.close()


class Command:
    """A CLI command as a subprocess: stdin a pipe, its output collected in files (never a
    full pipe), so a test can read what it said so far."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *args: str) -> None:
        self.out = tmp_path / f"out-{time.monotonic_ns()}"
        self.err = self.out.with_suffix(".err")
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "smarthole", *args],
                env=env,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                text=True,
            )

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def stdout(self) -> str:
        return self.out.read_text()

    def stderr(self) -> str:
        return self.err.read_text()

    def output(self) -> str:
        return self.stdout() + self.stderr()

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
