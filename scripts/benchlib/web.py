"""The web view (issue 34): event -> DOM latency, opening a 10,000-message conversation, and
the server's CPU with 20 idle pages open.

The view runs as its own process (``smarthole web``'s command module, on a free port) and is
driven by Chromium (Debian's ``/usr/bin/chromium``) through Playwright:

- latency: a conversation page is open; the bench renames the conversation through the
  store's API (one committed ``conversation_renamed`` event) and the page records, with a
  MutationObserver, the wall-clock time at which the new title is in its DOM. Samples are
  taken one after another with a random pause of 0-60 ms, so they fall anywhere in the
  follower's polling interval. Goal: p95 under 100 ms.
- open: a conversation of 10,000 messages (5,000 turns, built with the store's import), from
  ``goto`` until its latest messages are in the DOM. Goal: under 1 s.
- idle: utime+stime of the view's process over 10 s with 20 conversation pages connected,
  minus the same with none. Goal: under 2% of one core.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib.procs import cpu_seconds
from benchlib.report import Row, percentile
from smarthole.conversations import Conversations
from smarthole.db.events import EventLog
from smarthole.db.store import Store
from smarthole.formats import utc_now
from smarthole.home import Home

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update"]  # fmt: skip
SERVE = (
    "import sys, argparse; from smarthole.web.command import add_arguments, run; "
    "parser = argparse.ArgumentParser(); parser.add_argument('--home'); add_arguments(parser); "
    "sys.exit(run(parser.parse_args(sys.argv[1:])))"
)
WATCH_TITLE = """() => {
  window.seenAt = {};
  const bar = document.querySelector('.bar-slot');
  new MutationObserver(() => {
    const title = document.querySelector('[data-testid="conversation-title"]');
    const match = title && /^title (\\d+)$/.exec(title.textContent);
    if (match && !(match[1] in window.seenAt)) window.seenAt[match[1]] = Date.now();
  }).observe(bar, { childList: true, subtree: true, characterData: true });
}"""


def web_rows(root: Path, events: int = 200, messages: int = 10_000, pages: int = 20) -> list[Row]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return [Row("web: skipped (pip install -e '.[test]' for playwright)", None, "")]
    if not Path(CHROMIUM).exists():
        return [Row(f"web: skipped (no {CHROMIUM})", None, "")]
    home = Home(root / "web-home")
    home.ensure()
    store = Store.open(home.database, clock=utc_now)
    conversations = Conversations(store, EventLog(store))
    small = conversations.import_context(_turns(2), channel="default")
    large = conversations.import_context(_turns(messages // 2), channel="default")
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, "--home", str(home.root), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        link = server.stdout.readline().strip().removeprefix("Open ")
        base = link.split("/?")[0]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                context = browser.new_context()
                page = context.new_page()
                page.goto(link)
                latency = _latency(page, f"{base}/c/{small.id}", conversations, small.id, events)
                opening = _open(page, f"{base}/c/{large.id}")
                idle = _idle(context, f"{base}/c/{small.id}", server.pid, pages)
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        store.close()
    p50, p95 = percentile(latency, 0.5), percentile(latency, 0.95)
    return [
        Row("web: event -> DOM p50", p50, "ms", detail={"samples": len(latency)}),
        Row("web: event -> DOM p95", p95, "ms", goal="< 100 ms", max_value=100.0),
        Row(
            f"web: open a {messages:,}-message conversation",
            statistics.median(opening) * 1000,
            "ms",
            goal="< 1 s",
            max_value=1000.0,
            detail={"runs_ms": [round(s * 1000, 1) for s in opening]},
        ),
        Row(
            f"web: server CPU with {pages} idle pages",
            idle[0],
            "%",
            baseline=idle[1],
            baseline_name="no page open",
            goal="< 2% of a core",
            max_value=0.02,
        ),
    ]


def _turns(count: int) -> dict[str, object]:
    words = "A message of about two hundred characters, give or take, " * 3
    turns = [
        {"role": role, "content": f"{role} {n}: {words}"}
        for n in range(1, count + 1)
        for role in ("human", "entry_agent")
    ]
    return {"turns": turns}


def _latency(
    page: Any, url: str, conversations: Conversations, cid: str, events: int
) -> list[float]:
    page.goto(url)
    page.wait_for_selector('[data-testid="connection-status"][data-state="connected"]')
    page.evaluate(WATCH_TITLE)
    samples = []
    rng = random.Random(34)
    for i in range(events):
        conversations.rename(cid, f"title {i}")
        committed = time.time() * 1000
        page.wait_for_function(f"() => '{i}' in window.seenAt")
        seen = page.evaluate(f"() => window.seenAt['{i}']")
        samples.append(max(0.0, seen - committed))
        time.sleep(rng.uniform(0, 0.06))
    return samples


def _open(page: Any, url: str, runs: int = 5) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        page.goto(url)
        page.wait_for_selector(".human-turn >> nth=49")
        times.append(time.perf_counter() - started)
    return times


def _idle(
    context: Any, url: str, pid: int, pages: int, seconds: float = 10.0
) -> tuple[float, float]:
    """The server's CPU (a fraction of one core) with ``pages`` pages open, and with none."""
    for other in list(context.pages):
        other.close()
    baseline = _cpu(pid, seconds)
    opened = []
    for _ in range(pages):
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector('[data-testid="connection-status"][data-state="connected"]')
        opened.append(page)
    time.sleep(1.0)  # let the page loads' work settle before counting
    loaded = _cpu(pid, seconds)
    for page in opened:
        page.close()
    return loaded, baseline


def _cpu(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds  # a fraction of one core
