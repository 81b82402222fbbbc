"""Attachments arrive (a folder message, a lone file, base64 in JSON), are stored once, and
reach the model as the right blocks; anything refused sends the whole message to failed/."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from smarthole.testing import text
from tests.helpers import (
    blobs,
    bomb_png,
    db,
    drop,
    drop_folder,
    finals,
    image_bytes,
    pdf_bytes,
    run_once,
    wait_for,
    write_config,
)

PNG = image_bytes()


def user_blocks(fake) -> list[dict]:
    """The content blocks of the last user message of the first request."""
    (request,) = fake.requests
    return request.messages[-1]["content"]


def failed_reason(home: Path, name: str) -> str:
    return (home / "failed" / f"{name}.error.txt").read_text()


@pytest.mark.parametrize(
    ("name", "data", "block_type", "source"),
    [
        ("photo.png", PNG, "image", {"type": "base64", "media_type": "image/png"}),
        ("photo.jpg", image_bytes(fmt="JPEG"), "image", {"media_type": "image/jpeg"}),
        ("anim.gif", image_bytes(fmt="GIF"), "image", {"media_type": "image/gif"}),
        ("shot.webp", image_bytes(fmt="WEBP"), "image", {"media_type": "image/webp"}),
        ("receipt.pdf", pdf_bytes(), "document", {"media_type": "application/pdf"}),
        ("data.csv", b"a,b\n1,2\n", "document", {"type": "text", "data": "a,b\n1,2\n"}),
    ],
)
def test_each_accepted_type_reaches_the_model_as_its_block(
    home, fake, env, name, data, block_type, source
):
    fake.default = text("seen")
    drop_folder(home, "with-file", {"message.md": b"What is this?", name: data})
    run_once(home, env)
    _, block, said = user_blocks(fake)
    assert said["text"] == "What is this?"
    assert block["type"] == block_type
    assert source.items() <= block["source"].items()
    if source.get("type", "base64") == "base64":
        assert base64.b64decode(block["source"]["data"]) == data
    assert [f["in_reply_to"] for f in finals(home)] == [_message_id(home)]


def _message_id(home: Path) -> str:
    return db(home).execute("SELECT message_id FROM inbox").fetchone()["message_id"]


def test_text_files_beside_message_md_are_attachments(home, fake, env):
    fake.default = text("read")
    drop_folder(home, "notes", {"message.md": b"Summarise", "notes.txt": b"one\ntwo\n"})
    run_once(home, env)
    _, block, _ = user_blocks(fake)
    assert block["title"] == "notes.txt"
    assert block["source"] == {"type": "text", "media_type": "text/plain", "data": "one\ntwo\n"}


def test_a_lone_image_is_a_message_with_the_attachment_text(home, fake, env):
    write_config(home, inbox={"attachment_text": "What is in this photo?"})
    fake.default = text("a red square")
    (home / "inbox" / "IMG_0001.png").write_bytes(PNG)
    run_once(home, env)
    _, image, said = user_blocks(fake)
    assert image["type"] == "image"
    assert said["text"] == "What is in this photo?"
    assert finals(home)[0].text == "a red square"


def test_a_lone_image_with_no_attachment_text_is_the_image_alone(home, fake, env):
    fake.default = text("a red square")
    (home / "inbox" / "IMG_0001.png").write_bytes(PNG)
    run_once(home, env)
    assert [b["type"] for b in user_blocks(fake)] == ["text", "image"]  # the context, the image


def test_a_lone_image_joins_the_current_conversation_and_its_reply_says_so(home, fake, env):
    fake.default = text("noted")
    drop(home, "my trip", "m1")
    run_once(home, env)
    (home / "inbox" / "IMG_0002.png").write_bytes(PNG)
    run_once(home, env)
    first, second = finals(home)
    assert second["conversation"] == first["conversation"] and second["turn"] == 2
    assert second["joined"] == "current" and "joined" not in first.fields


def test_front_matter_names_the_order(home, fake, env):
    fake.default = text("ok")
    files = {
        "message.md": b'+++\nattachments = ["b.png", "a.pdf"]\n+++\nTwo files',
        "a.pdf": pdf_bytes(),
        "b.png": PNG,
        "c.csv": b"x\n",
    }
    drop_folder(home, "ordered", files)
    run_once(home, env)
    kinds = [b.get("title") or b["type"] for b in user_blocks(fake)[1:-1]]
    assert kinds == ["image", "a.pdf", "c.csv"]


def test_a_json_message_carries_base64_attachments(home, fake, env):
    fake.default = text("ok")
    payload = {
        "text": "From a program",
        "attachments": [
            {"name": "dot.png", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}
        ],
    }
    (home / "inbox" / "api.json").write_text(json.dumps(payload))
    run_once(home, env)
    _, image, said = user_blocks(fake)
    assert base64.b64decode(image["source"]["data"]) == PNG
    assert said["text"] == "From a program"


def test_the_same_photo_in_two_messages_is_stored_once(home, fake, env):
    fake.default = text("ok")
    drop_folder(home, "first", {"message.md": b"one", "photo.png": PNG})
    drop_folder(home, "second", {"message.md": b"two", "photo.png": PNG})
    run_once(home, env)
    assert len(finals(home)) == 2
    (blob,) = blobs(home)
    assert blob.read_bytes() == PNG
    assert blob.parent.name + blob.name == __import__("hashlib").sha256(PNG).hexdigest()
    assert stat.S_IMODE(blob.stat().st_mode) == 0o600


def test_a_message_remembers_its_attachments(home, fake, env):
    fake.default = text("ok")
    drop_folder(home, "kept", {"message.md": b"keep", "photo.png": PNG})
    run_once(home, env)
    payload = json.loads(db(home).execute("SELECT payload FROM inbox").fetchone()["payload"])
    (attachment,) = payload["attachments"]
    assert attachment["name"] == "photo.png"
    assert attachment["media_type"] == "image/png"
    assert attachment["size"] == len(PNG)
    row = db(home).execute("SELECT content FROM messages WHERE kind = 'user'").fetchone()
    assert json.loads(row["content"])[0]["sha256"] == attachment["sha256"]


BIG = 50 * 1024 * 1024


@pytest.mark.parametrize(
    ("entry", "files", "reason"),
    [
        ("misnamed", {"message.md": b"hi", "scan.pdf": PNG}, "scan.pdf: the bytes are image/png"),
        ("big", {"message.md": b"hi", "huge.pdf": None}, "huge.pdf"),
        ("bomb", {"bomb.png": bomb_png()}, "bomb.png: 30000\u00d730000 pixels"),
        ("corrupt", {"photo.jpg": image_bytes(fmt="JPEG")[:300]}, "photo.jpg: not a readable"),
        ("two-texts", {"a.md": b"one", "b.md": b"two"}, "2 text files (a.md, b.md)"),
        ("empty", {}, "the folder is empty"),
        ("unknown", {"tool.exe": b"MZ\x90\x00"}, "tool.exe: type '.exe' is not accepted"),
    ],
)
def test_a_refused_file_sends_the_whole_message_to_failed(home, fake, env, entry, files, reason):
    write_config(home, inbox={"settle_seconds": 0})
    if files.get("huge.pdf", b"") is None:
        files["huge.pdf"] = b"%PDF-1.4\n" + b"\0" * BIG  # sparse would be nicer; 50 MiB is fine
    drop_folder(home, entry, files)
    run_once(home, env)
    assert entry in os.listdir(home / "failed")
    said = failed_reason(home, entry)
    assert reason in said, said
    assert fake.requests == []
    if entry == "big":
        assert "max_pdf_bytes" in said


def test_the_daemon_stays_up_through_refused_files(home, fake, env, live_daemon):
    fake.default = text("fine")
    drop_folder(home, "bomb", {"bomb.png": bomb_png()})
    drop_folder(home, "misnamed", {"message.md": b"hi", "scan.pdf": PNG})
    wait_for(lambda: len([p for p in os.listdir(home / "failed") if "error" in p]) == 2)
    drop(home, "still here?", "after")
    wait_for(lambda: finals(home), message="a reply after the refusals")
    assert finals(home)[0].text == "fine"


def test_a_lone_pdf_named_png_is_refused(home, fake, env):
    (home / "inbox" / "scan.png").write_bytes(pdf_bytes())
    run_once(home, env)
    assert "scan.png: the bytes are application/pdf" in failed_reason(home, "scan.png")


def test_a_reason_stays_one_line_whatever_a_file_is_called(home, fake, env):
    drop_folder(home, "odd", {"a\nb.md": b"one", "c\x1b[2J.md": b"two"})
    run_once(home, env)
    said = failed_reason(home, "odd")
    assert len(said.strip().splitlines()) == 1
    assert "a^Jb.md" in said and "\x1b" not in said
