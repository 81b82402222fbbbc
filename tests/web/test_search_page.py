"""The search box of the Conversations page: the same hits as ``smarthole search``, as text."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from smarthole.db.search import Search
from smarthole.db.store import Store
from smarthole.formats import utc_now
from smarthole.testing import text
from tests.helpers import db, drop, run_once

SCRIPT = "<script>window.pwned=1</script>"


@pytest.fixture
def said(team_home, fake, env):
    """Two conversations about the weather, one with a hostile title."""
    fake.default = lambda request: text(f"Noted: {request.last_user_text}")
    drop(team_home, "will it rain on the picnic", "m1", channel="family")
    drop(team_home, "the rain gauge is broken", "m2", channel="garden")
    run_once(team_home, env)
    connection = db(team_home)
    with connection:
        connection.execute(
            "UPDATE conversations SET title = ? WHERE channel = 'garden'", (f"Gauge {SCRIPT}",)
        )
    return team_home


def cli_hits(home, query):
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=utc_now)
    try:
        return Search(store).search(query, limit=50)
    finally:
        store.close()


def test_the_page_shows_what_the_cli_finds_escaped(client, bearer, said):
    page = client.get("/", params={"q": "rain"}, headers=bearer).text
    hits = cli_hits(said, "rain")
    assert page.count('data-testid="search-hit"') == len(hits) == 4
    for hit in hits:
        assert f'href="/c/{hit.conversation_id}"' in page
    assert "will it <mark>rain</mark> on the picnic" in page
    assert SCRIPT not in page and "Gauge &lt;script&gt;" in page
    assert 'data-page="search"' in page and 'data-live="list"' not in page
    assert 'value="rain"' in page


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("pelican", "Nothing found."),
        ('"', "Nothing found."),
        ("x" * 10_001, "longer than 10,000 characters"),
    ],
)
def test_nothing_found_and_refused_queries_say_so(client, bearer, said, query, shown):
    response = client.get("/", params={"q": query}, headers=bearer)
    assert response.status_code == 200
    assert shown in response.text


def test_a_blank_query_is_the_list(client, bearer, said):
    page = client.get("/", params={"q": "  "}, headers=bearer).text
    assert 'data-live="list"' in page and 'data-testid="search-hit"' not in page


def test_searching_from_the_box_and_opening_a_hit(page: Page, said, web):
    page.goto(web.link)
    expect(page.get_by_test_id("connection-status")).to_have_text("connected")
    page.get_by_test_id("search-input").fill("gauge")
    page.get_by_test_id("search-input").press("Enter")
    results = page.get_by_test_id("search-results")
    expect(results.get_by_test_id("search-hit")).to_have_count(3)  # the person, agent, title
    first = results.get_by_test_id("search-hit").first
    expect(first.locator("mark").first).to_have_text("gauge", ignore_case=True)
    expect(results).to_contain_text(f"Gauge {SCRIPT}")
    expect(page.get_by_test_id("search-input")).to_have_value("gauge")
    first.locator("a.title").click()
    expect(page.get_by_test_id("conversation-title")).to_have_text(f"Gauge {SCRIPT}")
    assert page.evaluate("window.pwned") is None


def test_the_api_gives_the_same_hits_as_json(client, bearer, said):
    answer = client.get("/api/search", params={"q": "rain"}, headers=bearer).json()
    assert answer["query"] == "rain"
    assert answer["hits"] == [hit.as_dict() for hit in cli_hits(said, "rain")]
    refused = client.get("/api/search", params={"q": ""}, headers=bearer)
    assert refused.status_code == 400 and "empty" in refused.json()["error"]
    assert client.get("/api/search", params={"q": "rain"}).status_code == 401
