"""Everything from outside is text on the page: messages, titles, tool results, Markdown."""

from __future__ import annotations

import pytest

from smarthole.testing import text, tool_use
from smarthole.web.markdown import MAX_CHARS, render
from tests.helpers import db, drop, run_once

SCRIPT = "<script>alert('pwned')</script>"
IMG = '<img src=x onerror="alert(1)">'
REL = 'rel="noopener noreferrer"'


@pytest.fixture
def hostile(team_home, fake, env):
    """A conversation whose every part carries a payload: message, reply, title, tool result."""
    fake.add(
        tool_use("start_task", {"task": f"Look {IMG}", "agents": ["researcher"], "max_turns": 1}),
        entry_agent=True,
    )
    fake.add(tool_use("read_file", {"path": SCRIPT}, text=f"Reading {SCRIPT}"), agent="researcher")
    fake.add(text(f"Found [click](javascript:alert(1)) {IMG}"), agent="researcher")
    fake.add(text(f"Reply {SCRIPT} and [safe](https://example.org)"), entry_agent=True)
    drop(team_home, f"Hello {IMG}", "m1")
    run_once(team_home, env)
    connection = db(team_home)
    with connection:
        connection.execute("UPDATE conversations SET title = ?", (f"Title {SCRIPT}",))
    return connection.execute("SELECT id FROM conversations").fetchone()["id"]


def test_a_conversation_page_escapes_every_payload(client, bearer, hostile):
    page = client.get(f"/c/{hostile}", headers=bearer).text
    for payload in (SCRIPT, IMG, "<img", "<script>alert"):
        assert payload not in page
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in page  # the title, a reply
    assert "Reply &lt;script&gt;" in page
    assert "&lt;img src=x onerror=" in page
    assert 'href="javascript' not in page
    assert '<a href="https://example.org" rel="noopener noreferrer">safe</a>' in page
    assert page.count("<script") == 1  # our module, and only it
    assert '<script type="module" src="/static/app.js"></script>' in page


def test_the_list_and_the_fragments_escape_too(client, bearer, hostile):
    listing = client.get("/", headers=bearer).text
    live = client.get(f"/c/{hostile}/live", params={"from_turn": 1}, headers=bearer).text
    fragment = client.get("/fragments/conversations", headers=bearer).text
    for body in (listing, live, fragment):
        assert SCRIPT not in body and IMG not in body
    assert "Title &lt;script&gt;" in listing


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("**bold**", "<strong>bold</strong>"),
        (SCRIPT, "&lt;script&gt;alert('pwned')&lt;/script&gt;"),
        (IMG, "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("[x](JavaScript:alert(1))", "[x](JavaScript:alert(1))"),
        ("[x](data:text/html,hi)", "[x](data:text/html,hi)"),
        ("[x](/api/messages)", "[x](/api/messages)"),
        ("![i](https://t.example/p.png)", f'!<a href="https://t.example/p.png" {REL}>i</a>'),
        ("<https://a.example>", f'<a href="https://a.example" {REL}>https://a.example</a>'),
        ("[m](mailto:me@example.org)", f'<a href="mailto:me@example.org" {REL}>m</a>'),
        ('[t](https://a.example "x\\" onclick=\\"f()")', 'title="x&quot; onclick=&quot;f()"'),
        ("```\n<b>code</b>\n```", "<code>&lt;b&gt;code&lt;/b&gt;\n</code>"),
        ("line one\nline two", "line one<br />\nline two"),
    ],
)  # fmt: skip
def test_markdown_is_safe(source, shown):
    assert shown in str(render(source))


def test_very_long_text_is_shown_plain_without_parsing():
    rendered = str(render("*" * (MAX_CHARS + 1) + SCRIPT))
    assert rendered.startswith('<pre class="plain">') and "&lt;script&gt;" in rendered


def test_deep_nesting_is_bounded():
    rendered = str(render("> " * 500 + "deep"))
    assert rendered.count("<blockquote>") <= 25


def test_an_unanswered_question_is_marked_as_such(client, bearer, team_home, fake, env):
    fake.add(
        tool_use("send_message", {"message": "Which city?", "is_question": True}), entry_agent=True
    )
    fake.add(text("I asked you which city you mean."), entry_agent=True)
    drop(team_home, "Book me a table", "m1")
    run_once(team_home, env)
    cid = db(team_home).execute("SELECT id FROM conversations").fetchone()["id"]
    page = client.get(f"/c/{cid}", headers=bearer).text
    assert page.count('data-testid="pending-question"') == 1
    marked = page.split('data-testid="pending-question"')[0].rsplit("<article", 1)[1]
    assert 'data-kind="question"' in marked
    data = client.get(f"/api/conversations/{cid}", headers=bearer).json()
    assert data["conversation"]["state"] == "waiting"
    assert [(m["kind"], m["pending_question"]) for m in data["messages"]] == [
        ("user", False), ("question", True), ("response", False)
    ]  # fmt: skip
    listing = client.get("/", headers=bearer).text
    assert "waiting for your answer" in listing
