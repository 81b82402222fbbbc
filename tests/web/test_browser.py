"""The view in a real browser (Chromium), against a real daemon and the fake Messages API."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from playwright.sync_api import Page, Route, expect

from smarthole.testing import hold, text, tool_use
from tests.helpers import REPO, db, drop, drop_folder, image_bytes, run_once, write_config

from .conftest import TEAM
from .support import WebProcess, counts, event_ids, free_port, script_team, wait_until

SCREENSHOT = REPO / "docs" / "img" / "web.png"
WRITE_SCREENSHOT = "SMARTHOLE_DOCS_SCREENSHOT"  # =1: the screenshot test writes the docs' picture


def open_view(page: Page, link: str, path: str = "/") -> None:
    """Log in with the printed link, then go to ``path``; wait for the live connection."""
    page.goto(link)
    if path != "/":
        page.goto(link.split("/?")[0] + path)
    expect(page.get_by_test_id("connection-status")).to_have_text("connected")


def send(page: Page, words: str) -> None:
    page.get_by_test_id("composer").fill(words)
    page.get_by_test_id("send").click()


def agent_messages(page: Page):
    return page.locator('[data-testid="human-pane"] [data-testid="message"][data-role="agent"]')


def start_conversation(page: Page, link: str, words: str) -> str:
    """Send the first message from the New conversation page; the page moves to it."""
    open_view(page, link, "/new")
    send(page, words)
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+$"))
    expect(page.get_by_test_id("connection-status")).to_have_text("connected")
    page.evaluate("window.smartholeTestMarker = 'same page'")  # gone if the page reloads
    return page.url.rsplit("/", 1)[1]


def still_same_page(page: Page) -> bool:
    return page.evaluate("window.smartholeTestMarker") == "same page"


def turn_end(home: Path, message_id: str) -> int | None:
    """The id of the event that ended the turn of ``message_id``, once there is one."""
    connection = db(home)
    try:
        row = connection.execute(
            "SELECT id FROM events WHERE message_id = ? AND type = 'turn_completed'",
            (message_id,),
        ).fetchone()
        return row["id"] if row else None
    finally:
        connection.close()


def answer_sends_after_their_turns(page: Page, home: Path) -> None:
    """From here on the page has the answer to a send only once its socket has brought every
    event of the turn the message started: the order a busy machine may give them."""

    def late(route: Route) -> None:
        response = route.fetch()
        last = wait_until(lambda: turn_end(home, response.json()["id"]), "the turn's end")
        page.wait_for_function(
            "last => Number(document.querySelector('[data-testid=connection-status]')"
            ".dataset.lastEvent) >= last",
            arg=last,
        )
        route.fulfill(response=response)

    page.route("**/api/messages", late)


def test_a_message_from_the_composer_is_answered_without_a_reload(
    page, team_home, fake, live_daemon, web
):
    release = threading.Event()
    fake.add(text("Hello from **the agent**."), entry_agent=True)
    fake.add(hold(release, text("A second answer.")), entry_agent=True)
    try:
        start_conversation(page, web.link, "Hi there")
        expect(agent_messages(page).locator(".body")).to_have_text(["Hello from the agent."])
        expect(page.get_by_test_id("turn-number")).to_have_text("Turn: 1")
        send(page, "And again")
        expect(page.get_by_test_id("conversation-state")).to_have_text("running")
        expect(page.get_by_test_id("composer")).to_be_disabled()
        expect(page.get_by_test_id("send")).to_be_disabled()
        release.set()
        expect(agent_messages(page).nth(1)).to_contain_text("A second answer.")
        expect(page.get_by_test_id("composer")).to_be_enabled()
        expect(page.get_by_test_id("turn-number")).to_have_text("Turn: 2")
        humans = page.locator('[data-testid="message"][data-role="human"] .body')
        expect(humans).to_have_text(["Hi there", "And again"])
        assert still_same_page(page)
    finally:
        release.set()


def test_a_new_conversation_is_shown_when_its_events_come_before_the_answer_to_the_send(
    page, team_home, fake, live_daemon, web
):
    fake.add(text("A quick answer."), entry_agent=True)
    open_view(page, web.link, "/new")
    answer_sends_after_their_turns(page, team_home)
    send(page, "Hi there")
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+$"))
    expect(agent_messages(page).locator(".body")).to_have_text(["A quick answer."])


def test_the_first_message_of_a_new_conversation_shows_it_in_place_without_a_reload(
    page, team_home, fake, live_daemon, web
):
    fake.add(text("A first answer."), entry_agent=True)
    fake.add(text("A second answer."), entry_agent=True)
    open_view(page, web.link, "/new")
    page.evaluate("window.smartholeTestMarker = 'same page'")
    send(page, "Hello")
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+$"))
    expect(agent_messages(page).locator(".body")).to_have_text(["A first answer."])
    expect(page.get_by_test_id("turn-number")).to_have_text("Turn: 1")
    expect(page.get_by_test_id("composer")).to_be_enabled()
    send(page, "And again")  # a follow-up in the conversation the page now shows
    expect(agent_messages(page).locator(".body")).to_have_text(
        ["A first answer.", "A second answer."]
    )
    assert still_same_page(page)
    assert len(db(team_home).execute("SELECT id FROM conversations").fetchall()) == 1


def test_the_composer_is_free_again_when_the_turn_ends_before_the_answer_to_the_send(
    page, team_home, fake, live_daemon, web
):
    fake.add(text("First answer."), entry_agent=True)
    fake.add(text("Second answer."), entry_agent=True)
    start_conversation(page, web.link, "Hi there")
    expect(agent_messages(page)).to_have_count(1)
    answer_sends_after_their_turns(page, team_home)
    send(page, "And again")
    expect(agent_messages(page).nth(1)).to_contain_text("Second answer.")
    expect(page.get_by_test_id("composer-note")).to_have_text("")
    expect(page.get_by_test_id("composer")).to_be_enabled()
    expect(page.get_by_test_id("send")).to_be_enabled()
    assert still_same_page(page)


def test_the_team_works_in_the_right_pane_only_and_it_clears_on_the_next_turn(
    page, team_home, fake, live_daemon, web
):
    release = threading.Event()
    script_team(fake, critic=hold(release, text("Confirmed: **Paris**.")))
    fake.add(text("You are welcome."), entry_agent=True)
    try:
        start_conversation(page, web.link, "What is the capital of France? Ask the team.")
        team = page.get_by_test_id("team-pane")
        human = page.get_by_test_id("human-pane")
        researcher = team.locator('[data-testid="team-turn"][data-agent="researcher"]')
        expect(researcher).to_contain_text("Paris, according to geography.md.")
        expect(researcher.get_by_test_id("tool-call")).to_contain_text("read_file")
        critic = team.locator('[data-testid="team-turn"][data-agent="critic"]')
        expect(critic).to_have_attribute("data-finished", "false")  # working, live
        expect(page.get_by_test_id("task-progress")).to_have_text("critic · 2/3")
        expect(human).not_to_contain_text("geography")
        # a refresh in the middle of the task changes nothing in the store
        before = counts(team_home)
        page.reload()
        expect(page.get_by_test_id("connection-status")).to_have_text("connected")
        expect(researcher).to_contain_text("Paris, according to geography.md.")
        assert counts(team_home) == before
        page.evaluate("window.smartholeTestMarker = 'same page'")
        release.set()
        expect(agent_messages(page)).to_contain_text(["The team says: Paris."])
        expect(team.get_by_test_id("team-turn")).to_have_count(3)
        expect(critic).to_contain_text("Confirmed: Paris.")
        for words in ("Paris, according", "Confirmed", "Done.", "geography"):
            expect(human).not_to_contain_text(words)
        # the next human turn: the team pane clears, the turn goes up
        send(page, "Thanks!")
        expect(page.get_by_test_id("turn-number")).to_have_text("Turn: 2")
        expect(team.get_by_test_id("team-turn")).to_have_count(0)
        expect(page.get_by_test_id("team-empty")).to_have_text("No team work in turn 2.")
        expect(agent_messages(page).last).to_contain_text("You are welcome.")
        # the picker shows the earlier turn's collaboration again
        page.get_by_test_id("turn-picker").select_option("1")
        expect(team.get_by_test_id("team-turn")).to_have_count(3)
        assert still_same_page(page)
    finally:
        release.set()


def test_new_conversation_empties_both_panes_and_starts_one_in_the_same_channel(
    page, team_home, fake, live_daemon, web
):
    fake.add(text("First answer."), entry_agent=True)
    fake.add(text("A fresh start."), entry_agent=True)
    open_view(page, web.link, "/new?channel=phone")
    send(page, "Hello")
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+$"))
    expect(agent_messages(page)).to_have_count(1)
    first = page.url
    page.get_by_test_id("new-conversation").click()
    expect(page.get_by_test_id("human-pane").get_by_test_id("message")).to_have_count(0)
    expect(page.get_by_test_id("team-pane").get_by_test_id("team-turn")).to_have_count(0)
    expect(page.get_by_test_id("connection-status")).to_have_text("connected")
    send(page, "Start over")
    page.wait_for_url(lambda url: re.search(r"/c/[0-9a-f]+$", url) is not None and url != first)
    expect(agent_messages(page)).to_contain_text(["A fresh start."])
    rows = (
        db(team_home).execute("SELECT channel, ended_at FROM conversations ORDER BY key").fetchall()
    )
    assert [row["channel"] for row in rows] == ["phone", "phone"]
    assert rows[0]["ended_at"] is not None


def test_payloads_in_a_message_a_title_and_a_tool_result_are_only_text(
    page, team_home, fake, env, web
):
    payload = '<img src=x onerror="window.pwned=1;alert(1)">'
    script = "<script>window.pwned=2;alert(2)</script>"
    fake.add(
        tool_use("start_task", {"task": "look", "agents": ["researcher"], "max_turns": 1}),
        entry_agent=True,
    )
    fake.add(tool_use("read_file", {"path": script}), agent="researcher")
    fake.add(text(f"Found {payload}"), agent="researcher")
    fake.add(text(f"Reply {script}"), entry_agent=True)
    drop(team_home, f"Hello {payload}", "m1")
    run_once(team_home, env)
    connection = db(team_home)
    with connection:
        connection.execute("UPDATE conversations SET title = ?", (f"Title {script}",))
    cid = connection.execute("SELECT id FROM conversations").fetchone()["id"]
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_view(page, web.link)
    expect(page.get_by_test_id("conversation-item")).to_contain_text(f"Title {script}")
    open_view(page, web.link, f"/c/{cid}")
    expect(page.get_by_test_id("conversation-title")).to_have_text(f"Title {script}")
    human = page.locator('[data-testid="message"][data-role="human"] .body')
    expect(human).to_have_text(f"Hello {payload}")
    expect(agent_messages(page).locator(".body")).to_have_text(f"Reply {script}")
    call = page.get_by_test_id("tool-call")
    call.locator("summary").click()
    expect(call.get_by_test_id("tool-result")).to_contain_text("read_file")
    expect(call.locator(".input")).to_contain_text(script)
    expect(page.get_by_test_id("team-turn")).to_contain_text(f"Found {payload}")
    assert page.evaluate("window.pwned") is None
    assert dialogs == []


def test_a_browser_without_the_token_sees_nothing(page, team_home, web):
    response = page.goto(web.url + "/")
    assert response is not None and response.status == 401
    expect(page.locator("body")).to_have_text(
        re.compile("needs the link that `smarthole web` printed")
    )
    wrong = page.goto(web.url + "/?token=not-the-token-at-all-0123456789")
    assert wrong is not None and wrong.status == 401


def test_the_daemon_killed_and_the_server_gone_while_a_page_is_open(
    page, team_home, fake, env, daemons, threads
):
    """Killed with -9: the daemon (the page says so, and its turn resumes when it is back),
    then the view's own server (the page says disconnected, then catches up: no gap, no
    repeat)."""
    never = threading.Event()
    fake.add(text("First answer."), entry_agent=True)
    fake.add(hold(never, text("lost with the daemon")), entry_agent=True)
    fake.add(text("Second answer, after the crash."), entry_agent=True)
    fake.add(text("Third answer, while the page was away."), entry_agent=True)
    daemon = daemons(team_home, env)
    port = free_port()
    server = WebProcess(team_home, port, env)
    try:
        cid = start_conversation(page, server.link, "one")
        expect(agent_messages(page)).to_contain_text(["First answer."])
        expect(page.get_by_test_id("daemon-status")).to_have_attribute("data-running", "true")
        send(page, "two")
        expect(page.get_by_test_id("conversation-state")).to_have_text("running")
        fake.wait_for_requests(2)
        daemon.kill()
        expect(page.get_by_test_id("daemon-status")).to_have_attribute("data-running", "false")
        expect(page.get_by_test_id("connection-status")).to_have_text("connected")
        threads(team_home, env)  # back (in a thread): its interrupted turn resumes
        expect(page.get_by_test_id("daemon-status")).to_have_attribute("data-running", "true")
        expect(agent_messages(page)).to_contain_text(
            ["First answer.", "Second answer, after the crash."]
        )
        expect(page.get_by_test_id("composer")).to_be_enabled()
        # now the view's server goes away, and something happens meanwhile
        loaded_at = int(page.locator("main").get_attribute("data-last-event") or 0)
        server.kill()
        expect(page.get_by_test_id("connection-status")).to_have_text("disconnected")
        drop(team_home, "three", "m3", conversation=cid)
        # its reply is written before the commit with its turn's last event: wait for that
        wait_until(lambda: turn_end(team_home, "m3"), "the third turn's end")
        server = WebProcess(team_home, port, env)
        status = page.get_by_test_id("connection-status")
        expect(status).to_have_text("connected")
        expect(agent_messages(page).last).to_contain_text("Third answer, while the page was away.")
        ids = event_ids(team_home, after=loaded_at)
        expect(status).to_have_attribute("data-last-event", str(ids[-1]))
        assert status.get_attribute("data-events-seen") == str(len(ids))  # each event once
        assert still_same_page(page)
    finally:
        never.set()
        server.close()


def test_a_running_task_is_aborted_from_the_tasks_page(page, team_home, fake, live_daemon, web):
    release = threading.Event()
    fake.add(
        tool_use("start_task", {"task": "Think long", "agents": ["researcher"], "max_turns": 5}),
        entry_agent=True,
    )
    fake.add(hold(release, text("Still thinking.")), agent="researcher")
    fake.add(text("The task was stopped."), entry_agent=True)
    try:
        drop(team_home, "Think hard, team", "m1")
        open_view(page, web.link, "/tasks")
        row = page.get_by_test_id("task-row")
        expect(row.get_by_test_id("task-status")).to_have_text("active")
        row.get_by_test_id("task-abort").click()
        expect(page.get_by_test_id("task-notice")).to_have_text(
            re.compile("will stop after the model call in flight returns")
        )
        release.set()
        expect(row.get_by_test_id("task-status")).to_have_text("aborted")
        expect(row.get_by_test_id("task-abort")).to_have_count(0)
    finally:
        release.set()


def test_a_long_conversation_shows_its_latest_turns_and_earlier_ones_on_demand(
    page, team_home, web
):
    from smarthole.daemon.runtime import Runtime
    from smarthole.home import Home

    turns = [
        {"role": role, "content": f"{role} {n}"}
        for n in range(1, 61)
        for role in ("human", "entry_agent")
    ]
    root = Runtime.for_home(Home(team_home))
    try:
        cid = root.conversations.import_context({"turns": turns}, channel="default").id
    finally:
        root.close()
    open_view(page, web.link, f"/c/{cid}")
    messages = page.get_by_test_id("human-pane").get_by_test_id("message")
    expect(messages).to_have_count(100)
    expect(messages.first).to_contain_text("human 11")
    page.get_by_test_id("load-earlier").click()
    expect(messages).to_have_count(120)
    expect(messages.first).to_contain_text("human 1")
    expect(page.get_by_test_id("load-earlier")).to_have_count(0)


def test_the_screenshot_in_the_docs(page, team_home, fake, env, web, tmp_path):
    """The picture of docs/web.md: a conversation with a photo, whose second turn the team
    worked on. Written into docs/img/web.png only when SMARTHOLE_DOCS_SCREENSHOT=1 (a run of
    the suite never changes a tracked file)."""
    researcher = {**TEAM["researcher"], "tools": ["read_file"]}
    write_config(team_home, agents={**TEAM, "researcher": researcher})
    (team_home / "workspace" / "geography.md").write_text("# Capitals\n\nFrance: Paris\n")
    fake.add(text("A fine map of Paris! I can look things up in your notes, or ask my team."))
    photo = image_bytes((480, 320), "PNG", "#8fb8de")
    hello = b"Hello! Here is my trip's map."
    drop_folder(team_home, "m0", {"message.md": hello, "paris.png": photo})
    run_once(team_home, env)
    cid = db(team_home).execute("SELECT id FROM conversations").fetchone()["id"]
    script_team(fake)
    drop(team_home, "What is the capital of France? Ask the team to check.", "m1", conversation=cid)
    run_once(team_home, env)
    connection = db(team_home)
    with connection:
        connection.execute("UPDATE conversations SET title = 'The capital of France'")
    page.set_viewport_size({"width": 1400, "height": 900})
    open_view(page, web.link, f"/c/{cid}")
    expect(page.get_by_test_id("team-turn")).to_have_count(3)
    expect(page.get_by_test_id("attachment-name")).to_have_text("paris.png")
    page.get_by_test_id("tool-call").first.locator("summary").click()
    expect(page.get_by_test_id("tool-result").first).to_be_visible()
    asked = os.environ.get(WRITE_SCREENSHOT) == "1"
    target = SCREENSHOT if asked else tmp_path / "web.png"
    page.screenshot(path=str(target))
    assert target.stat().st_size > 10_000
