"""Picking up inbox files safely: poison input, races, odd names, faults and half-written files."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.daemon import Daemon
from smarthole.db.schema import SCHEMA_VERSION
from smarthole.db.store import Store
from smarthole.home import Home
from smarthole.testing import text, tool_use
from tests.db.oldschema import version_4_database
from tests.helpers import db, drop, finals, read_outbox, run_once, wait_for, write_config

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
        run_once(home, env)
    assert set(failed_reasons(home)) == set(POISON_FILES)
    assert not list((home / ".smarthole" / "claimed").iterdir())
    assert [f["in_reply_to"] for f in finals(home)] == ["after"]


def sent_to_model(fake) -> str:
    """Everything the daemon has sent the model so far, as one string."""
    return json.dumps([request.body for request in fake.requests])


# -- only regular files of their own are read ------------------------------------------------


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text("the launch code is 0000 " + "x" * 300_000)
    return path


def test_a_symlink_swapped_in_during_pickup_is_not_followed(home, fake, env, secret, monkeypatch):
    """Between the scan's look at the file and the claim, the writer swaps in a symlink."""
    fake.default = text("fine")
    (home / "inbox" / "note.txt").write_text("an innocent note")
    real_rename = os.rename

    def swap_then_rename(source, target, *args, **kwargs):
        source = Path(source)
        if source.name == "note.txt":
            source.unlink()
            source.symlink_to(secret)
        return real_rename(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "rename", swap_then_rename)
    run_once(home, env)
    assert failed_reasons(home) == {"note.txt": "not a regular file"}
    assert "launch code" not in sent_to_model(fake)
    assert secret.read_text().startswith("the launch code")


def test_a_hard_linked_file_is_set_aside_and_its_other_name_untouched(home, fake, env, secret):
    fake.default = text("fine")
    os.link(secret, home / "inbox" / "linked.txt")
    run_once(home, env)
    assert "hard-linked file" in failed_reasons(home)["linked.txt"]
    assert "launch code" not in sent_to_model(fake)
    assert secret.read_text().startswith("the launch code")


def test_start_up_recovery_applies_the_same_checks(home, fake, env, secret):
    claimed = home / ".smarthole" / "claimed"
    (claimed / "18ea0000--link.txt").symlink_to(secret)
    os.link(secret, claimed / "18ea0001--hard.txt")
    (claimed / "18ea0002--big.txt").write_bytes(b"x" * 300_000)
    fake.default = text("fine")
    run_once(home, env)
    reasons = failed_reasons(home)
    assert reasons["link.txt"] == "not a regular file"
    assert "hard-linked file" in reasons["hard.txt"]
    assert "larger than max_message_bytes" in reasons["big.txt"]
    assert "launch code" not in sent_to_model(fake)
    assert not list(claimed.iterdir())


# -- any name can be taken -------------------------------------------------------------------

LONG_NAMES = [
    "a" * 251 + ".txt",  # 255 bytes, the longest name there is
    "é" * 120 + ".md",  # 243 bytes in UTF-8
    "b" * 238 + ".txt",
]


def test_the_longest_names_are_answered_and_keep_their_names(home, fake, env):
    fake.default = text("fine")
    for index, name in enumerate(LONG_NAMES):
        (home / "inbox" / name).write_text(f"+++\nid = 'long-{index}'\n+++\nhello")
    run_once(home, env)
    assert sorted(f["in_reply_to"] for f in finals(home)) == ["long-0", "long-1", "long-2"]
    stored = {row[0] for row in db(home).execute("SELECT source_name FROM inbox")}
    assert stored == set(LONG_NAMES)
    assert not list((home / "inbox").iterdir())


def test_a_long_name_set_aside_keeps_its_original_name_in_the_error_file(home, fake, env):
    name = "c" * 250 + ".json"
    (home / "inbox" / name).write_text("{not json")
    run_once(home, env)
    (error_file,) = (home / "failed").glob("*.error.txt")
    assert len(os.fsencode(error_file.name)) <= 255
    reason, original = error_file.read_text().splitlines()
    assert reason.startswith("invalid JSON")
    assert original == f"original name: {name}"
    assert error_file.with_name(error_file.name.removesuffix(".error.txt")).exists()


def test_a_name_that_is_not_utf8_is_answered(home, fake, env):
    fake.default = text("fine")
    raw = os.fsencode(home / "inbox") + b"/caf\xe9-\xff.txt"
    with open(raw, "wb") as handle:
        handle.write(b"hello from a latin-1 name")
    run_once(home, env)
    assert len(finals(home)) == 1
    (stored,) = db(home).execute("SELECT source_name FROM inbox").fetchone()
    assert stored == "caf\ufffd-\ufffd.txt"


# -- a fault between claim and ledger strands nothing ----------------------------------------


def status_json(home: Path, capsys) -> dict:
    main(["status", "--json", "--home", str(home)])
    return json.loads(capsys.readouterr().out)


def database_locked(*args, **kwargs):
    raise sqlite3.OperationalError("database is locked")


def disk_error(*args, **kwargs):
    raise OSError(errno.EIO, "Input/output error")


@pytest.mark.parametrize(
    ("target", "fault", "shown"),
    [
        ("smarthole.db.ledger.Ledger.admit", database_locked, "database is locked"),
        ("smarthole.pipeline.incoming.read_regular_file", disk_error, "Input/output error"),
    ],
)
def test_a_fault_after_the_claim_is_retried_without_a_restart(
    home, fake, env, monkeypatch, capsys, target, fault, shown
):
    fake.default = text("answered after all")
    with monkeypatch.context() as faulty:
        faulty.setattr(target, fault)
        with live(home, env):
            drop(home, "do not lose me", "stranded")
            report = wait_for(lambda: status_json(home, capsys)["stranded"], message="stranded")
            assert report[0]["source_name"].endswith("-stranded.md")
            assert shown in report[0]["last_error"]
            assert "stranded claims" in status_text(home, capsys)
            faulty.undo()  # the fault clears; the daemon keeps running
            wait_for(lambda: finals(home), message="the reply")
    assert [f["in_reply_to"] for f in finals(home)] == ["stranded"]
    assert status_json(home, capsys)["stranded"] == []
    assert not (home / ".smarthole" / "stranded.json").exists()


def status_text(home: Path, capsys) -> str:
    main(["status", "--home", str(home)])
    return capsys.readouterr().out


@contextlib.contextmanager
def live(home: Path, env: dict[str, str]) -> Iterator[Daemon]:
    """A daemon in a thread of this process, for tests that change its code as it runs."""
    daemon = Daemon(Home(home), env=env, handle_signals=False)
    thread = threading.Thread(target=daemon.run, name="test-daemon")
    thread.start()
    try:
        assert daemon.ready.wait(10)
        yield daemon
    finally:
        daemon.request_stop()
        thread.join(30)
        assert not thread.is_alive()


# -- private by default ----------------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_state_replies_and_failed_files_are_private_whatever_the_umask(
    tmp_path, fake, env, umask_022
):
    root = tmp_path / "home"
    root.mkdir()
    (root / ".smarthole").mkdir(mode=0o755)  # an older smarthole made it open
    Home(root).ensure()
    write_config(root)
    fake.add(tool_use("write_file", {"path": "note.md", "content": "mine"}))
    fake.add(text("done"))
    drop(root, "write a note", "good")
    (root / "inbox" / "bad.json").write_text("{nope")
    os.chmod(root / "inbox" / "bad.json", 0o644)
    run_once(root, env)
    assert mode(root / ".smarthole") == 0o700
    assert mode(root / ".smarthole" / "smarthole.db") == 0o600
    assert {mode(f.path) for f in read_outbox(root)} == {0o600}
    assert mode(root / "failed" / "bad.json") == 0o600
    assert mode(root / "failed" / "bad.json.error.txt") == 0o600
    assert mode(root / "workspace" / "note.md") == 0o644  # the user's own files: the umask


def test_the_write_ahead_log_is_private_too(tmp_path, umask_022):
    path = tmp_path / "smarthole.db"
    store = Store.open(path, clock=lambda: datetime.now(UTC))
    try:
        store.plugin_data("test").set("k", 1)
        assert mode(path) == 0o600
        assert mode(path.with_name("smarthole.db-wal")) == 0o600
        assert mode(path.with_name("smarthole.db-shm")) == 0o600
    finally:
        store.close()


@pytest.mark.parametrize(("folder_mode", "warned"), [(0o700, False), (0o775, True), (0o757, True)])
def test_status_warns_when_others_can_write_the_home(home, capsys, folder_mode, warned):
    os.chmod(home, folder_mode)
    assert ("warning:" in status_text(home, capsys)) is warned
    assert bool(status_json(home, capsys)["warnings"]) is warned


# -- half-written files ----------------------------------------------------------------------


def test_a_file_written_in_place_is_taken_only_once_its_writer_closes_it(home, fake, env):
    fake.default = text("got it")
    with live(home, env), (home / "inbox" / "in-place.txt").open("w") as writer:
        writer.write("the first half, ")
        writer.flush()
        # A renamed-in file is taken at once, while the other waits for its writer.
        drop(home, "a renamed message", "renamed")
        wait_for(lambda: finals(home), message="the renamed message's reply")
        assert (home / "inbox" / "in-place.txt").exists()
        writer.write("and the second half")
        writer.close()
        wait_for(lambda: len(finals(home)) == 2, message="the in-place message's reply")
    assert "the first half, and the second half" in sent_to_model(fake)


def test_without_a_way_to_tell_a_file_waits_until_it_has_settled(home, fake, env, monkeypatch):
    write_config(home, inbox={"rescan_seconds": 0.5, "settle_seconds": 0.4})
    monkeypatch.setattr("smarthole.pipeline.watch.open_for_writing", lambda path: None)
    fake.default = text("got it")
    with live(home, env):
        path = home / "inbox" / "fresh.txt"
        path.write_text("just written")
        written = path.stat().st_mtime
        wait_for(lambda: finals(home), message="the reply")
    (received,) = db(home).execute("SELECT received_at FROM inbox").fetchone()
    assert datetime.fromisoformat(received).timestamp() - written >= 0.4


# -- a repeated answer is not a duplicate ----------------------------------------------------


def test_the_same_answer_written_twice_is_two_messages(home, fake, env):
    """A phone shortcut writes "yes" to reply.txt twice: both are answered."""
    fake.default = text("noted")
    reply = home / "inbox" / "reply.txt"
    reply.write_text("yes")
    run_once(home, env)
    reply.write_text("yes")
    os.utime(reply, ns=(reply.stat().st_atime_ns, reply.stat().st_mtime_ns + 1_000))
    run_once(home, env)
    assert len(finals(home)) == 2
    assert len({f["in_reply_to"] for f in finals(home)}) == 2


def test_a_restored_file_with_the_same_name_bytes_and_time_is_skipped_loudly(
    home, fake, env, capsys, caplog
):
    fake.default = text("noted")
    reply = home / "inbox" / "reply.txt"
    reply.write_text("yes")
    moment = reply.stat().st_mtime_ns
    run_once(home, env)
    (first,) = finals(home)
    reply.write_text("yes")  # a sync tool puts the file back as it was
    os.utime(reply, ns=(moment, moment))
    run_once(home, env)
    assert len(finals(home)) == 1
    assert not reply.exists()
    assert "duplicate" in caplog.text and first["in_reply_to"] in caplog.text
    (event,) = db(home).execute("SELECT * FROM events WHERE type = 'duplicate_skipped'")
    assert event["message_id"] == first["in_reply_to"]
    assert json.loads(event["data"])["source_name"] == "reply.txt"
    assert status_json(home, capsys)["duplicates_skipped"] == 1
    assert "duplicates skipped: 1" in status_text(home, capsys)


def test_a_duplicate_is_counted_and_announced_in_one_commit(home, fake, env, monkeypatch):
    """If the event cannot be stored, the count is not raised either, and the file stays."""
    from smarthole.db.events import EventLog

    fake.default = text("noted")
    reply = home / "inbox" / "reply.txt"
    reply.write_text("yes")
    moment = reply.stat().st_mtime_ns
    run_once(home, env)
    reply.write_text("yes")
    os.utime(reply, ns=(moment, moment))
    emit = EventLog.emit

    def failing_emit(self, type, **kwargs):
        if type == "duplicate_skipped":
            raise sqlite3.OperationalError("disk I/O error")
        return emit(self, type, **kwargs)

    monkeypatch.setattr(EventLog, "emit", failing_emit)
    run_once(home, env)
    counts = [row["duplicates"] for row in db(home).execute("SELECT duplicates FROM inbox")]
    assert counts == [0]
    assert not list(db(home).execute("SELECT * FROM events WHERE type = 'duplicate_skipped'"))
    stranded = [p for p in Home(home).claimed.iterdir() if p.name.endswith("reply.txt")]
    assert stranded, "the duplicate's file was removed unrecorded"
    monkeypatch.setattr(EventLog, "emit", emit)
    run_once(home, env)
    counts = [row["duplicates"] for row in db(home).execute("SELECT duplicates FROM inbox")]
    assert counts == [1]
    assert len(list(db(home).execute("SELECT * FROM events WHERE type = 'duplicate_skipped'"))) == 1
    assert len(finals(home)) == 1


def test_a_database_from_before_duplicate_counts_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    old = version_4_database(path)
    old.execute("ALTER TABLE inbox DROP COLUMN duplicates")
    old.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    old.commit()
    old.close()
    store = Store.open(path, clock=lambda: datetime.now(UTC))
    try:
        columns = {row["name"] for row in store.query("PRAGMA table_info(inbox)")}
        assert "duplicates" in columns
        (version,) = store.query_one("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version == str(SCHEMA_VERSION)
    finally:
        store.close()
