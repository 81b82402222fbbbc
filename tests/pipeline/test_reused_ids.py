"""An inbox file that repeats a message id: the same text is a duplicate, another is set aside.

What makes two files one message is the id and the text, not the bytes: the same message
written again (a desktop message after a crash, another timestamp or channel) is skipped as a
duplicate, and an id already used for a different text is refused, never silently dropped.
"""

from __future__ import annotations

import json

import pytest

from smarthole.testing import text
from tests.helpers import db, drop, finals, run_once

REASON = "id already used for a different message"


def failed(home) -> dict[str, str]:
    """Files set aside in failed/, by name: the reason in their ``.error.txt``."""
    return {
        p.name.removesuffix(".error.txt"): p.read_text().strip()
        for p in (home / "failed").glob("*.error.txt")
    }


def events(home, type: str) -> list[dict]:
    rows = db(home).execute("SELECT message_id, data FROM events WHERE type = ?", (type,))
    return [{"message_id": row["message_id"], **json.loads(row["data"])} for row in rows]


def test_an_id_used_for_a_different_text_goes_to_failed_with_the_reason(home, fake, env):
    fake.default = text("First.")
    drop(home, "Add oat milk", "same")
    run_once(home, env)
    second = drop(home, "Delete all my notes", "same")
    run_once(home, env)
    assert len(fake.requests) == 1 and len(finals(home)) == 1
    assert failed(home) == {second.name: REASON}
    (rejected,) = events(home, "message_rejected")
    assert (rejected["message_id"], rejected["reason"]) == ("same", REASON)
    assert (home / "failed" / second.name).read_text().endswith("Delete all my notes\n")


@pytest.mark.parametrize(
    "fields",
    [
        {"timestamp": "2026-11-22T09:00:00Z"},
        {"channel": "elsewhere"},
        {"metadata": {"inputMethod": "voice"}},
    ],
    ids=["another timestamp", "another channel", "other metadata"],
)
def test_the_same_id_and_text_in_other_bytes_is_a_duplicate(home, fake, env, fields):
    fake.default = text("Once.")
    first = drop(home, "Add oat milk", "same").read_bytes()
    run_once(home, env)
    second = drop(home, "Add oat milk\n\n", "same", **fields)
    assert second.read_bytes() != first
    run_once(home, env)
    assert len(fake.requests) == 1 and len(finals(home)) == 1
    assert failed(home) == {} and not list((home / "inbox").iterdir())
    (duplicate,) = events(home, "duplicate_skipped")
    assert duplicate["message_id"] == "same"
