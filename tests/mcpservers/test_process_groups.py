"""An MCP server dies with the daemon, its whole process group, however the daemon ends.

The ``family`` server ignores SIGTERM and has a child that ignores it too: only a SIGKILL of
the group ends them. A clean stop does that after a grace; so does a ``kill -9`` of the daemon,
through the guard each stdio server runs under (``smarthole/mcpservers/guard.py``).
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.helpers import wait_for, write_config

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead; its parent (init, here) just has not reaped it yet
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def family_pids(home) -> list[int]:
    path = wait_for(lambda: (p := home / "family-pids").exists() and p, timeout=30)
    return [int(pid) for pid in path.read_text().split()]


@pytest.mark.parametrize("ending", ["kill -9", "SIGTERM"])
def test_the_servers_group_ends_with_the_daemon(home, env, daemons, stdio, ending):
    write_config(home, mcp={"servers": {"family": stdio("family")}})
    daemon = daemons(home, env)
    pids = family_pids(home)
    assert all(alive(pid) for pid in pids)
    if ending == "kill -9":
        daemon.kill()
    else:
        assert daemon.terminate() == 0
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=30, message="the group to end")
