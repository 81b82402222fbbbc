"""A conversation page fits the window: the bar and the composer stay on screen, each pane
scrolls inside itself, a conversation opens at its latest turn, and what arrives scrolls into
view unless the person has scrolled up (then a "new messages" marker). At a desktop's
1400x900 and at a phone's 390x844."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from smarthole.daemon.runtime import Runtime
from smarthole.home import Home
from smarthole.testing import text
from tests.helpers import drop

from .test_browser import agent_messages, open_view

SIZES = {"desktop": (1400, 900), "phone": (390, 844)}


def long_conversation(home: Path, turns: int = 18) -> str:
    said = [
        {"role": role, "content": f"{role} {n}: " + "a line of words to fill the pane. " * 6}
        for n in range(1, turns + 1)
        for role in ("human", "entry_agent")
    ]
    root = Runtime.for_home(Home(home))
    try:
        return root.conversations.import_context({"turns": said}, channel="default").id
    finally:
        root.close()


def page_scrolls(page: Page) -> bool:
    """Whether the document itself scrolls (it must not: the panes do)."""
    return bool(page.evaluate("document.scrollingElement.scrollHeight > window.innerHeight + 1"))


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_a_long_conversation_opens_at_its_latest_turn_with_bar_and_composer_on_screen(
    page: Page, team_home, web, size
):
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    cid = long_conversation(team_home)
    open_view(page, web.link, f"/c/{cid}")
    messages = page.get_by_test_id("human-pane").get_by_test_id("message")
    expect(messages.last).to_contain_text("entry_agent 18:")
    expect(messages.last).to_be_in_viewport()
    expect(messages.first).not_to_be_in_viewport()
    for always_there in ("turn-bar", "composer", "send", "new-conversation"):
        expect(page.get_by_test_id(always_there)).to_be_in_viewport()
    for link in page.locator("header.top nav a").all():  # every page reachable, none cut off
        expect(link).to_be_in_viewport(ratio=1)
    assert not page_scrolls(page)
    # the pane scrolls inside itself: its first turn is up there
    page.get_by_test_id("human-pane").evaluate("pane => { pane.scrollTop = 0; }")
    expect(messages.first).to_be_in_viewport()
    expect(page.get_by_test_id("composer")).to_be_in_viewport()


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_news_scrolls_into_view_unless_the_person_scrolled_up(
    page: Page, team_home, fake, live_daemon, web, size
):
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    cid = long_conversation(team_home)
    fake.add(text("The first news."), entry_agent=True)
    fake.add(text("The second news."), entry_agent=True)
    open_view(page, web.link, f"/c/{cid}")
    drop(team_home, "one more", "m1", conversation=cid)
    expect(agent_messages(page).last).to_have_text(re.compile("The first news."))
    expect(agent_messages(page).last).to_be_in_viewport()
    expect(page.get_by_test_id("new-messages")).to_be_hidden()
    # scrolled up to read: the news does not pull the pane down, a marker says it came
    page.get_by_test_id("human-pane").evaluate("pane => { pane.scrollTop = 0; }")
    drop(team_home, "and another", "m2", conversation=cid)
    marker = page.get_by_test_id("new-messages")
    expect(marker).to_be_visible()
    expect(agent_messages(page).last).to_have_text(re.compile("The second news."))
    expect(agent_messages(page).last).not_to_be_in_viewport()
    marker.click()
    expect(agent_messages(page).last).to_be_in_viewport()
    expect(marker).to_be_hidden()
    assert not page_scrolls(page)
