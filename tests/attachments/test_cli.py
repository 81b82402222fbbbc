"""``send --attach``, and attachments in ``show``, ``export`` and ``import``."""

from __future__ import annotations

import hashlib
import json

import pytest

from smarthole.cli import main
from smarthole.home import Home
from smarthole.testing import text
from tests.helpers import blobs, db, image_bytes, pdf_bytes, run_once

PNG = image_bytes((32, 32), "PNG", "green")
PDF = pdf_bytes()


@pytest.fixture
def sent(home, fake, env, tmp_path, capsys) -> str:
    """A conversation whose message carried a photo and a PDF, sent with ``send --attach``."""
    (tmp_path / "photo.png").write_bytes(PNG)
    (tmp_path / "receipt.pdf").write_bytes(PDF)
    args = ["send", "File these", "--attach", str(tmp_path / "photo.png")]
    assert main([*args, "--attach", str(tmp_path / "receipt.pdf"), "--home", str(home)]) == 0
    capsys.readouterr()
    fake.default = text("Filed.")
    run_once(home, env)
    return db(home).execute("SELECT id FROM conversations").fetchone()["id"]


def test_send_attach_delivers_each_file_in_order(sent, fake):
    blocks = fake.requests[0].messages[0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "document", "text"]
    assert blocks[2]["title"] == "receipt.pdf"
    assert blocks[3]["text"] == "File these"


def test_send_attach_of_a_missing_file_fails_with_one_line(home, capsys, tmp_path):
    code = main(["send", "x", "--attach", str(tmp_path / "nope.png"), "--home", str(home)])
    assert code != 0
    err = capsys.readouterr().err
    assert "nope.png" in err and len(err.strip().splitlines()) == 1
    assert list((home / "inbox").iterdir()) == []


def test_show_lists_each_attachment(sent, home, capsys):
    assert main(["show", sent, "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert f"attached: photo.png (image/png, {len(PNG)} B)" in out
    assert "attached: receipt.pdf (application/pdf, " in out


def test_export_markdown_writes_them_beside_and_links_them(sent, home, tmp_path, capsys):
    output = tmp_path / "out" / "talk.md"
    output.parent.mkdir()
    args = ["export", sent, "--format", "markdown", "--output", str(output)]
    assert main([*args, "--home", str(home)]) == 0
    markdown = output.read_text()
    sha = hashlib.sha256(PNG).hexdigest()
    assert f"![photo.png](<talk.md.attachments/{sha[:12]}-photo.png>)" in markdown
    assert (output.parent / "talk.md.attachments" / f"{sha[:12]}-photo.png").read_bytes() == PNG
    assert "[receipt.pdf](<talk.md.attachments/" in markdown


def test_export_json_names_them_by_hash_and_import_restores_them(sent, home, tmp_path, capsys):
    output = tmp_path / "talk.json"
    assert main(["export", sent, "--output", str(output), "--home", str(home)]) == 0
    data = json.loads(output.read_text())
    (human,) = [t for t in data["turns"] if t["role"] == "human"]
    assert [a["sha256"] for a in human["attachments"]] == [
        hashlib.sha256(PNG).hexdigest(),
        hashlib.sha256(PDF).hexdigest(),
    ]
    other = tmp_path / "other"
    Home(other).ensure()
    assert main(["import", str(output), "--home", str(other)]) == 0
    imported = capsys.readouterr().out.strip().splitlines()[-1]
    assert sorted(p.read_bytes() for p in blobs(other)) == sorted([PNG, PDF])
    assert main(["export", imported, "--home", str(other)]) == 0
    again = json.loads(capsys.readouterr().out)
    (human_again,) = [t for t in again["turns"] if t["role"] == "human"]
    assert human_again["attachments"] == human["attachments"]


def test_import_without_the_blobs_names_what_is_missing(sent, home, tmp_path, capsys):
    assert main(["export", sent, "--home", str(home)]) == 0
    document = tmp_path / "bare.json"
    document.write_text(capsys.readouterr().out)
    other = tmp_path / "other"
    Home(other).ensure()
    assert main(["import", str(document), "--home", str(other)]) != 0
    assert "photo.png" in capsys.readouterr().err


def test_a_context_export_of_a_photo_alone_imports_again(home, fake, env, tmp_path, capsys):
    (home / "inbox" / "IMG_1.png").write_bytes(PNG)
    fake.default = text("A green square.")
    run_once(home, env)
    cid = db(home).execute("SELECT id FROM conversations").fetchone()["id"]
    output = tmp_path / "context.json"
    assert (
        main(["export", cid, "--format", "context", "--output", str(output), "--home", str(home)])
        == 0
    )
    (human, _) = json.loads(output.read_text())["turns"]
    assert human["content"] == "" and human["attachments"][0]["media_type"] == "image/png"
    assert main(["import", str(output), "--home", str(home)]) == 0
