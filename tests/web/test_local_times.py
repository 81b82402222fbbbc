"""Times on the page are the reader's: the server writes UTC, the page shows the browser's zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from playwright.sync_api import expect

from smarthole.testing import text

from .test_browser import agent_messages, start_conversation

ZONE = "Asia/Kolkata"  # 5:30 from UTC: no hour of UTC reads the same there


def test_a_messages_time_is_shown_in_the_browsers_zone(browser, team_home, fake, live_daemon, web):
    fake.add(text("Hello."), entry_agent=True)
    context = browser.new_context(timezone_id=ZONE)
    try:
        page = context.new_page()
        start_conversation(page, web.link, "Hi there")
        expect(agent_messages(page).locator(".body")).to_have_text(["Hello."])
        shown = agent_messages(page).first.locator("time")
        stamp = datetime.fromisoformat(shown.get_attribute("datetime") or "")
        local = stamp.astimezone(ZoneInfo(ZONE))
        today = datetime.now(ZoneInfo(ZONE)).date()
        wanted = f"{local:%H:%M}" if local.date() == today else f"{local:%Y-%m-%d %H:%M}"
        expect(shown).to_have_text(wanted)
        assert wanted[-5:] != f"{stamp.astimezone(UTC):%H:%M}"
    finally:
        context.close()


def test_an_approvals_decision_says_its_time_in_the_browsers_zone():
    """The line keeps its words; only its time is marked for the page to rewrite."""
    from smarthole.db.webviews import Said
    from smarthole.web.pages import environment
    from smarthole.web.transcript import DECISION

    at = datetime(2026, 11, 27, 6, 53, tzinfo=UTC)
    line = Said(3, DECISION, "record denied (web, 2026-11-27 06:53): at 06:53", at,
                shown_time="2026-11-27 06:53")  # fmt: skip
    html = str(environment().get_template("parts.html").module.message(line, False)).strip()
    assert html == (
        '<p class="decision" data-testid="approval-decision">record denied (web, '
        '<time datetime="2026-11-27T06:53:00+00:00" data-local="clock">2026-11-27 06:53</time>'
        "): at 06:53</p>"
    )
