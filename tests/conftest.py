"""Shared fixtures: tmp homes, the fake Messages API, and the daemon in and out of process."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoints, distributions
from pathlib import Path
from typing import Any

import pytest

from smarthole import plugins as plugins_module
from smarthole.daemon import Daemon
from smarthole.formats import dumps_toml
from smarthole.home import Home
from smarthole.pipeline.inbox import drop_message
from smarthole.plugins import NO_AUTOLOAD_ENV
from smarthole.testing import FakeMessagesAPI

REPO = Path(__file__).resolve().parent.parent
TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"


def pytest_configure(config: pytest.Config) -> None:
    """Let the Ctrl-C tests' subprocesses receive SIGINT even when pytest was started with it
    ignored (a shell starts background jobs so, and an ignored signal stays ignored across
    exec). A Python handler is reset to the default in the child, so the child can be
    interrupted and shows what a person at a terminal would see."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


@pytest.fixture(autouse=True)
def no_installed_plugins(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Entry-point discovery sees no installed package: a test never depends on what is installed.

    In this process discovery reads only the folders of :func:`plugin_site` (none unless a test
    asks); daemon subprocesses get ``SMARTHOLE_DISABLE_PLUGIN_AUTOLOAD=1`` through :func:`env`.
    """
    sites: list[Path] = []

    def visible_entry_points(*, group: str) -> EntryPoints:
        found = distributions(path=[str(site) for site in sites])
        return EntryPoints(ep for dist in found for ep in dist.entry_points if ep.group == group)

    monkeypatch.setattr(plugins_module, "entry_points", visible_entry_points)
    monkeypatch.setenv(NO_AUTOLOAD_ENV, "1")
    return sites


@pytest.fixture
def plugin_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_installed_plugins: list[Path]
) -> Iterator[Path]:
    """A folder on ``sys.path`` whose distributions' entry points the plugin loader does see."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv(NO_AUTOLOAD_ENV)
    no_installed_plugins.append(site)
    yield site
    forget_modules_under(site)


def forget_modules_under(folder: Path) -> None:
    """Drop modules imported from ``folder``, so the next test imports its own."""
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
            del sys.modules[name]


@pytest.fixture
def fake() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    Home(root).ensure()
    write_config(root)
    return root


@pytest.fixture
def env(fake: FakeMessagesAPI) -> dict[str, str]:
    """The environment a daemon needs to reach the fake API."""
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SMARTHOLE_"))
    }
    environment.update(
        {
            "ANTHROPIC_API_KEY": "test",
            "ANTHROPIC_BASE_URL": fake.url,
            "PYTHONUNBUFFERED": "1",
            NO_AUTOLOAD_ENV: "1",
        }
    )
    return environment


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

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()
        self._log_file.close()


@pytest.fixture
def daemons() -> Iterator[Callable[..., DaemonProcess]]:
    """Start daemon subprocesses; any still running at the end are killed."""
    started: list[DaemonProcess] = []

    def start(home: Path, env: dict[str, str], *extra: str, ready: bool = True) -> DaemonProcess:
        process = DaemonProcess(home, env, *extra)
        started.append(process)
        return process.wait_ready() if ready else process

    yield start
    for process in started:
        process.close()


@pytest.fixture
def live_daemon(home: Path, env: dict[str, str]) -> Iterator[Daemon]:
    """A daemon running in a thread of this process, stopped at the end of the test."""
    daemon = Daemon(Home(home), env=env, handle_signals=False)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            daemon.run()
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    thread = threading.Thread(target=run, name="test-daemon")
    thread.start()
    daemon.ready.wait(10)
    yield daemon
    daemon.request_stop()
    thread.join(30)
    assert not thread.is_alive()
    if errors:
        raise errors[0]
