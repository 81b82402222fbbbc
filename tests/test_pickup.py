"""Picking up inbox files safely: poison input, races, odd names, faults and half-written files."""

from __future__ import annotations

from conftest import drop, finals, run_once, smarthole

from smarthole.testing import text

POISON_FILES = {
    "nan.json": b'{"text": "hi", "timestamp": NaN}',
    "inf.json": b'{"text": "hi", "timestamp": Infinity}',
    "far-future.json": b'{"text": "hi", "timestamp": 99999999999999999999999}',
    "underflow.md": b"+++\ntimestamp = 0001-01-01T00:00:00+14:00\n+++\nhi\n",
    "deep.json": b'{"text": "hi", "metadata": ' + b'{"a": ' * 10_000 + b"1" + b"}" * 10_001,
    "deep.md": b"+++\nmetadata = " + b"[" * 10_000 + b"]" * 10_000 + b"\n+++\nhi\n",
}


def failed_reasons(home) -> dict[str, str]:
    return {
        p.name.removesuffix(".error.txt"): p.read_text().strip()
        for p in (home / "failed").glob("*.error.txt")
    }


def test_poison_files_are_set_aside_and_the_daemon_carries_on(home, fake, env):
    fake.default = text("fine")
    for name, data in POISON_FILES.items():
        (home / "inbox" / name).write_bytes(data)
    drop(home, "a good message", "good")
    run_once(home, env)
    reasons = failed_reasons(home)
    assert set(reasons) == set(POISON_FILES)
    assert all(reason and len(reason.splitlines()) == 1 for reason in reasons.values())
    assert [f["in_reply_to"] for f in finals(home)] == ["good"]


def test_poison_files_left_claimed_by_a_crash_never_stop_a_start(home, fake, env):
    """Start-up recovery sets poisoned claimed files aside; they used to fail every start."""
    for name, data in POISON_FILES.items():
        (home / ".smarthole" / "claimed" / f"18ea0000--{name}").write_bytes(data)
    drop(home, "still answered", "after")
    fake.default = text("fine")
    for _ in range(2):  # the second start proves the first did not leave the poison behind
        result = smarthole("run", "--once", "--home", str(home), env=env, timeout=60)
        assert result.returncode == 0, result.stderr
    assert set(failed_reasons(home)) == set(POISON_FILES)
    assert not list((home / ".smarthole" / "claimed").iterdir())
    assert [f["in_reply_to"] for f in finals(home)] == ["after"]
