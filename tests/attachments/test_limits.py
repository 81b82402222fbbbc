"""The limits of [attachments], and images scaled down before they are sent."""

from __future__ import annotations

import base64
import io
import json
import os

import pytest
from PIL import Image

from smarthole.testing import text
from tests.helpers import (
    blobs,
    drop_folder,
    image_bytes,
    pdf_bytes,
    run_once,
    write_config,
)

PNG = image_bytes()


def reason(home, name: str) -> str:
    return (home / "failed" / f"{name}.error.txt").read_text()


@pytest.mark.parametrize(
    ("settings", "files", "said"),
    [
        (
            {"max_count": 2},
            {"a.png": PNG, "b.gif": image_bytes(fmt="GIF"), "c.pdf": pdf_bytes()},
            "3 attachments is more than max_count (2)",
        ),
        (
            {"max_message_bytes": 1000},
            {"a.pdf": pdf_bytes(padding=600), "b.pdf": pdf_bytes(padding=601)},
            "b.pdf: the attachments come to",
        ),
        ({"max_pdf_pages": 2}, {"long.pdf": pdf_bytes(pages=3)}, "long.pdf: 3 pages"),
        ({"max_image_bytes": 100}, {"a.png": PNG}, "a.png: larger than max_image_bytes"),
        ({}, {"latin1.txt": "café".encode("latin-1"), "message.md": b"x"}, "latin1.txt: not UTF-8"),
        ({}, {"data.json": b"{nope", "message.md": b"x"}, "data.json: not valid JSON"),
        ({}, {"half.pdf": pdf_bytes()[:40]}, "half.pdf: not a complete PDF"),
    ],
)
def test_a_limit_sends_the_message_to_failed_naming_file_and_rule(
    home, fake, env, settings, files, said
):
    write_config(home, attachments=settings)
    drop_folder(home, "over", files)
    run_once(home, env)
    assert said in reason(home, "over")
    assert fake.requests == []


def test_an_image_over_the_edge_is_scaled_down_and_the_original_kept(home, fake, env):
    fake.default = text("big")
    photo = image_bytes((3000, 2000), "JPEG")
    drop_folder(home, "photo", {"message.md": b"Look", "big.jpg": photo})
    run_once(home, env)
    image = fake.requests[0].messages[0]["content"][1]
    sent = base64.b64decode(image["source"]["data"])
    assert Image.open(io.BytesIO(sent)).size == (1568, 1045)
    assert image["source"]["media_type"] == "image/jpeg"
    assert sorted(len(b.read_bytes()) for b in blobs(home)) == sorted([len(sent), len(photo)])


def test_max_image_edge_is_a_setting(home, fake, env):
    write_config(home, attachments={"max_image_edge": 100})
    fake.default = text("small")
    drop_folder(home, "photo", {"message.md": b"Look", "p.png": image_bytes((400, 200))})
    run_once(home, env)
    image = fake.requests[0].messages[0]["content"][1]
    assert Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size == (100, 50)


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({"name": "a.png", "media_type": "image/jpeg", "data": "PNG"}, "does not match the bytes"),
        ({"name": "a.png", "media_type": "image/png", "data": "@@"}, "not valid base64"),
        ({"name": "../a.png", "media_type": "image/png", "data": "PNG"}, "not a plain file name"),
        ({"name": "a.png", "data": "PNG"}, '"name", "media_type" and "data"'),
    ],
)
def test_a_bad_json_attachment_is_refused(home, fake, env, item, said):
    if item.get("data") == "PNG":
        item["data"] = base64.b64encode(PNG).decode()
    (home / "inbox" / "api.json").write_text(json.dumps({"text": "x", "attachments": [item]}))
    run_once(home, env)
    assert said in reason(home, "api.json")


def test_an_attachments_key_in_a_lone_markdown_file_is_refused(home, fake, env):
    (home / "inbox" / "note.md").write_text('+++\nattachments = ["x.png"]\n+++\nhi')
    run_once(home, env)
    assert "does not hold" in reason(home, "note.md")
    assert os.listdir(home / "inbox") == []
