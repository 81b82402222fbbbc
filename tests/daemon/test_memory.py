"""The daemon's memory habits (smarthole.daemon.memory)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from smarthole.daemon.memory import fix_malloc_thresholds
from smarthole.fsutil import child, stored_path
from smarthole.testing import text
from tests.helpers import drop, finals, run_once


def glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


@pytest.mark.parametrize("name", ["GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_"])
def test_malloc_tuned_by_the_environment_is_left_alone(name):
    assert fix_malloc_thresholds({name: "131072"}) is False


@pytest.mark.skipif(not glibc(), reason="mallopt is glibc's")
def test_the_thresholds_are_fixed_on_glibc():
    code = "from smarthole.daemon.memory import fix_malloc_thresholds as f; print(f({}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


@pytest.mark.skipif(not glibc(), reason="malloc_trim is glibc's")
def test_free_holes_in_the_heap_go_back_to_the_system():
    # Blocks under the mmap threshold come from the heap; keeping every tenth alive leaves
    # the freed ones as holes that malloc does not give back by itself.
    code = """
from smarthole.daemon.memory import fix_malloc_thresholds, release_free_memory
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024
fix_malloc_thresholds({})
blocks = [bytearray(b"x" * 60_000) for _ in range(600)]
kept = blocks[::10]
del blocks
held = rss()
print(release_free_memory(), held - rss())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    released, mib = done.stdout.split()
    assert released == "True"
    assert int(mib) >= 20, f"only {mib} MiB of about 31 MiB of holes went back"


def test_a_message_s_file_names_are_never_interned(home, fake, env, monkeypatch):
    """pathlib interns each component it parses, and on Python 3.12.0-3.12.6 an interned
    string is never freed: every file name made for one message (inbox, claimed, outbox, the
    outbox's temp file) would stay in memory for good. None may reach ``sys.intern``."""
    fake.default = text("ok")
    interned: list[str] = []
    real_intern = sys.intern

    def recording(name: str) -> str:
        interned.append(name)
        return real_intern(name)

    drop(home, "hello", "unique-message-id")  # as a writer does: not the daemon's doing
    monkeypatch.setattr(sys, "intern", recording)
    run_once(home, env)
    [reply] = finals(home)
    per_message = [n for n in interned if "unique-message-id" in n or reply.path.stem in n]
    assert per_message == []
    assert stored_path(str(reply.path)) == reply.path
    assert child(reply.path.parent, reply.path.name) == reply.path
