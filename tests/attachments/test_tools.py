"""``save_attachment`` files an attachment into the workspace; ``read_file`` shows an image or
PDF of the workspace as itself."""

from __future__ import annotations

from smarthole.testing import text, tool_use
from tests.helpers import drop, drop_folder, finals, image_bytes, pdf_bytes, run_once

PDF = pdf_bytes(pages=2)
PNG = image_bytes((40, 30), "PNG", "orange")


def test_the_agent_files_a_receipt_under_receipts(home, fake, env):
    fake.add(tool_use("save_attachment", {"name": "receipt.pdf", "path": "receipts/"}))
    fake.add(text("Filed."))
    drop_folder(home, "r", {"message.md": b"File this receipt", "receipt.pdf": PDF})
    run_once(home, env)
    assert (home / "workspace" / "receipts" / "receipt.pdf").read_bytes() == PDF
    (result,) = fake.requests[1].tool_results
    assert result["content"] == 'Saved "receipts/receipt.pdf" (application/pdf, ' + (
        f"{len(PDF)} bytes)"
    )
    assert finals(home)[0].text == "Filed."


def test_save_attachment_keeps_to_the_workspace(home, fake, env):
    fake.add(tool_use("save_attachment", {"name": "receipt.pdf", "path": "../outside.pdf"}))
    fake.add(tool_use("save_attachment", {"name": "nope.pdf", "path": "x.pdf"}))
    fake.add(text("Could not."))
    drop_folder(home, "r", {"message.md": b"File it", "receipt.pdf": PDF})
    run_once(home, env)
    escaped, unknown = (r.tool_results[0] for r in fake.requests[1:3])
    assert escaped["is_error"] and not (home / "outside.pdf").exists()
    assert unknown["is_error"]
    assert "this conversation has: receipt.pdf" in str(unknown["content"])


def test_an_attachment_of_an_earlier_turn_can_be_saved(home, fake, env):
    fake.add(text("Nice photo."))
    drop_folder(home, "p", {"message.md": b"Look", "cat.png": PNG})
    run_once(home, env)
    fake.add(tool_use("save_attachment", {"name": "cat.png", "path": "photos/cat.png"}))
    fake.add(text("Saved."))
    drop(home, "Keep the cat photo", "m2")
    run_once(home, env)
    assert (home / "workspace" / "photos" / "cat.png").read_bytes() == PNG


def test_read_file_returns_images_and_pdfs_as_blocks(home, fake, env):
    (home / "workspace" / "cat.png").write_bytes(PNG)
    (home / "workspace" / "doc.pdf").write_bytes(PDF)
    fake.add(tool_use("read_file", {"path": "cat.png"}))
    fake.add(tool_use("read_file", {"path": "doc.pdf"}))
    fake.add(text("Seen both."))
    drop(home, "Look at my files", "m1")
    run_once(home, env)
    image, document = (r.tool_results[0]["content"] for r in fake.requests[1:3])
    assert [b["type"] for b in image] == ["text", "image"]
    assert image[1]["source"]["media_type"] == "image/png"
    assert [b["type"] for b in document] == ["text", "document"]
    assert document[1]["source"]["media_type"] == "application/pdf"
