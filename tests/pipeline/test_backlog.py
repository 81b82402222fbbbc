"""A backlog is claimed a batch at a time, and an arrival is seen at once after a claim."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smarthole.pipeline import inbox as inbox_module
from smarthole.pipeline.inbox import CLAIM_BATCH_FILES
from smarthole.pipeline.watch import Watcher
from smarthole.testing import echo
from tests.helpers import db, drop, finals, run_once


def inbox_names(home: Path) -> list[str]:
    return sorted(os.listdir(home / "inbox"))


def test_a_backlog_is_claimed_a_batch_at_a_time(home, runtime, monkeypatch):
    # A batch also ends after CLAIM_BATCH_SECONDS: on a busy machine that came first. Here the
    # count of files is what is checked.
    monkeypatch.setattr(inbox_module, "CLAIM_BATCH_SECONDS", 3600.0)
    waiting = CLAIM_BATCH_FILES * 2 + 7
    for n in range(waiting):
        drop(home, f"message {n}", f"m{n:04d}")
    batches = []
    while True:
        more = runtime.inbox.claim_batch()
        batches.append(waiting - len(inbox_names(home)) - sum(batches))
        if not more:
            break
    assert batches == [CLAIM_BATCH_FILES, CLAIM_BATCH_FILES, 7, 0], "the last look finds none"
    claimed = [r["message_id"] for r in db(home).execute("SELECT message_id FROM inbox")]
    assert sorted(claimed) == [f"m{n:04d}" for n in range(waiting)]


def test_a_file_that_arrives_during_a_backlog_is_claimed_in_the_same_drain(home, runtime):
    for n in range(CLAIM_BATCH_FILES + 1):
        drop(home, f"message {n}", f"m{n:04d}")
    assert runtime.inbox.claim_batch()
    drop(home, "late", "late")
    while runtime.inbox.claim_batch():
        pass
    assert inbox_names(home) == []
    assert db(home).execute("SELECT count(*) FROM inbox").fetchone()[0] == CLAIM_BATCH_FILES + 2


def test_a_backlog_at_start_is_answered_in_each_channels_order(home, fake, env):
    fake.default = echo("")
    per_channel = 40
    for n in range(per_channel):
        for channel in ("a", "b", "c"):
            drop(home, f"{channel}{n}", f"{channel}-{n:03d}", channel=channel)
    run_once(home, env)
    replies = finals(home)
    assert len(replies) == 3 * per_channel
    for channel in ("a", "b", "c"):
        said = [r.text for r in replies if r["channel"] == channel]  # replies in time order
        assert said == [f"{channel}{n}" for n in range(per_channel)]


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, threading.Event]]:
    """A watched inbox folder holding one file, and the event its watcher sets on a wake."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "first").write_text("x")
    woken = threading.Event()
    watcher = Watcher(folder, woken.set)
    watcher.start()
    try:
        yield folder, woken
    finally:
        watcher.stop()


def test_an_arrival_right_after_a_claim_is_seen_at_once(tmp_path, watched):
    """A rename out of the folder (a claim) does not hold back the next event.

    watchdog pairs moves by holding each ``IN_MOVED_FROM`` for 0.5 s, and the events behind
    it wait too; the watcher turns that off. The bound below is far under those 0.5 s.
    """
    folder, woken = watched
    elsewhere = tmp_path / "claimed"
    elsewhere.mkdir()
    (tmp_path / "second.tmp").write_text("y")
    sent = time.monotonic()
    os.rename(folder / "first", elsewhere / "first")  # IN_MOVED_FROM, as a claim makes
    os.rename(tmp_path / "second.tmp", folder / "second")  # the arrival behind it
    assert woken.wait(timeout=5)
    assert time.monotonic() - sent < 0.4


def test_a_look_at_a_file_does_not_wake_the_daemon(tmp_path, watched):
    """Opening and closing an inbox file without writing (the claim's lease check does) is
    no news: only changes wake the loop."""
    folder, woken = watched
    (folder / "first").read_text()  # IN_OPEN, IN_CLOSE_NOWRITE
    assert not woken.wait(timeout=0.5), "a read woke the daemon"
    (tmp_path / "next").write_text("y")
    os.rename(tmp_path / "next", folder / "next")
    assert woken.wait(timeout=5), "the watcher was listening all along"
