"""The web view's "Fork from here", in a real browser and through the API."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from smarthole.daemon.runtime import Runtime
from smarthole.home import Home

from .conftest import TOKEN
from .test_browser import open_view


def imported(home: Path, turns: int) -> str:
    """A conversation of ``turns`` finished turns ("human N", "agent N"); its id."""
    said = [
        {"role": role, "content": f"{name} {n}"}
        for n in range(1, turns + 1)
        for role, name in (("human", "human"), ("entry_agent", "agent"))
    ]
    root = Runtime.for_home(Home(home))
    try:
        return root.conversations.import_context({"turns": said}, channel="default").id
    finally:
        root.close()


def test_fork_from_here_opens_a_fork_holding_the_turns_up_to_it(page: Page, team_home, web):
    original = imported(team_home, 4)
    open_view(page, web.link, f"/c/{original}")
    turn_2 = page.locator('.human-turn[data-turn="2"]')
    turn_2.get_by_test_id("fork-turn").click()
    page.wait_for_url(re.compile(r"/c/(?!" + original + r")[0-9a-f]+$"))
    shown = page.get_by_test_id("forked-from")
    expect(shown).to_contain_text(f"Forked from conversation {original} after turn 2")
    expect(shown.get_by_role("link")).to_have_attribute("href", f"/c/{original}")
    messages = page.get_by_test_id("human-pane").get_by_test_id("message")
    expect(messages).to_have_count(4)
    expect(messages.last).to_have_text(re.compile("agent 2"))
    expect(page.get_by_test_id("conversation-title")).to_contain_text("(fork at turn 2)")


def test_the_fork_api_answers_with_the_fork_or_why_not(client, team_home):
    original = imported(team_home, 3)
    headers = {"authorization": f"Bearer {TOKEN}", "origin": str(client.base_url)}
    made = client.post(f"/api/conversations/{original}/fork", json={"turn": 2}, headers=headers)
    assert made.status_code == 201, made.text
    assert made.json()["forked_from"] == {"conversation": original, "turn": 2}
    shown = client.get(f"/api/conversations/{made.json()['conversation']}", headers=headers)
    assert shown.json()["forked_from"] == {"conversation": original, "turn": 2}
    assert shown.json()["replay_of"] is None
    too_far = client.post(f"/api/conversations/{original}/fork", json={"turn": 9}, headers=headers)
    assert too_far.status_code == 409 and "there is no turn 9" in too_far.json()["error"]
    bad = client.post(f"/api/conversations/{original}/fork", json={"turn": "2"}, headers=headers)
    assert bad.status_code == 400
    gone = client.post("/api/conversations/ffff0000/fork", json={"turn": 1}, headers=headers)
    assert gone.status_code == 404
