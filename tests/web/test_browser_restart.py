"""The view served by ``smarthole run`` itself, across a kill -9 of that daemon (issue 41, 6).

The sequence a person followed when a reply never came: ``[web] enabled``, a conversation page
open, ``status`` run beside the daemon, the daemon killed with -9, a message dropped into the
conversation, the daemon started again. ``status`` used to leave the daemon writing into a
deleted WAL, so the restarted daemon found no such conversation and set the message aside.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from smarthole.testing import text
from tests.helpers import drop, smarthole, wait_for, write_config

from .conftest import TEAM
from .support import free_port


def printed_link(output: str) -> str:
    found = re.search(r"Open (http://\S+/\?token=[\w-]+)", output)
    return found.group(1) if found else ""


def test_a_reply_reaches_the_open_page_after_status_a_kill_9_and_a_restart(
    page: Page, team_home, fake, env, daemons
):
    write_config(team_home, agents=TEAM, web={"enabled": True, "port": free_port()})
    fake.add(text("First answer."), entry_agent=True)
    fake.add(text("Second answer, after the restart."), entry_agent=True)
    daemon = daemons(team_home, env)
    link = wait_for(lambda: printed_link(daemon.output()), 30, "the view's link")

    page.goto(link)
    page.goto(link.split("/?")[0] + "/new")
    page.get_by_test_id("composer").fill("one")
    page.get_by_test_id("send").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+$"))
    conversation = page.url.rsplit("/", 1)[1]
    agents = page.locator('[data-testid="human-pane"] [data-testid="message"][data-role="agent"]')
    expect(agents).to_contain_text(["First answer."])

    assert smarthole("status", "--home", str(team_home), env=env).returncode == 0
    daemon.kill()
    expect(page.get_by_test_id("connection-status")).to_have_text("disconnected")
    assert "daemon: not running" in smarthole("status", "--home", str(team_home), env=env).stdout
    drop(team_home, "two", "m2", conversation=conversation)
    daemons(team_home, env)

    expect(page.get_by_test_id("connection-status")).to_have_text("connected", timeout=30_000)
    expect(agents).to_contain_text(
        ["First answer.", "Second answer, after the restart."], timeout=30_000
    )
    assert not list((team_home / "failed").iterdir())
