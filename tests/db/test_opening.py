"""Opening the store: only a damaged file is moved aside; a busy, full or unreadable one is
left as it is, with one line saying why (issue 41, 0b), and no descriptor of a store file is
ever opened and closed beside SQLite's (0a)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.db import opening
from smarthole.db.store import Store
from smarthole.errors import CorruptStoreError, StoreError
from smarthole.home import Home

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)

HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("BEGIN IMMEDIATE")
db.execute("CREATE TABLE IF NOT EXISTS held (x)")
print("held", flush=True)
sys.stdin.read()  # until the test closes stdin
"""


READ_AND_CLOSE = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("SELECT count(*) FROM meta").fetchone()
db.close()
"""


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opening, "BUSY_TIMEOUT_SECONDS", 0.2)


@contextlib.contextmanager
def write_lock_held(path: Path) -> Iterator[None]:
    """Another process holds ``path``'s write lock for as long as the block runs."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def aside(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.corrupt-*"))


def test_a_busy_database_is_not_moved_aside(tmp_path, short_busy_timeout):
    path = tmp_path / "smarthole.db"
    Store.open(path, clock=lambda: NOW).close()
    with write_lock_held(path), pytest.raises(StoreError) as refused:
        Store.open(path, clock=lambda: NOW, recover=True)
    assert not isinstance(refused.value, CorruptStoreError)
    assert "is locked by another process" in str(refused.value)
    assert "not damaged" in str(refused.value)
    assert aside(tmp_path) == []
    Store.open(path, clock=lambda: NOW, recover=True).close()  # the holder gone: it opens


def test_the_daemon_started_beside_a_held_write_lock_refuses_with_one_line(
    home, environ, capsys, short_busy_timeout
):
    database = Home(home).database
    Store.open(database, clock=lambda: NOW).close()
    with write_lock_held(database):
        code = main(["run", "--once", "--home", str(home)])
    err = capsys.readouterr().err
    assert code != 0
    assert "is locked by another process" in err and "start the daemon" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert aside(database.parent) == []


def test_a_command_beside_a_held_write_lock_does_not_advise_moving_it_aside(
    home, capsys, short_busy_timeout
):
    database = Home(home).database
    Store.open(database, clock=lambda: NOW).close()
    with write_lock_held(database):
        code = main(["ls", "--home", str(home)])
    err = capsys.readouterr().err
    assert code != 0 and "is locked by another process" in err
    assert "move it aside" not in err


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(b"this is not a database" * 100, id="not-a-database"),
        pytest.param(None, id="damaged-pages"),
    ],
)
def test_only_a_damaged_database_is_moved_aside(tmp_path, damage):
    path = tmp_path / "smarthole.db"
    store = Store.open(path, clock=lambda: NOW)
    store.close()
    if damage is None:  # a valid header, then garbage where the schema's pages were
        data = bytearray(path.read_bytes())
        data[100:] = b"\xff" * (len(data) - 100)
        path.write_bytes(bytes(data))
    else:
        path.write_bytes(damage)
    with pytest.raises(CorruptStoreError):
        Store.open(path, clock=lambda: NOW)
    Store.open(path, clock=lambda: NOW, recover=True).close()
    assert len(aside(tmp_path)) == 1


def test_an_unreadable_store_is_not_corrupt(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any file; the permission case needs another user")
    path = tmp_path / "smarthole.db"
    Store.open(path, clock=lambda: NOW).close()
    path.chmod(0)
    with pytest.raises(StoreError) as refused:
        Store.open(path, clock=lambda: NOW, recover=True)
    assert not isinstance(refused.value, CorruptStoreError)
    assert aside(tmp_path) == []


def test_is_corruption_reads_sqlites_result_codes():
    from smarthole.db.connection import is_corruption

    def error(code: int) -> sqlite3.DatabaseError:
        exc = sqlite3.DatabaseError("x")
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
        return exc

    assert is_corruption(error(11)) and is_corruption(error(26))
    assert is_corruption(opening.IntegrityCheckFailed("integrity check failed"))
    assert not any(is_corruption(error(code)) for code in (5, 6, 13, 14, 10 | 3 << 8, 3))


def test_opening_the_store_twice_in_a_process_keeps_the_other_connections_locks(tmp_path):
    """Closing any descriptor of the database drops this process's locks on it; a second
    open must not do that (it did, through the file made private by a raw descriptor)."""
    path = tmp_path / "smarthole.db"
    first = Store.open(path, clock=lambda: NOW)
    try:
        first.write("INSERT INTO meta (key, value) VALUES ('a', '1')")
        Store.open(path, clock=lambda: NOW).close()  # a second store comes and goes
        subprocess.run(  # another process opens and closes: it must not believe itself last
            [sys.executable, "-c", READ_AND_CLOSE, str(path)],
            check=True,
        )
        assert path.with_name("smarthole.db-wal").exists()
        first.write("INSERT INTO meta (key, value) VALUES ('b', '2')")
        with contextlib.closing(sqlite3.connect(path)) as other:
            found = other.execute("SELECT count(*) FROM meta WHERE key IN ('a', 'b')").fetchone()
        assert found[0] == 2
    finally:
        first.close()
