"""Every built-in command answers through an inbox file, the desktop bridge and chat, without a
model call (the state each one changes is tested in test_commands)."""

from __future__ import annotations

import pytest

from tests.desktop.desktop import FakeDesktop, enable_bridge
from tests.helpers import drop, in_process, read_outbox, run_once

from .bursts import EVERY_COMMAND


@pytest.mark.parametrize("typed, said", EVERY_COMMAND)
def test_through_an_inbox_file(home, fake, env, typed, said):
    drop(home, typed, "c1")
    run_once(home, env)
    (reply,) = read_outbox(home)
    assert reply["kind"] == "command" and reply["command"] == typed.split()[0][1:]
    assert reply.text.startswith(said)
    assert fake.requests == []


def test_through_the_desktop_bridge(home, fake, env, threads):
    desktop = FakeDesktop().start()
    try:
        enable_bridge(home, desktop)
        threads(home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly
        desktop.wait_registered()
        for typed, said in EVERY_COMMAND:
            message_id = desktop.route(typed)
            (notification,) = desktop.wait_response(message_id, "notification")
            assert notification["payload"]["body"].startswith(said), typed
    finally:
        desktop.stop()
    assert fake.requests == []


def test_through_chat(home, fake, environ, capsys):
    typed = "".join(f"{line}\n" for line, _ in EVERY_COMMAND)
    result = in_process(capsys, "chat", "--home", str(home), "--timeout", "20", input=typed)
    assert result.returncode == 0, result.stderr
    for line, said in EVERY_COMMAND:
        assert f"smarthole: {said}" in result.stdout, line
    assert fake.requests == []
