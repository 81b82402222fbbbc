"""``smarthole demo --tour``: every feature in turn, in a new home, against the bundled fake.

A daemon runs in this process with the fake model of ``smarthole.testing.script``; each step
drops a message (its ``/fake`` command makes the fake act) or runs a command as a person
would, in its own process, and prints what happened: a tool, a team task (with the web
view's link, where the right pane shows it), an approval answered from the command line, an
attachment, a schedule firing, a search. The commands and the web view run as their own
processes, as they would beside a real daemon, so nothing opens the daemon's store twice in
one process.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..config import set_up_home
from ..daemon import Daemon
from ..errors import ExitCode
from ..formats import dumps_toml, loads_toml
from ..home import Home
from ..pipeline.inbox import drop_message
from ..testing import FakeMessagesAPI
from ..testing.script import scripted
from .output import plain

TIMEOUT = 30.0  # for any one step's reply
START_TIMEOUT = 60.0  # for the daemon to start (a loaded machine takes a while to import)
# A 96x64 PNG (sky, sun and sand), so the tour needs no image library of its own.
PHOTO = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAIAAABqVuVZAAAA8ElEQVR42u3ZwRHBQBQGYMkoRBlqcaYeBXBWgxJUYXTC"
    "wcUMYt8mJrx8/5FsZvabfzPyNNvjeSbv0yIABAgQoN/NPN+WNs36+cPddQ/oNc3jVxVM7RR0QtckbFBo29EqeUhnB6o4"
    "NaFV7QR1QmsdsbxAfepTfgcNAgQIECBAgEZI9QQjdAcNSg3Up0SFa/++QXVGxh2DJcPA7F6HwlezaOPyNKhk5xXnMdXQ"
    "vqNK/tUY8veRhzQgQIAAAQIESAAB+vLb/GpxmoLC4bLUIEcMECBAgAABEkCAAAECBAgQIAEECBCgsfNhaN8xzdYgAVSQ"
    "G2BqNqkoRjyjAAAAAElFTkSuQmCC"
)
TRIP = "# Lisbon, 14-17 March\n\n- flight TP 1234 at 09:40\n- hotel Casa Azul, 3 nights\n"
TEAM = {
    "researcher": {"description": "Finds facts in the notes", "instructions": "Research."},
    "critic": {"description": "Checks a draft for gaps", "instructions": "Be critical."},
}


class Tour:
    """The steps, against one home with its daemon running in this process."""

    def __init__(self, home: Home, out: TextIO) -> None:
        self.home = home
        self.out = out
        self.shown: set[Path] = set()
        self.count = 0
        self.web: subprocess.Popen[str] | None = None
        self.link: str | None = None
        self.started = time.monotonic()

    def say(self, words: str = "") -> None:
        self.out.write(words + "\n")
        self.out.flush()

    def step(self, title: str) -> None:
        self.count += 1
        self.say(f"\n[{self.count}/6 · {time.monotonic() - self.started:.1f} s] {title}")

    def send(self, words: str, **fields: Any) -> str:
        """Drop a message into the inbox, as any program could; returns its id."""
        message_id = f"tour-{self.count}-{len(self.shown)}"
        self.say(f"  you: {words}")
        drop_message(self.home.inbox, words, message_id=message_id, **fields)
        return message_id

    def command(self, *words: str) -> str:
        """Run ``smarthole WORDS`` as its own process, as a person would; print and return
        what it printed."""
        shown = " ".join(w if " " not in w else repr(w) for w in words)
        self.say(f"  $ smarthole {shown}")
        done = subprocess.run(
            [sys.executable, "-m", "smarthole", *words, "--home", str(self.home.root)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "SMARTHOLE_HOME": str(self.home.root)},
        )
        for line in (done.stdout + done.stderr).rstrip().splitlines():
            self.say(f"    {line}")
        return done.stdout

    def reply(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Wait for the outbox file ``wanted`` picks, print it, and return its fields (its
        text as ``text``)."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            for path in sorted(self.home.outbox.glob("*.md")):
                if path in self.shown:
                    continue
                _, header, body = path.read_text().split("+++\n", 2)
                fields = {**loads_toml(header, source=path.name), "text": body.strip()}
                if wanted(fields):
                    self.shown.add(path)
                    kind = fields.get("kind")
                    lines = [line for line in plain(fields["text"]).splitlines() if line.strip()]
                    if kind == "approval":  # the instructions are for files; the tour answers
                        lines = lines[:1]
                    self.say(f"  agent ({kind}): {lines[0] if lines else ''}")
                    for line in lines[1:]:
                        self.say(f"    {line}")
                    return fields
            time.sleep(0.02)
        raise TimeoutError("the tour timed out waiting for the daemon")

    def final_to(self, message_id: str) -> dict[str, Any]:
        return self.reply(
            lambda f: f.get("in_reply_to") == message_id and f.get("kind") in ("response", "error")
        )

    # -- the steps --------------------------------------------------------------------------

    def start_web(self) -> None:
        """The web view as its own process (``smarthole web``), if the extra is installed."""
        self.web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "smarthole",
                "web",
                "--home",
                str(self.home.root),
                "--port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def web_link(self) -> str | None:
        if self.web is None:
            return None
        if self.link is None:
            assert self.web.stdout is not None
            first = self.web.stdout.readline().strip()
            self.link = first.removeprefix("Open ") if first.startswith("Open ") else ""
        return self.link or None

    def stop_web(self) -> None:
        if self.web is not None and self.web.poll() is None:
            self.web.terminate()
            try:
                self.web.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.web.kill()
                self.web.wait()

    def a_tool(self) -> str:
        self.step("A tool: the agent reads a note in workspace/")
        final = self.final_to(self.send("/fake tool read_file path=notes/trip.md"))
        return str(final["conversation"])

    def a_team(self, conversation: str) -> None:
        self.step("A team task: two agents take turns; the web view's right pane shows them")
        link = self.web_link()
        if link:
            base = link.split("/?")[0]
            self.say(f"  open {link} (once), then {base}/c/{conversation}")
        else:
            self.say(
                "  (the web view needs `pip install 'smarthole[web]'`; `smarthole tasks` lists it)"
            )
        self.final_to(self.send("/fake team researcher,critic: check my Lisbon trip notes"))

    def an_approval(self) -> None:
        self.step("An approval: write_file waits for your yes, given from the command line")
        message_id = self.send("/fake tool write_file path=notes/packing.md content='- sunscreen'")
        item = self.reply(lambda f: f.get("in_reply_to") == message_id and f["kind"] == "approval")
        self.command("approvals")
        self.command("approve", str(item["approval"]))
        self.final_to(message_id)
        written = self.home.workspace / "notes" / "packing.md"
        if written.exists():
            self.say(f"  workspace/notes/packing.md now says: {written.read_text().strip()}")

    def an_attachment(self) -> None:
        self.step("An attachment: a folder message with a photo in it")
        staging = self.home.root / ".tour-photo"
        staging.mkdir()
        (staging / "message.md").write_text("What is in this picture?\n")
        (staging / "beach.png").write_bytes(PHOTO)
        self.say("  you: What is in this picture? (+ beach.png, a folder renamed into inbox/)")
        staging.rename(self.home.inbox / "tour-photo")
        self.reply(lambda f: f.get("kind") == "response" and "picture" in f["text"])

    def a_schedule(self) -> None:
        self.step("A schedule: the daemon speaks first")
        self.command("schedule", "add", "stretch", "--every", "2s", "/fake say Time to stretch.")
        self.reply(lambda f: f.get("kind") == "response" and "stretch" in f["text"])
        self.command("schedule", "rm", "stretch")

    def a_search(self) -> None:
        self.step("A search: everything said is indexed as it is stored")
        self.command("search", "Lisbon", "--limit", "3")


def run_tour(out: TextIO, home: Home, *, keep: bool) -> int:
    """Walk every feature in ``home`` (new, or an empty folder to keep)."""
    started = time.monotonic()
    set_up_home(home)
    home.config_file.write_text(
        dumps_toml(
            {
                "inbox": {"rescan_seconds": 0.5},
                "agents": TEAM,
                "approvals": {"tools": ["write_file"], "timeout": "1h"},
            }
        )
    )
    (home.workspace / "notes").mkdir(parents=True, exist_ok=True)
    (home.workspace / "notes" / "trip.md").write_text(TRIP)
    tour = Tour(home, out)
    with FakeMessagesAPI(default=scripted) as fake:
        env = {"ANTHROPIC_API_KEY": "demo", "ANTHROPIC_BASE_URL": fake.url}
        daemon = Daemon(home, env=env, handle_signals=False)
        thread = threading.Thread(target=daemon.run, name="smarthole-tour", daemon=True)
        thread.start()
        tour.start_web()
        tour.say(f"smarthole tour: a home in {home.root}, the bundled fake model at {fake.url}")
        tour.say("Each message below is a file dropped into inbox/; /fake makes the fake act.")
        try:
            if not daemon.ready.wait(START_TIMEOUT):
                tour.say(f"The daemon did not start within {START_TIMEOUT:.0f} s.")
                return ExitCode.FAILED
            tour.say(f"The daemon is ready ({time.monotonic() - started:.1f} s).")
            conversation = tour.a_tool()
            tour.a_team(conversation)
            tour.an_approval()
            tour.an_attachment()
            tour.a_schedule()
            tour.a_search()
        except TimeoutError as exc:
            tour.say(str(exc))
            return ExitCode.FAILED
        finally:
            tour.stop_web()
            daemon.request_stop()
            thread.join(TIMEOUT)
        took = time.monotonic() - started
        tour.say(f"\nDone in {took:.1f} s; the fake model was called {len(fake.requests)} times.")
    if keep:
        tour.say(f"Look around: smarthole ls --home {home.root} (or show, events, web)")
    tour.say("Try your own: python -m smarthole.testing, and /fake commands (docs/fake.md).")
    return ExitCode.OK
