"""Reading a claimed inbox file: all of it, once, and never more than the limit."""

from __future__ import annotations

import os

import pytest

from smarthole import fsutil
from smarthole.errors import MessageError
from smarthole.fsutil import READ_CHUNK, read_regular_file


@pytest.fixture
def reads(monkeypatch):
    """The sizes ``os.read`` is asked for (it allocates what it is asked for)."""
    asked: list[int] = []
    real = os.read

    def read(fd: int, size: int) -> bytes:
        asked.append(size)
        return real(fd, size)

    monkeypatch.setattr(fsutil.os, "read", read)
    return asked


def test_a_small_file_is_read_with_a_buffer_of_its_own_size(tmp_path, reads):
    path = tmp_path / "m.md"
    path.write_bytes(b"x" * 300)
    assert read_regular_file(path, 1 << 20).data == b"x" * 300
    assert reads == [301, READ_CHUNK], "its size and one byte more, then the end of the file"


def test_a_file_of_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "m.md"
    path.write_bytes(b"x" * 200)
    assert len(read_regular_file(path, 200).data) == 200
    path.write_bytes(b"x" * 201)
    with pytest.raises(MessageError, match="larger than"):
        read_regular_file(path, 200)


def test_a_file_that_grew_past_the_limit_after_its_fstat_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "m.md"
    path.write_bytes(b"x" * 300)
    real = os.fstat

    def fstat(fd: int) -> os.stat_result:
        info = list(real(fd))
        info[6] = 100  # st_size: what the file held when it was looked at
        return os.stat_result(info)

    monkeypatch.setattr(fsutil.os, "fstat", fstat)
    with pytest.raises(MessageError, match="larger than"):
        read_regular_file(path, 200)
    assert len(read_regular_file(path, 300).data) == 300, "all of it, within the limit"
