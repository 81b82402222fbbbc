"""Shared fixtures: tmp homes, the fake Messages API, and the daemon in and out of process."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoints, distributions
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from smarthole import plugins as plugins_module
from smarthole.app import App
from smarthole.daemon import Daemon, Runtime
from smarthole.daemon import signals as signals_module
from smarthole.home import Home
from smarthole.plugins import NO_AUTOLOAD_ENV
from smarthole.testing import FakeMessagesAPI

from .helpers import DaemonProcess, DaemonThread, forget_modules_under, write_config

# The libraries whose levels the CLI and the daemon set.
QUIETED = ("httpx2", "httpcore2", "anthropic", "mcp", "watchdog")


WORKERS_PER_CORE = 2
MOST_WORKERS = 8


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers a core (at most eight). A test here mostly waits on what it
    started (a daemon's start, a kill -9 and the restart, a server, a browser), so a core runs
    a second test meanwhile: on 2 cores, 4 workers took a third less time than 2 (the CLI,
    pipeline and MCP tests: 154 s -> 101 s); 6 were slower again (112 s)."""
    return max(1, min(MOST_WORKERS, WORKERS_PER_CORE * (os.cpu_count() or 1)))


def pytest_configure(config: pytest.Config) -> None:
    """Let the Ctrl-C tests' subprocesses receive SIGINT even when pytest was started with it
    ignored (a shell starts background jobs so, and an ignored signal stays ignored across
    exec). A Python handler is reset to the default in the child, so the child can be
    interrupted and shows what a person at a terminal would see.

    Hypothesis's timing checks (a deadline per example, "input generation is slow") say how
    busy the machine was, not whether a parser is right: off for every property test."""
    settings.register_profile(
        "smarthole", deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("smarthole")
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


@pytest.fixture(autouse=True)
def logging_as_it_was() -> Iterator[None]:
    """``main(["run", ...])`` in this process sets up logging for the whole process (the root
    logger's handlers, its level, the libraries' levels): put it all back after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in QUIETED}
    yield
    for handler in list(root.handlers):
        if handler not in handlers:  # pytest's own handlers come back at each phase
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)


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


@pytest.fixture
def runtimes(env: dict[str, str]) -> Iterator[Callable[[Path], Runtime]]:
    """``runtimes(home)``: what processes messages (processor, teams runner, inbox, outbox,
    ledger...) built in this process from the home's ``App``, as the daemon builds it, with
    the real SDK against the fake API and no daemon around it; closed at the end."""
    built: list[tuple[App, Runtime]] = []

    def build(home: Path) -> Runtime:
        app = App.load(Home(home))
        runtime = Runtime.build(app, env=env)
        built.append((app, runtime))
        return runtime

    yield build
    for app, runtime in reversed(built):
        runtime.close()
        app.close()


@pytest.fixture
def runtime(home: Path, runtimes: Callable[[Path], Runtime]) -> Runtime:
    """The :func:`runtimes` of ``home``."""
    return runtimes(home)


@pytest.fixture
def environ(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process's own environment made :func:`env`, for ``main([...])`` run in-process
    (a command that reads ``ANTHROPIC_*``, like ``run`` or ``chat``, reaches the fake API)."""
    for name in os.environ:
        if name.startswith(("ANTHROPIC_", "SMARTHOLE_")) and name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


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
def threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., DaemonThread]]:
    """Start daemons in threads of this process (``threads(home, env)``, ready unless
    ``ready=False``); any still running at the end are stopped. Where no kill -9, signal or
    process of its own is the point, this is ``daemons`` without a process start.

    ``smarthole reload`` run in-process (``main``) reaches them: its SIGHUP to this process's
    pid becomes :meth:`DaemonThread.hangup` (a real SIGHUP would end the test run)."""
    started: list[DaemonThread] = []

    def send_reload(pid: int) -> None:
        assert pid == os.getpid(), f"reload of pid {pid}, not a daemon of this test"
        for daemon in started:
            if daemon.thread.is_alive():
                daemon.hangup()

    monkeypatch.setattr(signals_module, "send_reload", send_reload)

    def start(home: Path, env: dict[str, str], *, ready: bool = True, **kwargs) -> DaemonThread:
        daemon = DaemonThread(home, env, **kwargs)
        started.append(daemon)
        return daemon.wait_ready() if ready else daemon

    yield start
    for daemon in started:
        daemon.stop()


@pytest.fixture
def live_daemon(home: Path, env: dict[str, str], threads: Callable[..., DaemonThread]) -> Daemon:
    """A daemon running in a thread of this process, stopped at the end of the test."""
    running = threads(home, env, ready=False)
    running.daemon.ready.wait(10)
    return running.daemon


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement the store runs from here on, in order."""
    seen: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(seen.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    return seen
