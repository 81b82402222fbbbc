"""kill -9 of the real daemon during an MCP call: re-run only what is safe to re-run.

The daemon killed is a subprocess; the restart after it runs in a thread of this process.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from smarthole.agent.client import IN_DOUBT
from smarthole.testing import text, tool_use
from tests.helpers import drop, finals, wait_for, write_config


def runs(home: Path) -> list[str]:
    log = home / "mcp-runs.log"
    return log.read_text().splitlines() if log.exists() else []


def end_orphan(started: Path) -> None:
    """The killed daemon's server lives on, mid-call: end it, as a reboot would."""
    pid = int(wait_for(started.read_text, 10, "the server's pid"))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    started.unlink()


def test_kill_during_a_non_idempotent_call_reports_an_unknown_outcome(
    home, fake, env, daemons, threads, stdio
):
    write_config(home, mcp={"servers": {"files": stdio("good")}})
    fake.add(tool_use("files__slow_write", {"tag": "x"}))
    first = daemons(home, env)
    drop(home, "Write it slowly", "m1")
    wait_for(lambda: (home / "started-x").exists(), 15, "the tool to start")
    first.kill()
    end_orphan(home / "started-x")
    fake.add(text("I could not tell whether that worked."))
    threads(home, env)
    wait_for(lambda: finals(home), 20, "the reply after the restart")
    (result,) = fake.requests[-1].tool_results
    assert result["is_error"] and result["content"] == IN_DOUBT
    assert runs(home) == ["slow_write-start x"], "the tool ran once, and only once"
    assert not (home / "started-x").exists()
    assert [f.text for f in finals(home)] == ["I could not tell whether that worked."]


def test_kill_during_a_read_only_call_runs_it_again(home, fake, env, daemons, threads, stdio):
    write_config(home, mcp={"servers": {"files": stdio("good")}})
    fake.add(tool_use("files__slow_read", {"tag": "y"}))
    first = daemons(home, env)
    drop(home, "Read it slowly", "m1")
    wait_for(lambda: (home / "started-y").exists(), 15, "the tool to start")
    first.kill()
    end_orphan(home / "started-y")
    (home / "go-y").touch()
    fake.add(text("Read it."))
    threads(home, env)
    wait_for(lambda: finals(home), 20, "the reply after the restart")
    (result,) = fake.requests[-1].tool_results
    assert not result["is_error"] and result["content"] == "read y"
    assert runs(home) == ["slow_read-start y", "slow_read-start y", "slow_read y"]
