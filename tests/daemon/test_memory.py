"""The daemon's memory habits (smarthole.daemon.memory)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from smarthole.daemon.memory import fix_malloc_thresholds


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
