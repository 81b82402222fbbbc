"""The Channels page (in Chromium): each channel's state as ``smarthole status`` shows it,
following the daemon, with the docs' example channel running in a real daemon."""

from __future__ import annotations

from datetime import UTC, datetime

from playwright.sync_api import Page, expect

from smarthole.testing import text
from tests.channels.test_example import example_code
from tests.helpers import wait_for, write_config

from .conftest import TEAM
from .test_browser import open_view


def test_the_page_shows_each_channel_and_follows_the_daemon(
    page: Page, team_home, fake, env, threads, web
):
    open_view(page, web.link, "/channels")
    expect(page.get_by_test_id("channels-table")).to_contain_text("No channel has run yet")
    plugins = team_home / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "spool_channel.py").write_text(example_code())
    write_config(team_home, agents=TEAM, plugins={"paths": [str(plugins)]})
    fake.default = text("Hello from the spool.")
    daemon = threads(team_home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly
    row = page.locator('[data-testid="channel"][data-channel="spool"]')
    expect(row.get_by_test_id("channel-state")).to_have_text("connected")
    expect(row.get_by_test_id("channel-waiting")).to_have_text("0")
    spool = team_home / "spool"
    (spool / "in" / ".note.tmp").write_text("hello spool <b>not bold</b>")
    (spool / "in" / ".note.tmp").rename(spool / "in" / "note.txt")
    wait_for(lambda: list((spool / "out").glob("*.txt")), 30, "the spool's reply")
    daemon.stop()
    expect(row.get_by_test_id("channel-state")).to_have_text("error")
    expect(row.get_by_test_id("channel-error")).to_have_text("the daemon is not running")
    page.get_by_role("link", name="Channels").click()
    expect(page.locator('nav a[aria-current="page"]')).to_have_text("Channels")


def test_the_fragment_escapes_what_a_channel_said(client, bearer, team_home):
    from smarthole.channels import ChannelRecords
    from smarthole.db.store import Store

    store = Store.open(team_home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        store.plugin_data("channels").set("chat", {"started_at": store.now()})
        ChannelRecords(store, "chat").set_status("error", room="<script>x()</script>")
    finally:
        store.close()
    response = client.get("/fragments/channels", headers=bearer)
    assert response.status_code == 200
    html = response.json()["html"]
    assert "&lt;script&gt;x()&lt;/script&gt;" in html and "<script>" not in html
