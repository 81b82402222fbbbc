"""kill -9 during bursts, per busy policy: no text lost or given twice as new, one final each.

A small run per policy is in the suite; ``pytest -m slow`` (or ``python
scripts/busy_torture.py``) runs longer ones.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.helpers import REPO

spec = importlib.util.spec_from_file_location("busy_torture", REPO / "scripts" / "busy_torture.py")
assert spec and spec.loader
busy_torture = importlib.util.module_from_spec(spec)
sys.modules["busy_torture"] = busy_torture
spec.loader.exec_module(busy_torture)

POLICIES = ("queue", "collect", "steer", "interrupt")


def check(result) -> None:
    assert result.lost == 0, result
    assert result.doubled == 0, result
    assert result.no_final == 0, result
    assert result.many_finals == 0, result
    assert result.unfinished == 0, result


@pytest.mark.timeout(300)  # three daemon starts, on a loaded machine
@pytest.mark.parametrize("policy", POLICIES)
def test_kills_during_bursts_lose_and_double_nothing(tmp_path, policy):
    check(
        busy_torture.busy_torture(
            policy=policy, messages=9, kills=2, seed=11, root=tmp_path, max_gap=0.8, quiet=True
        )
    )


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("policy", POLICIES)
def test_many_kills_during_bursts_lose_and_double_nothing(tmp_path, policy):
    check(
        busy_torture.busy_torture(
            policy=policy, messages=80, kills=20, seed=5, root=tmp_path, burst=8, quiet=True
        )
    )
