"""Start-up failures and signals: one owner for the handlers, one line for a bad start."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from smarthole import hookimpl
from smarthole.daemon import Daemon
from smarthole.daemon.signals import capture_signals
from smarthole.errors import ConfigError, PluginError
from smarthole.home import Home
from smarthole.testing import hold, text
from tests.helpers import drop, finals, in_process, smarthole, wait_for, write_config


def open_database_files(home: Path) -> list[str]:
    """The paths of this process's open descriptors that point into the home's database."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(home / ".smarthole" / "smarthole.db")):
            found.append(target)
    return found


class OpensTheStoreThenFails:
    @hookimpl
    def register_tools(self, register, app):
        app.store.plugin_data("x")
        raise RuntimeError("broken on purpose")


@pytest.fixture
def original_handlers():
    """The handlers before the test; the test must leave them exactly so."""
    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {signum: signal.getsignal(signum) for signum in watched}
    yield before
    for signum, handler in before.items():
        signal.signal(signum, handler)


# -- the context manager, in process ----------------------------------------------------------


def test_capture_signals_restores_the_handlers_when_the_block_fails(original_handlers):
    with pytest.raises(RuntimeError), capture_signals() as captured:
        assert signal.getsignal(signal.SIGHUP) == captured.handle
        raise RuntimeError("start-up failed")
    for signum, handler in original_handlers.items():
        assert signal.getsignal(signum) == handler


def test_capture_signals_records_a_signal_and_calls_back_outside_the_handler(
    original_handlers,
):
    heard: list[tuple[str, str]] = []
    with capture_signals(lambda s: heard.append((s.name, threading.current_thread().name))) as c:
        signal.raise_signal(signal.SIGHUP)
        wait_for(lambda: heard, 5, "the callback")
        assert not c.stop.is_set(), "SIGHUP is not a stop signal"
        signal.raise_signal(signal.SIGINT)
        assert c.stop.wait(5)
    assert heard == [("SIGHUP", "smarthole-signals"), ("SIGINT", "smarthole-signals")]
    assert c.exit_code() == 130


@pytest.mark.parametrize(
    ("env", "plugins", "error"),
    [
        ({}, [], ConfigError),  # no API key: Runtime.build fails after the store is open
        (
            {"ANTHROPIC_API_KEY": "test"},
            [("opens-then-fails", OpensTheStoreThenFails())],
            PluginError,
        ),
    ],
    ids=["no-api-key", "bad-plugin"],
)
def test_a_failed_start_restores_the_handlers_and_closes_the_store(
    home, original_handlers, env, plugins, error
):
    daemon = Daemon(Home(home), once=True, env=env, extra_plugins=plugins)
    with pytest.raises(error):
        daemon.run()
    for signum, handler in original_handlers.items():
        assert signal.getsignal(signum) == handler, signal.Signals(signum).name
    assert open_database_files(home) == []
    assert daemon.ready.is_set() and not daemon.started


# -- the real daemon, as a subprocess; `run` in this process where no signal is sent ---------


def write_plugin(folder: Path, source: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "bad.py").write_text(source)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("toml", "invalid TOML"),
        ("setting", "[daemon] workers must be an integer"),
        ("import", "failed to import: ZeroDivisionError"),
        ("startup", "failed in startup: boom"),
    ],
)
def test_a_bad_config_or_plugin_at_start_is_one_line_and_exit_2(
    home, environ, capsys, tmp_path, case, expected
):
    break_start(home, tmp_path, case)
    result = in_process(capsys, "run", "--home", str(home))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("smarthole: ") and expected in result.stderr


def test_a_plugin_failing_at_start_is_one_line_and_exit_2_from_the_process(home, env, tmp_path):
    """The same, end to end: ``smarthole run`` as its own process, nothing more at its exit."""
    break_start(home, tmp_path, "startup")
    result = smarthole("run", "--home", str(home), env=env, timeout=30)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("smarthole: ") and "failed in startup: boom" in result.stderr


def break_start(home: Path, tmp_path: Path, case: str) -> None:
    folder = tmp_path / "bad-plugins"
    write_config(home, plugins={"paths": [str(folder)]})
    if case == "toml":
        with (home / "config.toml").open("a") as config:
            config.write("[[[\n")
    elif case == "setting":
        write_config(home, daemon={"workers": "many"}, plugins={"paths": [str(folder)]})
    elif case == "import":
        write_plugin(folder, "1 / 0\n")
    else:
        write_plugin(
            folder,
            "from smarthole import hookimpl\n\n"
            "@hookimpl\ndef startup(app):\n    raise RuntimeError('boom')\n",
        )


def test_sighup_reloads_and_the_daemon_keeps_running(home, fake, env, daemons):
    fake.default = text("still here")
    daemon = daemons(home, env)
    daemon.process.send_signal(signal.SIGHUP)
    wait_for(lambda: "configuration reloaded" in daemon.output(), 10, "the reload log line")
    assert "Received SIGHUP; reloading the configuration" in daemon.output()
    drop(home, "are you there?", "m1")
    wait_for(lambda: finals(home), 10, "a reply after SIGHUP")
    assert daemon.process.poll() is None
    assert daemon.terminate(timeout=20) == 0


def test_the_first_ctrl_c_says_at_once_what_it_waits_for(home, fake, env, daemons):
    write_config(home, daemon={"shutdown_grace_seconds": 60})
    release = threading.Event()
    fake.add(hold(release, text("done after all")))
    daemon = daemons(home, env)
    drop(home, "hello", "m1")
    fake.wait_for_requests(1, timeout=10)
    daemon.process.send_signal(signal.SIGINT)
    try:
        wait_for(lambda: "stopping:" in daemon.output(), 10, "the stop message")
        assert daemon.process.poll() is None, "the message came while it waits, not after"
        assert (
            "Received SIGINT; stopping: waiting up to 60 s for 1 turn(s); "
            "press Ctrl-C again to exit now" in daemon.output()
        )
    finally:
        release.set()
    assert daemon.process.wait(timeout=20) == 130


def test_ctrl_c_on_an_idle_daemon_exits_130(home, env, daemons):
    daemon = daemons(home, env)
    daemon.process.send_signal(signal.SIGINT)
    assert daemon.process.wait(timeout=20) == 130
    assert "Received SIGINT; stopping" in daemon.output()
    assert "Traceback" not in daemon.output()
