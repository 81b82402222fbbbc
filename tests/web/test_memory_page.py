"""The Memory page: the files, each line with its writes, each write linked to its
conversation, and delete (in Chromium); what it escapes and refuses."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from smarthole.agent.memorytext import PROFILE
from smarthole.testing import memory_call, text
from tests.helpers import db, drop, finals, wait_for

from .test_browser import open_view


def remember(home, fake, file_text="Name: Ana\nLikes tea\n") -> str:
    """A turn of the live daemon writes the profile; the conversation's id."""
    fake.add(memory_call("create", path=PROFILE, file_text=file_text))
    fake.add(text("Noted."))
    drop(home, "I'm Ana and I like tea", "m1")
    wait_for(lambda: finals(home), 30, "the reply")
    with db(home) as connection:
        (conversation,) = [r[0] for r in connection.execute("SELECT id FROM conversations")]
    return conversation


def test_the_memory_page_lists_shows_links_and_deletes(
    page: Page, team_home, fake, live_daemon, web
):
    conversation = remember(team_home, fake)
    open_view(page, web.link, "/memory")
    expect(page.get_by_role("link", name="Memory")).to_have_attribute("aria-current", "page")
    row = page.get_by_test_id("memory-file")
    expect(row).to_have_attribute("data-path", PROFILE)
    expect(row.get_by_test_id("memory-sources")).to_have_text("1")

    row.get_by_test_id("memory-open").click()
    view = page.get_by_test_id("memory-view")
    expect(view).to_have_attribute("data-path", PROFILE)
    expect(view.get_by_test_id("memory-line")).to_have_count(3)
    expect(view.get_by_test_id("memory-line").first).to_have_text(re.compile(r"w1\s*Name: Ana"))
    write = view.get_by_test_id("memory-write")
    expect(write).to_have_text(re.compile(r"w1 · create by agent \(assistant\)"))
    expect(write).to_contain_text("message m1")
    source = write.get_by_test_id("memory-source")
    expect(source).to_have_attribute("href", f"/c/{conversation}")

    source.click()
    expect(page).to_have_url(re.compile(f"/c/{conversation}$"))
    page.go_back()

    page.get_by_test_id("memory-delete").click()
    expect(page.get_by_test_id("memory-notice")).to_have_text(f"Deleted {PROFILE}.")
    expect(page.get_by_test_id("memory-empty")).to_be_visible()
    with db(team_home) as connection:
        gone = connection.execute("SELECT count(*) FROM memory_files").fetchone()[0]
    assert gone == 0


def test_the_page_escapes_what_the_model_wrote(client, bearer, team_home, fake, live_daemon):
    remember(team_home, fake, file_text="<script>alert(1)</script>")
    shown = client.get("/memory", params={"path": PROFILE}, headers=bearer)
    assert shown.status_code == 200
    assert "<script>alert(1)" not in shown.text and "&lt;script&gt;alert(1)" in shown.text


def test_a_delete_needs_the_token_and_our_own_origin(client, bearer, team_home, fake, live_daemon):
    remember(team_home, fake)
    form = {"path": PROFILE}
    assert client.post("/memory/delete", data=form).status_code == 401
    foreign = {**bearer, "origin": "http://evil.example"}
    assert client.post("/memory/delete", data=form, headers=foreign).status_code == 403
    bad = client.post(
        "/memory/delete", data={"path": "/etc/passwd"}, headers=bearer, follow_redirects=False
    )
    assert bad.status_code == 303 and "Not%20deleted" in bad.headers["location"]
    with db(team_home) as connection:
        assert connection.execute("SELECT count(*) FROM memory_files").fetchone()[0] == 1
