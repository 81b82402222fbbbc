"""Attachments in the web view: uploaded with a message (multipart), shown as thumbnails and
links, and each blob served only through the token-checked app, for a message that names it."""

from __future__ import annotations

import base64
import hashlib
import re

from playwright.sync_api import expect

from smarthole.testing import text
from tests.helpers import db, drop_folder, image_bytes, pdf_bytes, run_once

from .test_browser import agent_messages, open_view

PNG = image_bytes((300, 200), "PNG", "teal")
PDF = pdf_bytes()


def _cid(home) -> str:
    return db(home).execute("SELECT id FROM conversations").fetchone()["id"]


def test_a_multipart_message_becomes_a_folder_message(client, bearer, team_home, fake, env):
    response = client.post(
        "/api/messages",
        data={"text": "What is this?"},
        files=[("file", ("photo.png", PNG, "image/png")), ("file", ("doc.pdf", PDF))],
        headers=bearer,
    )
    assert response.status_code == 202, response.text
    (folder,) = (team_home / "inbox").iterdir()
    assert folder.name == response.json()["file"]
    assert sorted(p.name for p in folder.iterdir()) == ["doc.pdf", "message.md", "photo.png"]
    fake.add(text("A teal rectangle and a PDF."), entry_agent=True)
    run_once(team_home, env)
    blocks = fake.requests[0].messages[0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "document", "text"]


def test_an_attachment_alone_needs_no_text(client, bearer, team_home):
    response = client.post("/api/messages", files=[("file", ("photo.png", PNG))], headers=bearer)
    assert response.status_code == 202, response.text


def test_a_refused_upload_writes_nothing_and_says_why(client, bearer, team_home):
    response = client.post(
        "/api/messages",
        data={"text": "x"},
        files=[("file", ("scan.pdf", PNG))],
        headers=bearer,
    )
    assert response.status_code == 400
    assert "scan.pdf: the bytes are image/png" in response.json()["error"]
    assert list((team_home / "inbox").iterdir()) == []


def conversation_with_attachments(team_home, fake, env) -> str:
    fake.add(text("Seen."), entry_agent=True)
    drop_folder(team_home, "m", {"message.md": b"Look", "photo.png": PNG, "doc.pdf": PDF})
    run_once(team_home, env)
    return _cid(team_home)


def test_the_api_and_the_page_show_thumbnails_and_links(client, bearer, team_home, fake, env):
    cid = conversation_with_attachments(team_home, fake, env)
    data = client.get(f"/api/conversations/{cid}", headers=bearer).json()
    names = [a["name"] for a in data["messages"][0]["attachments"]]
    assert names == ["doc.pdf", "photo.png"]
    page = client.get(f"/c/{cid}", headers=bearer).text
    png, pdf = hashlib.sha256(PNG).hexdigest(), hashlib.sha256(PDF).hexdigest()
    assert f'src="/attachments/{png}/thumb"' in page
    assert re.search(rf'href="/attachments/{pdf}"[^>]*data-testid="attachment-link">doc.pdf<', page)


def test_a_blob_is_served_only_to_the_token_and_only_if_named(client, bearer, team_home, fake, env):
    conversation_with_attachments(team_home, fake, env)
    png = hashlib.sha256(PNG).hexdigest()
    served = client.get(f"/attachments/{png}", headers=bearer)
    assert served.status_code == 200 and served.content == PNG
    assert served.headers["content-type"] == "image/png"
    assert served.headers["x-content-type-options"] == "nosniff"
    thumb = client.get(f"/attachments/{png}/thumb", headers=bearer)
    assert thumb.headers["content-type"] == "image/png" and thumb.content.startswith(b"\x89PNG")
    assert client.get(f"/attachments/{png}").status_code == 401
    assert client.get(f"/attachments/{'0' * 64}", headers=bearer).status_code == 404
    assert client.get("/attachments/..%2F..%2Fconfig.toml", headers=bearer).status_code == 404


def test_the_attach_button_sends_a_photo_from_the_browser(
    page, team_home, fake, live_daemon, web, tmp_path
):
    fake.add(text("Hello."), entry_agent=True)
    fake.add(text("A teal rectangle."), entry_agent=True)
    photo = tmp_path / "photo.png"
    photo.write_bytes(PNG)
    open_view(page, web.link, "/new")
    page.get_by_test_id("composer").fill("Hi")
    page.get_by_test_id("send").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+$"))
    expect(agent_messages(page)).to_have_count(1)
    page.get_by_test_id("attach-input").set_input_files(str(photo))
    expect(page.get_by_test_id("attached-files")).to_have_text("Attached: photo.png")
    page.get_by_test_id("send").click()
    expect(page.get_by_test_id("attachment-thumb")).to_have_count(1)
    expect(page.get_by_test_id("attachment-name")).to_have_text("photo.png")
    expect(agent_messages(page).nth(1)).to_contain_text("A teal rectangle.")
    assert fake.requests[-1].messages[-1]["content"][1]["type"] == "image"


def test_files_dropped_on_the_composer_are_attached(page, team_home, web):
    open_view(page, web.link, "/new")
    page.evaluate(
        """b64 => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], "dropped.png", {type: "image/png"}));
            const form = document.querySelector('[data-testid="composer-form"]');
            form.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true,
                                                      cancelable: true}));
        }""",
        base64.b64encode(PNG).decode(),
    )
    expect(page.get_by_test_id("attached-files")).to_have_text("Attached: dropped.png")
