"""Attachment bytes spliced into a request body at the last step (agent/blobdata.py)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from smarthole.agent.blobdata import BlobData
from smarthole.errors import ModelError


def blob(tmp_path, data: bytes):
    sha = hashlib.sha256(data).hexdigest()
    path = tmp_path / sha
    path.write_bytes(data)
    return sha, path


def test_a_marker_in_a_body_becomes_the_blobs_base64(tmp_path):
    spliced = BlobData()
    sha, path = blob(tmp_path, b"\x89PNG some image bytes")
    body = json.dumps({"data": spliced.marker(sha, path), "other": "text"}).encode()
    assert json.loads(spliced.splice(body)) == {
        "data": base64.b64encode(path.read_bytes()).decode(),
        "other": "text",
    }


def test_text_that_merely_looks_like_a_marker_is_left_alone(tmp_path):
    spliced = BlobData()
    sha, path = blob(tmp_path, b"bytes")
    spliced.marker(sha, path)
    other_process = BlobData().marker(sha, path)  # another tag: nobody can guess this one
    body = json.dumps({"text": other_process}).encode()
    assert spliced.splice(body) == body


def test_the_kept_base64_is_bounded_and_read_again_when_needed(tmp_path):
    spliced = BlobData(keep_bytes=10)
    one, one_path = blob(tmp_path, b"first blob, long enough")
    two, two_path = blob(tmp_path, b"second blob, long enough")
    body = (spliced.marker(one, one_path) + spliced.marker(two, two_path)).encode()
    first = spliced.splice(body)
    assert len(spliced._kept) == 1
    assert spliced.splice(body) == first  # the same bytes, read again


def test_a_blob_gone_before_the_request_is_a_model_error(tmp_path):
    spliced = BlobData()
    sha, path = blob(tmp_path, b"gone")
    marker = spliced.marker(sha, path)
    path.unlink()
    with pytest.raises(ModelError, match="no longer stored"):
        spliced.splice(marker.encode())
