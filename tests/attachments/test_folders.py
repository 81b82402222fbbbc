"""A folder message is left alone while it is being written, as a file is."""

from __future__ import annotations

import pytest

from smarthole.config import InboxSettings
from smarthole.fsutil import open_for_writing
from smarthole.pipeline.watch import InboxFolder


def entry_of(folder: InboxFolder, name: str):
    return next(e for e in folder.scan() if e.name == name)


def test_a_folder_with_a_file_open_for_writing_is_not_taken_until_it_is_closed(tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / "album").mkdir(parents=True)
    photo = inbox / "album" / "photo.jpg"
    folder = InboxFolder(inbox, InboxSettings(settle_seconds=3600))
    with photo.open("wb") as writing:
        writing.write(b"\xff\xd8\xff")
        writing.flush()
        if open_for_writing(photo) is None:
            pytest.skip("this system cannot tell an open file (no read leases)")
        assert not folder.claimable(entry_of(folder, "album"))
    assert folder.claimable(entry_of(folder, "album"))


def test_a_folder_written_under_a_temp_name_is_not_a_candidate(tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / ".album.tmp").mkdir(parents=True)
    (inbox / "album.part").mkdir()
    folder = InboxFolder(inbox, InboxSettings())
    assert folder.scan() == []


def test_an_empty_folder_waits_until_it_has_settled(tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / "empty").mkdir(parents=True)
    settling = InboxFolder(inbox, InboxSettings(settle_seconds=3600))
    assert not settling.claimable(entry_of(settling, "empty"))
    assert settling.next_recheck() is not None
    settled = InboxFolder(inbox, InboxSettings(settle_seconds=0))
    assert settled.claimable(entry_of(settled, "empty"))
