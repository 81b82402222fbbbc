"""The example plugins of plugins/, loaded from the folder the way users load them."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from smarthole.app import App
from smarthole.config import parse_config
from smarthole.db.events import Event
from smarthole.db.outbox import OutboxItem
from smarthole.errors import ConfigError
from smarthole.home import Home
from smarthole.testing import text, tool_use
from tests.helpers import REPO, drop, finals, run_once, wait_for, write_config

PLUGINS = REPO / "plugins"


def load(tmp_path: Path, name: str, settings: dict | None = None) -> App:
    plugins = {"paths": [str(PLUGINS)], "enabled": [name]}
    if settings is not None:
        plugins[name] = settings
    app = App.load(Home(tmp_path / "home"), parse_config({"plugins": plugins}), env={})
    assert app.plugins.info[name].source == "folder"
    app.plugins.call_strict("startup", app=app)
    return app


def item(kind: str, text: str = "hello") -> OutboxItem:
    return OutboxItem(
        id=f"o-{kind}",
        in_reply_to="m1",
        conversation="c1",
        channel="default",
        turn=1,
        kind=kind,
        waiting_for_reply=kind == "question",
        text=text,
        path=Path("/tmp/x.md"),
        created_at=datetime(2026, 11, 22, tzinfo=UTC),
    )


def test_all_examples_load_together(tmp_path):
    app = App.load(Home(tmp_path), parse_config({"plugins": {"paths": [str(PLUGINS)]}}), env={})
    assert {"desktop_notify", "webhook", "git_autocommit"} <= set(app.plugins.info)


# -- desktop_notify ---------------------------------------------------------------------------


@pytest.fixture
def fake_notify_send(tmp_path) -> tuple[Path, Path]:
    log = tmp_path / "notify.log"
    script = tmp_path / "fake-notify-send"
    script.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {log}\necho >> {log}\n')
    script.chmod(0o755)
    return script, log


def test_desktop_notify_marks_questions_and_errors_critical(tmp_path, fake_notify_send):
    script, log = fake_notify_send
    app = load(tmp_path, "desktop_notify", {"command": str(script)})
    for kind in ("response", "question", "error"):
        app.plugins.notify("deliver", outbox_item=item(kind, f"{kind} text"), app=app)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("--urgency=normal|--app-name=smarthole|--|smarthole|response text")
    assert lines[1].startswith("--urgency=critical|") and "smarthole asks" in lines[1]
    assert lines[2].startswith("--urgency=critical|") and "error text" in lines[2]


@pytest.mark.parametrize("reply", ["-rf /", "--help", "--urgency=low", "-"])
def test_desktop_notify_never_reads_the_reply_as_an_option(tmp_path, monkeypatch, reply):
    """A fake ``notify-send`` found on PATH records its argv; options end before the text."""
    bin_dir, log = tmp_path / "bin", tmp_path / "argv.jsonl"
    bin_dir.mkdir()
    script = bin_dir / "notify-send"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    app = load(tmp_path, "desktop_notify")
    app.plugins.notify("deliver", outbox_item=item("response", reply), app=app)
    (argv,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert argv[-3:] == ["--", "smarthole", reply]
    assert all(arg.startswith("--") for arg in argv[:-3])


def test_desktop_notify_only_notifies_chosen_kinds(tmp_path, fake_notify_send):
    script, log = fake_notify_send
    app = load(tmp_path, "desktop_notify", {"command": str(script), "kinds": ["question"]})
    app.plugins.notify("deliver", outbox_item=item("response"), app=app)
    app.plugins.notify("deliver", outbox_item=item("question"), app=app)
    assert len(log.read_text().splitlines()) == 1


def test_desktop_notify_without_notify_send_does_nothing(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    app = load(tmp_path, "desktop_notify", {"command": "no-such-notifier-xyz"})
    app.plugins.notify("deliver", outbox_item=item("question"), app=app)
    assert "no-such-notifier-xyz is not installed" in caplog.text
    assert "failed in hook" not in caplog.text


def test_desktop_notify_rejects_unknown_kinds(tmp_path):
    with pytest.raises(ConfigError, match=r"\[plugins.desktop_notify\].*unknown kinds"):
        load(tmp_path, "desktop_notify", {"kinds": ["shout"]})


# -- webhook ----------------------------------------------------------------------------------


class Receiver:
    """A local HTTP server that records POSTed JSON; it can fail or stall on request."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.failures = 0
        self.gate = threading.Event()
        self.gate.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                receiver.gate.wait(10)
                if receiver.failures > 0:
                    receiver.failures -= 1
                    self.send_response(500)
                else:
                    receiver.bodies.append(body)
                    self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def webhook_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "smarthole-webhook"]


def test_webhook_posts_each_item_as_json(tmp_path, receiver):
    app = load(tmp_path, "webhook", {"url": receiver.url})
    sent = item("response", "the reply")
    app.plugins.notify("deliver", outbox_item=sent, app=app)
    wait_for(lambda: receiver.bodies, 10)
    assert receiver.bodies == [sent.as_dict()]
    app.plugins.notify("shutdown", app=app)
    assert not webhook_threads()


def test_webhook_retries_failures(tmp_path, receiver):
    receiver.failures = 2
    app = load(tmp_path, "webhook", {"url": receiver.url, "backoff_seconds": 0.01})
    app.plugins.notify("deliver", outbox_item=item("question"), app=app)
    wait_for(lambda: receiver.bodies, 10)
    assert len(receiver.bodies) == 1 and receiver.failures == 0
    app.plugins.notify("shutdown", app=app)


def test_webhook_never_blocks_delivery(tmp_path, receiver):
    receiver.gate.clear()
    app = load(tmp_path, "webhook", {"url": receiver.url})
    for n in range(3):
        app.plugins.notify("deliver", outbox_item=item("message", f"m{n}"), app=app)
    assert receiver.bodies == []  # all three returned while the server is stalled
    receiver.gate.set()
    wait_for(lambda: len(receiver.bodies) == 3, 10)
    app.plugins.notify("shutdown", app=app)
    assert not webhook_threads()


def test_webhook_without_url_is_off_and_a_bad_url_stops_startup(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    app = load(tmp_path, "webhook")
    app.plugins.notify("deliver", outbox_item=item("response"), app=app)
    assert "no [plugins.webhook] url configured" in caplog.text and not webhook_threads()
    with pytest.raises(ConfigError, match=r"\[plugins.webhook\].*http:// or https://"):
        load(tmp_path, "webhook", {"url": "ftp://example.com"})


def test_webhook_through_the_daemon(home, fake, env, receiver):
    write_config(
        home,
        plugins={"paths": [str(PLUGINS)], "enabled": ["webhook"], "webhook": {"url": receiver.url}},
    )
    fake.add(text("Sent by webhook too."))
    drop(home, "hello", "m1")
    run_once(home, env)
    assert [b["text"] for b in receiver.bodies] == ["Sent by webhook too."]
    assert receiver.bodies[0]["in_reply_to"] == "m1"


# -- git_autocommit ---------------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(workspace: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=workspace, capture_output=True, text=True, check=True
    ).stdout


def turn_completed(turn: int) -> Event:
    return Event(
        type="turn_completed",
        at=datetime.now(UTC),
        conversation="c123",
        channel="default",
        turn=turn,
        message_id="m1",
    )


@needs_git
def test_git_autocommit_commits_what_a_turn_changed(tmp_path):
    app = load(tmp_path, "git_autocommit")
    workspace = app.home.workspace
    workspace.mkdir(parents=True, exist_ok=True)
    git(workspace, "init", "--quiet")
    (workspace / "note.md").write_text("hello")
    app.plugins.notify("event", event=turn_completed(3))
    log = git(workspace, "log", "--format=%s%n%b")
    assert "smarthole: conversation c123 turn 3" in log and "- note.md" in log
    assert git(workspace, "log", "--format=%an <%ae>").strip() == "smarthole <smarthole@localhost>"
    app.plugins.notify("event", event=turn_completed(4))
    assert git(workspace, "rev-list", "--count", "HEAD").strip() == "1"


def test_git_autocommit_ignores_a_workspace_without_git(tmp_path, caplog):
    app = load(tmp_path, "git_autocommit")
    app.home.workspace.mkdir(parents=True, exist_ok=True)
    (app.home.workspace / "note.md").write_text("hello")
    app.plugins.notify("event", event=turn_completed(1))
    assert not (app.home.workspace / ".git").exists() and "failed" not in caplog.text


@needs_git
def test_git_autocommit_through_the_daemon(home, fake, env):
    write_config(home, plugins={"paths": [str(PLUGINS)], "enabled": ["git_autocommit"]})
    git(home / "workspace", "init", "--quiet")
    fake.add(tool_use("write_file", {"path": "Lists/Groceries.md", "content": "- milk\n"}))
    fake.add(text("Added milk."))
    drop(home, "add milk", "m1")
    run_once(home, env)
    conversation = finals(home)[0]["conversation"]
    subject = git(home / "workspace", "log", "--format=%s").strip()
    assert subject == f"smarthole: conversation {conversation} turn 1"
    assert git(home / "workspace", "show", "--name-only", "--format=").split() == [
        "Lists/Groceries.md"
    ]
