"""sd_notify: readiness, status, watchdog, reload and stop, over a real AF_UNIX datagram socket."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smarthole import hookimpl
from smarthole.daemon import Daemon
from smarthole.daemon.notify import Notifier, socket_address, watchdog_interval
from smarthole.home import Home
from smarthole.testing import hold, text
from tests.helpers import drop, finals, wait_for, write_config


class ServiceManager:
    """The listening end of ``$NOTIFY_SOCKET``, as systemd holds it."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(socket_address(address))
        self.sock.setblocking(False)
        self.messages: list[dict[str, str]] = []

    def receive(self) -> None:
        """Read the datagrams waiting now (never blocks)."""
        while True:
            try:
                data = self.sock.recv(4096)
            except BlockingIOError:
                return
            fields = dict(line.split("=", 1) for line in data.decode().splitlines())
            self.messages.append(fields)

    def wait_for(self, predicate, timeout: float = 10.0, what: str = "") -> dict[str, str]:
        """The first message (new or already read) that matches ``predicate``."""
        seen = 0

        def found():
            nonlocal seen
            self.receive()
            for message in self.messages[seen:]:
                seen += 1
                if predicate(message):
                    return message
            return None

        return wait_for(found, timeout, what or "a notification")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path: AF_UNIX paths are limited to about 100 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="sh-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["path", "abstract"])
def manager(request, short_dir) -> Iterator[ServiceManager]:
    if request.param == "path":
        address = str(short_dir / "notify")
    else:
        address = f"@smarthole-test-{secrets.token_hex(6)}"
    listener = ServiceManager(address)
    yield listener
    listener.close()


# -- the protocol, in process -----------------------------------------------------------------


def test_messages_arrive_as_newline_separated_fields(manager):
    notifier = Notifier({"NOTIFY_SOCKET": manager.address})
    notifier.ready("idle")
    notifier.status("1 turn running")
    notifier.status("1 turn running")  # unchanged: not sent again
    notifier.reloading()
    notifier.stopping()
    notifier.close()
    manager.receive()
    assert manager.messages[0] == {"READY": "1", "STATUS": "idle"}
    assert manager.messages[1] == {"STATUS": "1 turn running"}
    reloading = manager.messages[2]
    assert reloading["RELOADING"] == "1"
    assert abs(int(reloading["MONOTONIC_USEC"]) - time.monotonic_ns() // 1000) < 10_000_000
    assert manager.messages[3] == {"STOPPING": "1", "STATUS": "stopping"}
    assert len(manager.messages) == 4


def test_the_watchdog_is_petted_every_half_interval(manager):
    env = {"NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "2000000"}
    notifier = Notifier(env)
    assert notifier.interval == 1.0
    assert notifier.pet(100.0) == 101.0
    assert notifier.pet(100.5) == 101.0  # not due yet: nothing sent
    assert notifier.pet(101.0) == 102.0
    manager.receive()
    assert manager.messages == [{"WATCHDOG": "1"}, {"WATCHDOG": "1"}]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval(env, expected):
    assert watchdog_interval(env, os.getpid()) == expected


def test_without_a_notify_socket_nothing_is_sent():
    notifier = Notifier({"WATCHDOG_USEC": "1000000"})
    assert not notifier.enabled
    assert notifier.send("READY=1") is False
    assert notifier.pet() is None


def test_a_socket_nobody_listens_on_is_logged_once_and_never_raises(short_dir, caplog):
    notifier = Notifier({"NOTIFY_SOCKET": str(short_dir / "gone")})
    assert notifier.send("READY=1") is False
    assert notifier.send("STATUS=x") is False
    assert caplog.text.count("cannot notify the service manager") == 1


def pets(manager: ServiceManager) -> int:
    manager.receive()
    return sum(1 for m in manager.messages if m.get("WATCHDOG") == "1")


class StuckLoop:
    """Blocks the main loop (message_received runs there) until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    @hookimpl
    def message_received(self, message):
        self.entered.set()
        self.release.wait(30)


def test_a_stuck_main_loop_stops_petting_the_watchdog(home, fake, env, manager):
    fake.default = text("ok")
    stuck = StuckLoop()
    env = {**env, "NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "100000"}
    daemon = Daemon(Home(home), env=env, handle_signals=False, extra_plugins=[("stuck", stuck)])
    thread = threading.Thread(target=daemon.run, name="test-daemon")
    thread.start()
    try:
        wait_for(lambda: pets(manager) >= 2, 10, "the watchdog while the loop runs")
        drop(home, "hello", "m1")
        assert stuck.entered.wait(10)
        manager.receive()
        before = pets(manager)
        # Ten whole intervals of 50 ms with the loop stuck: systemd would see no ping at all.
        stuck.release.wait(0.5)
        assert pets(manager) <= before + 1  # one may have been in flight as the loop stuck
        stuck.release.set()
        wait_for(lambda: pets(manager) >= before + 3, 10, "pings again once the loop runs")
    finally:
        stuck.release.set()
        daemon.request_stop()
        thread.join(30)


# -- the real daemon: a subprocess with signals, and in a thread --------------------------------


def test_the_daemon_reports_ready_status_watchdog_reload_and_stop(
    home, fake, env, daemons, threads, manager
):
    """With a socket path: ``smarthole run`` as its own process, stopped and reloaded by
    signals, as systemd runs it. With an abstract address: the same daemon in a thread."""
    in_thread = manager.address.startswith("@")
    write_config(home, daemon={"shutdown_grace_seconds": 10})
    release = threading.Event()
    fake.add(hold(release, text("done")))
    env = {**env, "NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "400000"}
    daemon = (threads if in_thread else daemons)(home, env)
    try:
        ready = manager.wait_for(lambda m: m.get("READY") == "1", what="READY=1")
        assert ready["STATUS"] == "idle"
        drop(home, "hello", "m1")
        fake.wait_for_requests(1)
        manager.wait_for(lambda m: m.get("STATUS") == "1 turn running", what="the status line")
    finally:
        release.set()
    wait_for(lambda: finals(home), 10, "the reply")
    manager.wait_for(lambda m: m.get("STATUS") == "idle", what="idle again")
    wait_for(lambda: pets(manager) >= 3, 10, "three watchdog pings")

    if in_thread:
        daemon.hangup()
    else:
        daemon.process.send_signal(signal.SIGHUP)
    reloading = manager.wait_for(lambda m: m.get("RELOADING") == "1", what="RELOADING=1")
    assert int(reloading["MONOTONIC_USEC"]) > 0
    manager.wait_for(lambda m: m.get("READY") == "1", what="READY=1 after the reload")

    assert (daemon.stop() if in_thread else daemon.terminate()) == 0
    manager.wait_for(lambda m: m.get("STOPPING") == "1", what="STOPPING=1")
