"""The CLI's dead ends: every command ends with one line and a meaningful exit status."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import drop, run_once, wait_for

from smarthole.testing import text

# -- Ctrl-C exits 130 (item 15) ---------------------------------------------------------------


class Command:
    """A CLI command as a subprocess whose output is collected in files (never a full pipe)."""

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

    def output(self) -> str:
        return self.out.read_text() + self.err.read_text()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


@pytest.mark.parametrize(
    ("args", "ready"),
    [
        (["send", "--wait", "hi"], "waiting for the reply"),
        (["events", "--follow"], "msg=m1"),
        (["resume"], "Enter number to resume"),
    ],
    ids=["send-wait", "events-follow", "resume-picker"],
)
def test_ctrl_c_exits_130(home, fake, env, tmp_path, args, ready):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    command = Command(tmp_path, env, *args, "--home", str(home))
    try:
        wait_for(lambda: ready in command.output(), 20, ready)
        command.process.send_signal(signal.SIGINT)
        assert command.process.wait(timeout=10) == 130, command.output()
        assert "Traceback" not in command.output()
    finally:
        command.close()
