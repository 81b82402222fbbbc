"""Approvals in the web view: the waiting call shown in its conversation, with Approve,
Always and Deny buttons that answer through the inbox; and the API beside them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from smarthole.testing import text, tool_use
from tests.helpers import TEST_PLUGINS, db, drop, read_outbox, tool_runs, wait_for, write_config

from .conftest import TEAM
from .test_browser import agent_messages, open_view, send


def waiting_item(home: Path):
    (item,) = wait_for(lambda: [f for f in read_outbox(home) if f["kind"] == "approval"], 15)
    return item


@pytest.fixture
def approving_home(team_home):
    write_config(
        team_home,
        agents=TEAM,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["record"]},
    )
    return team_home


def test_a_waiting_call_is_approved_from_its_conversation(
    page: Page, approving_home, fake, live_daemon, web
):
    home = approving_home
    fake.add(tool_use("record", {"value": "<b>milk</b>"}))
    drop(home, "record milk", "m1")
    item = waiting_item(home)
    open_view(page, web.link, f"/c/{item['conversation']}")
    card = page.get_by_test_id("approval")
    expect(card.get_by_test_id("approval-tool")).to_have_text("record")
    expect(card.get_by_test_id("approval-input")).to_contain_text('"value": "<b>milk</b>"')
    expect(page.get_by_test_id("conversation-state")).to_have_text("waiting for your answer")
    # the card asks, once: the item's instructions (files, commands) are not in the transcript
    pane = page.get_by_test_id("human-pane")
    expect(agent_messages(page)).to_have_count(0)
    expect(pane).not_to_contain_text("smarthole approve")
    expect(card.get_by_test_id("approval-always")).to_contain_text(
        "record for the rest of this conversation"
    )
    fake.add(text("Recorded milk."))
    card.get_by_test_id("approval-approve").click()
    expect(agent_messages(page).last).to_contain_text("Recorded milk.")
    expect(page.get_by_test_id("approval")).to_have_count(0)
    # decided: one line says what, who and when
    expect(pane.get_by_test_id("approval-decision")).to_have_text(
        re.compile(r"^record approved \(web, \d\d:\d\d\)$")
    )
    assert tool_runs(home) == ["record <b>milk</b>"]
    (row,) = db(home).execute("SELECT decided_by, always FROM approvals")
    assert (row["decided_by"], row["always"]) == ("web", 0)


def test_a_waiting_call_is_denied_with_a_reason_from_its_conversation(
    page: Page, approving_home, fake, live_daemon, web
):
    home = approving_home
    fake.add(tool_use("record", {"value": "eggs"}))
    drop(home, "record eggs", "m1")
    item = waiting_item(home)
    open_view(page, web.link, f"/c/{item['conversation']}")
    card = page.get_by_test_id("approval")
    card.get_by_test_id("approval-reason").fill("we have eggs")
    fake.add(text("Not recorded."))
    card.get_by_test_id("approval-deny").click()
    expect(agent_messages(page).last).to_contain_text("Not recorded.")
    expect(page.get_by_test_id("approval-decision")).to_have_text(
        re.compile(r"^record denied \(web, \d\d:\d\d\): we have eggs$")
    )
    assert tool_runs(home) == []
    assert fake.requests[-1].tool_results[0]["content"] == (
        "Error: denied by the person: we have eggs"
    )


def test_the_composer_comes_back_when_its_turn_waits_for_an_approval(
    page: Page, approving_home, fake, live_daemon, web
):
    home = approving_home
    fake.add(text("Hello."))
    drop(home, "hi", "m0")
    (reply,) = wait_for(lambda: [f for f in read_outbox(home) if f["kind"] == "response"], 15)
    open_view(page, web.link, f"/c/{reply['conversation']}")
    fake.add(tool_use("record", {"value": "tea"}))
    send(page, "record tea")
    expect(page.get_by_test_id("approval")).to_be_visible()
    expect(page.get_by_test_id("composer")).to_be_enabled()
    expect(page.get_by_test_id("send")).to_be_enabled()
    expect(page.get_by_test_id("composer-note")).to_have_text("")


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ([], 400, "JSON object"),
        ({"decision": "maybe"}, 400, "decision must be"),
        ({"decision": "deny", "always": True}, 400, "only with approve"),
        ({"decision": "approve", "reason": "x"}, 400, "only with deny"),
        ({"decision": "approve", "extra": 1}, 400, "unknown key"),
    ],
)
def test_the_api_refuses_a_bad_answer(client, bearer, body, status, error):
    response = client.post("/api/approvals/0123456789ab", json=body, headers=bearer)
    assert response.status_code == status and error in response.json()["error"]


def test_the_api_lists_what_waits_and_answers_through_the_inbox(
    client, bearer, approving_home, fake, env
):
    from tests.helpers import run_once

    home = approving_home
    fake.add(tool_use("record", {"value": "tea"}))
    drop(home, "record tea", "m1")
    run_once(home, env)
    (waiting,) = client.get("/api/approvals", headers=bearer).json()["approvals"]
    assert waiting["tool"] == "record" and waiting["input"] == {"value": "tea"}
    unknown = client.post(
        "/api/approvals/fedcba987654", json={"decision": "approve"}, headers=bearer
    )
    assert unknown.status_code == 404
    answer = client.post(
        f"/api/approvals/{waiting['id']}",
        json={"decision": "approve", "always": True},
        headers=bearer,
    )
    assert answer.status_code == 202
    (written,) = list((home / "inbox").iterdir())
    assert written.name == answer.json()["file"]
    content = written.read_text()
    assert f'approve = "{waiting["id"]}"' in content and "always = true" in content
    assert re.search(r'by = "web"', content)
    fake.add(text("Recorded tea."))
    run_once(home, env)
    assert tool_runs(home) == ["record tea"]
    again = client.post(
        f"/api/approvals/{waiting['id']}", json={"decision": "deny"}, headers=bearer
    )
    assert again.status_code == 409
