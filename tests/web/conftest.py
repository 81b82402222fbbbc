"""Fixtures of the web view's tests: a team home, the app in-process, the server in a thread,
and Chromium for the browser tests (Debian's ``/usr/bin/chromium``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from smarthole.home import Home
from smarthole.web.app import create_app
from smarthole.web.server import WebHandle, start_in_thread
from smarthole.web.settings import WebSettings, ensure_token
from tests.helpers import write_config

CHROMIUM = os.environ.get("SMARTHOLE_CHROMIUM", "/usr/bin/chromium")
REQUIRE_BROWSER = "SMARTHOLE_REQUIRE_BROWSER"
TOKEN = "test-token-0123456789abcdefghijklmnop"
HOST = "127.0.0.1"
PORT = 8470
BASE = f"http://{HOST}:{PORT}"
TEAM = {
    "researcher": {"description": "Finds facts in the notes", "instructions": "Research."},
    "critic": {"description": "Checks the facts", "instructions": "Be critical."},
}


@pytest.fixture
def team_home(home: Path) -> Path:
    write_config(home, agents=TEAM)
    return home


@pytest.fixture
def client(team_home: Path) -> Iterator[TestClient]:
    """The app in this process, not logged in; ``client.app`` is it."""
    app = create_app(Home(team_home), token=TOKEN, host=HOST, port=PORT, poll_seconds=0.02)
    with TestClient(app, base_url=BASE) as test_client:
        yield test_client


@pytest.fixture
def bearer() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def web(team_home: Path) -> Iterator[WebHandle]:
    """The view served by uvicorn from a thread, on a free port."""
    handle = start_in_thread(Home(team_home), WebSettings(enabled=True, port=0))
    yield handle
    handle.stop()
    assert not handle.thread.is_alive()


@pytest.fixture
def web_token(team_home: Path, web: WebHandle) -> str:
    return ensure_token(Home(team_home))


# -- the browser ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Chromium from the system, headless, reaching nothing but this machine. Without it the
    browser tests are skipped, except where ``SMARTHOLE_REQUIRE_BROWSER=1`` (CI) says a
    missing browser is a failure."""
    if not shutil.which(CHROMIUM):
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get(REQUIRE_BROWSER) == "1":
            pytest.fail(f"{message}, and {REQUIRE_BROWSER}=1 requires one")
        pytest.skip(message)
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-sync",
            "--no-first-run",
            "--metrics-recording-only",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}}


@pytest.fixture(autouse=True)
def _patient_assertions() -> None:
    """Web-first assertions wait; a shared CI machine may need longer than Playwright's 5 s."""
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)
