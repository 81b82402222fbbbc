"""The web view's composer takes the same message commands: posted, then answered by the
daemon as a ``command`` item, without a model call."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from smarthole.testing import text
from tests.helpers import read_outbox, run_once

from .test_browser import agent_messages, send, start_conversation


def test_a_command_posted_from_the_page_is_answered_by_smarthole(
    client, bearer, team_home, fake, env
):
    response = client.post(
        "/api/messages", json={"text": "/status", "channel": "web"}, headers=bearer
    )
    assert response.status_code == 202
    run_once(team_home, env)
    (reply,) = read_outbox(team_home)
    assert reply["in_reply_to"] == response.json()["id"]
    assert (reply["kind"], reply["command"], reply["ok"]) == ("command", "status", True)
    assert "This channel (web, busy policy queue)" in reply.text
    assert fake.requests == []


def test_a_command_from_the_composer_is_shown_with_its_reply_and_frees_the_composer(
    page, team_home, fake, live_daemon, web
):
    fake.add(text("Hello."), entry_agent=True)
    conversation = start_conversation(page, web.link, "Hi there")
    expect(agent_messages(page).locator(".body")).to_have_text(["Hello."])
    send(page, "/title Plans for Sunday")
    reply = page.get_by_test_id("command-reply")
    expect(reply).to_contain_text("Plans for Sunday")
    expect(reply.locator(".who")).to_have_text("smarthole")
    expect(page.get_by_test_id("command").locator(".body")).to_have_text("/title Plans for Sunday")
    expect(page.get_by_test_id("composer")).to_be_enabled()
    expect(page.get_by_test_id("composer-note")).to_have_text("")
    # The reload shows it too, after the turn it followed, and the model was never asked.
    page.reload()
    kinds = page.locator('[data-testid="human-pane"] article').evaluate_all(
        "nodes => nodes.map(n => n.dataset.kind)"
    )
    assert kinds == ["user", "response", "user_command", "command"]
    assert len(fake.requests) == 1 and still_same_conversation(page, conversation)


def test_new_from_the_composer_starts_over_on_the_same_page(
    page, team_home, fake, live_daemon, web
):
    fake.add(text("Hello."), entry_agent=True)
    fake.add(text("Where to?"), entry_agent=True)
    first = start_conversation(page, web.link, "Hi there")
    expect(agent_messages(page).locator(".body")).to_have_text(["Hello."])
    send(page, "/new")
    page.wait_for_url(re.compile(r"/new\?channel="))
    expect(page.get_by_test_id("composer-note")).to_have_text(
        "Your next message starts a new conversation."
    )
    expect(page.get_by_test_id("message")).to_have_count(0)
    expect(page.get_by_test_id("composer")).to_be_enabled()
    send(page, "/new Plan a trip")  # with words: they start it
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+$"))
    expect(agent_messages(page).locator(".body")).to_have_text(["Where to?"])
    humans = page.locator('[data-testid="message"][data-role="human"] .body')
    expect(humans).to_have_text(["Plan a trip"])
    assert not still_same_conversation(page, first)


def still_same_conversation(page, conversation: str) -> bool:
    return page.url.rstrip("/").endswith(f"/c/{conversation}")
