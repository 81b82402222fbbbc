"""Writing many inbox files as one durable batch (the desktop bridge's bursts)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from smarthole.fsutil import write_new_files
from smarthole.pipeline.inbox import drop_messages


def test_a_batch_gets_a_private_file_each_even_for_ids_alike_once_made_safe(tmp_path):
    inbox = tmp_path / "inbox"
    written = drop_messages(inbox, [("a/b", b"one\n"), ("a_b", b"two\n"), ("c", b"three\n")])
    assert all(isinstance(path, Path) for path in written)
    assert len({path.name for path in written}) == 3
    assert [path.read_bytes() for path in written] == [b"one\n", b"two\n", b"three\n"]
    assert sorted(os.listdir(inbox)) == sorted(path.name for path in written), "no temp files"
    assert {stat.S_IMODE(path.stat().st_mode) for path in written} == {0o600}


def test_a_file_that_cannot_be_written_fails_alone(tmp_path):
    taken = tmp_path / "taken.md"
    taken.write_bytes(b"already here")
    errors = write_new_files([(tmp_path / "a.md", b"a"), (taken, b"b"), (tmp_path / "c.md", b"c")])
    assert [type(error) for error in errors] == [type(None), FileExistsError, type(None)]
    assert taken.read_bytes() == b"already here"
    assert sorted(os.listdir(tmp_path)) == ["a.md", "c.md", "taken.md"]


def test_an_inbox_that_is_not_a_folder_fails_every_file(tmp_path):
    (tmp_path / "inbox").write_text("not a folder")
    written = drop_messages(tmp_path / "inbox", [("a", b"a"), ("b", b"b")])
    assert all(isinstance(error, OSError) for error in written)
