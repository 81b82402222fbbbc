"""Inbox file formats: what is accepted, and the one-line reason for what is not."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from smarthole.db.records import Message
from smarthole.errors import MessageError
from smarthole.pipeline.message import parse_message, render_message_file

MTIME = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def parse(name: str, text: str | bytes) -> Message:
    data = text.encode() if isinstance(text, str) else text
    return parse_message(name, data, modified=MTIME)


def test_plain_text_file_is_the_message():
    message = parse("note.txt", "  buy milk\n")
    assert message.text == "buy milk"
    assert message.channel is None
    assert message.timestamp == MTIME
    assert message.id.startswith("m-") and message.id_derived


def test_markdown_front_matter_sets_every_key():
    message = parse(
        "a.md",
        '+++\nid = "abc"\nchannel = "phone"\nconversation = "c1"\n'
        "timestamp = 2026-01-02T03:04:05Z\n[metadata]\nvoice = true\n+++\nHello\n",
    )
    assert (message.id, message.channel, message.conversation) == ("abc", "phone", "c1")
    assert message.timestamp == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert message.metadata == {"voice": True}
    assert message.text == "Hello" and not message.id_derived


def test_json_message():
    message = parse(
        "m.json", json.dumps({"id": "j1", "text": "hi", "channel": "x", "new_conversation": True})
    )
    assert (message.id, message.text, message.channel, message.new_conversation) == (
        "j1",
        "hi",
        "x",
        True,
    )


def test_smarthole_desktop_routed_payload_is_accepted_as_is():
    payload = {
        "id": "3b1d",
        "text": "add eggs",
        "timestamp": "2026-02-03T10:30:00.000Z",
        "metadata": {"inputMethod": "voice", "directRouted": False, "routingReason": "lists"},
    }
    message = parse("routed.json", json.dumps(payload))
    assert message.id == "3b1d" and message.metadata["inputMethod"] == "voice"
    assert message.timestamp == datetime(2026, 2, 3, 10, 30, tzinfo=UTC)
    framed = parse("frame.json", json.dumps({"type": "message", "payload": payload}))
    assert framed.id == "3b1d"


def test_derived_id_is_stable_for_the_same_file():
    assert parse("a.txt", "same").id == parse("a.txt", "same").id
    assert parse("a.txt", "same").id != parse("b.txt", "same").id
    assert parse("a.txt", "same").id != parse("a.txt", "other").id


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("bad.txt", b"caf\xe9", "not valid UTF-8"),
        ("empty.md", b"   \n\n", "empty"),
        ("fm.md", b"+++\nid = \n+++\nhello", "invalid TOML front matter"),
        ("open.md", b"+++\nid = 'x'\nhello", "no closing +++"),
        ("bad.json", b"{not json", "invalid JSON"),
        ("list.json", b"[1, 2]", "must be an object"),
        ("notext.json", b'{"id": "x"}', '"text" must be a string'),
        ("typo.md", b"+++\nchanel = 'x'\n+++\nhi", "unknown front matter key(s) chanel"),
        ("when.md", b"+++\ntimestamp = 'yesterday'\n+++\nhi", "not an ISO 8601 time"),
        ("flag.md", b"+++\nnew_conversation = 'yes'\n+++\nhi", "true or false"),
        ("chan.md", b"+++\nchannel = 'a/b'\n+++\nhi", "channel"),
        ("image.png", b"\x89PNG", "unsupported file type"),
        ("both.md", b"+++\nconversation = 'c'\nnew_conversation = true\n+++\nhi", "cannot both"),
    ],
)
def test_unusable_files_say_why(name, data, reason):
    with pytest.raises(MessageError, match=None) as caught:
        parse(name, data)
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)


def test_rendered_file_round_trips():
    data = render_message_file("Hello there", id="r1", channel="phone", new_conversation=True)
    message = parse("r1.md", data)
    assert (message.id, message.channel, message.new_conversation, message.text) == (
        "r1",
        "phone",
        True,
        "Hello there",
    )


def test_ledger_json_round_trips():
    message = parse("a.md", "+++\nid = 'x'\n[metadata]\nk = 1\n+++\nhi")
    assert Message.from_json(message.to_json()) == message
