"""The Schedules page: the list with next runs, pause and resume, run now (in Chromium), and
its API routes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from playwright.sync_api import Page, expect

from smarthole.db.schedules import Schedules
from smarthole.db.store import Store
from smarthole.testing import text

from .test_browser import open_view


def add(home: Path, name: str = "weekly", every: str = "7d", text: str = "Plan the week.") -> str:
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        return (
            Schedules(store)
            .create(
                name=name,
                kind="every",
                expression=every,
                timezone="Europe/Berlin",
                text=text,
                channel="default",
                source="cli",
                now=datetime.now(UTC),
            )
            .id
        )
    finally:
        store.close()


def test_schedules_are_paused_resumed_and_run_from_the_page(
    page: Page, team_home, fake, live_daemon, web
):
    add(team_home)
    fake.add(text("Here is the plan."))
    open_view(page, web.link, "/schedules")
    row = page.get_by_test_id("schedule-row")
    expect(page.get_by_test_id("schedules-table")).to_be_visible()
    expect(row).to_have_attribute("data-name", "weekly")
    expect(row.get_by_test_id("schedule-next")).to_have_text(re.compile(r"CES?T$"))
    expect(row.get_by_test_id("schedule-last")).to_have_text("—")

    row.get_by_test_id("schedule-pause").click()
    expect(page.get_by_test_id("schedule-notice")).to_have_text("Schedule weekly is paused.")
    expect(row).to_have_attribute("data-state", "paused")
    expect(row.get_by_test_id("schedule-pause")).to_have_count(0)

    row.get_by_test_id("schedule-resume").click()
    expect(row).to_have_attribute("data-state", "active")

    row.get_by_test_id("schedule-run").click()
    expect(page.get_by_test_id("schedule-notice")).to_have_text(re.compile("fires now"))
    expect(row.get_by_test_id("schedule-last")).to_have_text(re.compile(r"· done$"), timeout=30_000)


def test_the_page_escapes_what_the_model_wrote(client, bearer, team_home):
    add(team_home, text="<script>alert(1)</script>")
    page = client.get("/schedules", headers=bearer)
    assert page.status_code == 200
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)" in page.text


def test_the_api_lists_and_acts(client, bearer, team_home):
    schedule_id = add(team_home)
    (listed,) = client.get("/api/schedules", headers=bearer).json()["schedules"]
    assert listed["id"] == schedule_id and listed["every"] == "7d"
    origin = {**bearer, "origin": str(client.base_url)}
    paused = client.post(f"/api/schedules/{schedule_id}/pause", headers=origin)
    assert paused.status_code == 200, paused.text
    assert client.post(f"/api/schedules/{schedule_id}/explode", headers=origin).status_code == 404
    assert client.post("/api/schedules/nothing/run", headers=origin).status_code == 404
    assert client.post(f"/api/schedules/{schedule_id}/resume", headers=origin).status_code == 200
    again = client.post(f"/api/schedules/{schedule_id}/resume", headers=origin)
    assert again.status_code == 409


def test_an_action_wakes_the_running_daemon(client, bearer, team_home, monkeypatch):
    woken: list[Path] = []
    monkeypatch.setattr("smarthole.pipeline.watch.wake_daemon", woken.append)
    schedule_id = add(team_home)
    origin = {**bearer, "origin": str(client.base_url)}
    assert client.post(f"/api/schedules/{schedule_id}/run", headers=origin).status_code == 200
    assert woken == [team_home / "inbox"], "its watcher sees the wake file: it looks at once"
    assert client.post("/api/schedules/nothing/run", headers=origin).status_code == 404
    assert len(woken) == 1, "a refused action changed nothing"
