"""`send` and `chat` never leave a person guessing: no daemon, retries, tools, Ctrl-C, start-up.

Where the terminal or a signal is the point, the command runs as a real subprocess: on a
pseudo-terminal for chat's prompt, with signals sent to it for Ctrl-C. Elsewhere it runs in
this process (``in_process``), and a daemon it talks to runs in a thread (``threads``).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smarthole.testing import drop as dropped_connection
from smarthole.testing import error, hold, text, tool_use
from tests.helpers import Command, db, finals, in_process, wait_for, write_config

QUIET = ("Traceback", "Exception ignored")  # what a quiet exit never prints


class Terminal:
    """``smarthole chat`` on a pseudo-terminal, as a person at a terminal runs it."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *args: str) -> None:
        self.err = tmp_path / f"err-{time.monotonic_ns()}"
        self.controller, terminal = os.openpty()
        with self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "smarthole", "chat", *args],
                env={**env, "TERM": "dumb"},
                stdin=terminal,
                stdout=terminal,
                stderr=err,
            )
        os.close(terminal)
        self.seen = bytearray()
        self.at = 0

    def expect(self, wanted: str, timeout: float = 30) -> str:
        """Read until ``wanted`` appears after the last match; the text read up to it."""
        start = self.at
        deadline = time.monotonic() + timeout
        while (found := self.seen.find(wanted.encode(), self.at)) < 0:
            left = deadline - time.monotonic()
            assert left > 0, f"no {wanted!r} in {bytes(self.seen[start:])!r}"
            if select.select([self.controller], [], [], left)[0]:
                self.seen += os.read(self.controller, 4096)
        self.at = found + len(wanted)
        return self.seen[start : self.at].decode()

    def type(self, keys: str) -> None:
        os.write(self.controller, keys.encode())

    def interrupt(self) -> None:
        """Ctrl-C at the prompt, once the line editor waits for a key.

        Python's readline notices a signal only when it interrupts the wait for a key; one that
        comes while a key is being handled waits for the next key. A person never types that
        fast, but a test does, so it first waits (on Linux) for the wait to begin.
        """
        wchan = Path(f"/proc/{self.process.pid}/wchan")
        if wchan.exists():
            wait_for(lambda: re.search("poll|select", wchan.read_text()), 10, "a wait for a key")
        self.process.send_signal(signal.SIGINT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        os.close(self.controller)


@pytest.fixture
def terminals(tmp_path, env):
    """Start chats on pseudo-terminals; any still running at the end are killed."""
    started: list[Terminal] = []

    def start(home: Path, *args: str) -> Terminal:
        terminal = Terminal(tmp_path, env, "--home", str(home), *args)
        started.append(terminal)
        return terminal

    yield start
    for terminal in started:
        terminal.close()


def plugin_folder(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / "probe.py").write_text(source)
    return folder


# -- send with no daemon (issue 33 item 2) ----------------------------------------------------


def test_send_with_no_daemon_says_the_message_waits_in_the_inbox(home, capsys):
    result = in_process(capsys, "send", "--home", str(home), "hello")
    assert result.returncode == 0, result.stderr
    message_id = result.stdout.strip()
    (path,) = (home / "inbox").glob("*.md")
    assert message_id in path.name
    assert result.stderr == (
        f"smarthole: no daemon is running for {home}; message {message_id} waits in the inbox "
        f"until one starts (`smarthole run --home {home}`)\n"
    )


def test_send_says_nothing_more_when_a_daemon_runs(home, fake, env, threads, capsys):
    fake.default = text("ok")
    threads(home, env)
    result = in_process(capsys, "send", "--home", str(home), "hello")
    assert result.returncode == 0 and result.stderr == ""


def test_send_wait_with_no_daemon_fails_at_once(home, capsys):
    result = in_process(capsys, "send", "--home", str(home), "--wait", "--timeout", "600", "hello")
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"smarthole: no daemon is running for {home}, so no reply can come")
    assert line.endswith(f"waits in the inbox until one starts (`smarthole run --home {home}`)")


# -- retries and key errors while a reply is awaited (item 1) ---------------------------------

RETRY_LINE = re.compile(
    r"the model could not be reached \(Connection error\); retrying in (\d+) s \(attempt 1\) "
    r"— smarthole status shows more"
)


def test_send_wait_says_when_the_model_is_tried_again(home, fake, env, threads, tmp_path, capsys):
    write_config(home, retry={"base_delay_seconds": 10, "max_delay_seconds": 10})
    fake.add(dropped_connection())
    fake.add(text("Back again."))
    threads(home, env)
    send = Command(tmp_path, env, "send", "--home", str(home), "--wait", "hello")
    try:
        shown = wait_for(lambda: RETRY_LINE.search(send.stderr()), 20, "the retry line")
        assert 0 < int(shown.group(1)) <= 10
        assert in_process(capsys, "retry", "--home", str(home), "--all").returncode == 0
        assert send.process.wait(timeout=30) == 0, send.stderr()
    finally:
        send.close()
    assert send.stdout() == "Back again.\n"
    assert len(RETRY_LINE.findall(send.stderr())) == 1


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "authentication_error"), (403, "permission_error")]
)
def test_a_rejected_key_is_a_final_error_at_once(home, fake, env, threads, capsys, status, kind):
    """Verifies what the daemon already did: a 401/403 is never retried."""
    fake.add(error(status, kind, "invalid x-api-key"))
    fake.default = text("never asked again")
    threads(home, env)
    result = in_process(capsys, "send", "--home", str(home), "--wait", "--timeout", "30", "hello")
    assert result.returncode == 1
    assert "check ANTHROPIC_API_KEY" in result.stdout
    assert "retrying" not in result.stderr
    assert len(fake.requests) == 1


def test_chat_says_each_retry_on_stderr(home, fake, environ, capsys):
    fake.add(dropped_connection())
    fake.add(text("Made it."))
    result = in_process(capsys, "chat", "--home", str(home), input="hello\n")
    assert result.returncode == 0, result.stderr
    assert "smarthole: Made it." in result.stdout
    assert (
        "the model could not be reached (Connection error); retrying now (attempt 1) — "
        "smarthole status shows more\n"
    ) in result.stderr


# -- chat shows the tools the agent calls (item 9) --------------------------------------------


def test_chat_shows_each_tool_as_it_is_called(home, fake, environ, capsys):
    fake.add(tool_use("list_files", {}))
    fake.add(tool_use("read_file", {"path": "notes.md"}))
    fake.add(text("Listed."))
    result = in_process(capsys, "chat", "--home", str(home), input="what is there?\n")
    assert result.returncode == 0, result.stderr
    assert "  · list_files\n  · read_file\nsmarthole: Listed." in result.stdout
    assert "\x1b" not in result.stdout, "dim only on a terminal"


def test_tool_lines_are_dim_on_a_terminal(home, fake, env, terminals):
    fake.add(tool_use("list_files", {}))
    fake.add(text("Listed."))
    chat = terminals(home)
    chat.expect("you> ")
    chat.type("what is there?\r")
    shown = chat.expect("smarthole: Listed.")
    assert "\x1b[2m  · list_files\x1b[0m\r\n" in shown
    chat.expect("you> ")
    chat.type("\x04")
    assert chat.process.wait(timeout=30) == 0


# -- Ctrl-C and Ctrl-D in chat (item 9) -------------------------------------------------------


def test_ctrl_c_at_the_prompt_clears_the_line_and_ctrl_d_quits(home, fake, env, terminals):
    fake.default = text("ok")
    chat = terminals(home)
    chat.expect("you> ")
    chat.type("half a thought")
    chat.expect("half a thought")
    chat.interrupt()
    chat.expect("(Ctrl-D quits)")
    chat.expect("you> ")
    chat.type("hello\r")
    chat.expect("smarthole: ok")
    chat.expect("you> ")
    chat.type("\x04")
    assert chat.process.wait(timeout=30) == 0
    assert [request.last_user_text for request in fake.requests] == ["hello"]


def test_ctrl_c_while_a_reply_is_awaited_leaves_the_turn_to_the_daemon(
    home, fake, env, threads, tmp_path
):
    release = threading.Event()
    fake.add(hold(release, text("Here it is.")))
    threads(home, env)
    chat = Command(tmp_path, env, "chat", "--home", str(home))
    try:
        chat.type("hello\n")
        fake.wait_for_requests(1, timeout=20)
        chat.interrupt()
        assert chat.process.wait(timeout=20) == 130
    finally:
        release.set()
        chat.close()
    (conversation,) = db(home).execute("SELECT id FROM conversations")
    err = chat.stderr()
    assert not any(word in err for word in QUIET), err
    assert "stopped waiting; the daemon goes on with the turn in the background" in err
    assert f"`smarthole show {conversation['id']}` shows its reply" in err
    wait_for(lambda: finals(home), 20, "the reply the daemon went on to write")
    assert finals(home)[0].text == "Here it is."


def test_a_chat_that_must_wait_for_its_own_daemon_says_so_and_a_second_ctrl_c_leaves(
    home, fake, env, tmp_path
):
    write_config(home, daemon={"shutdown_grace_seconds": 600})
    release = threading.Event()
    fake.add(hold(release, text("too late")))
    chat = Command(tmp_path, env, "chat", "--home", str(home))
    try:
        chat.type("hello\n")
        fake.wait_for_requests(1, timeout=30)
        chat.interrupt()
        wait_for(lambda: "gets up to 600 s to reach a safe point" in chat.stderr(), 20)
        chat.interrupt()
        assert chat.process.wait(timeout=20) == 130
    finally:
        release.set()
        chat.close()
    err = chat.stderr()
    assert not any(word in err for word in QUIET), err
    assert "stopped waiting; the daemon this chat ran stops with it" in err
    assert "Ctrl-C leaves at once" in err


# -- the daemon inside chat, and output around the prompt (item 10) ---------------------------


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon-running"])
def test_chat_says_when_it_runs_a_daemon_itself(home, fake, environ, threads, capsys, daemon):
    fake.default = text("ok")
    if daemon:
        threads(home, environ)
    result = in_process(capsys, "chat", "--home", str(home), input="hello\n")
    assert result.returncode == 0, result.stderr
    says = "No daemon is running for this home, so this chat runs one itself" in result.stdout
    assert says is not daemon


DELIVERED_LATER = """\
import threading
import time
from pathlib import Path

from smarthole import hookimpl

GO = Path({go!r})


@hookimpl
def deliver(outbox_item):
    said = outbox_item.text

    def later():
        deadline = time.monotonic() + 30
        while not GO.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        print(f"delivered: {{said}}")

    threading.Thread(target=later, daemon=True).start()
"""


def test_a_plugins_print_does_not_scribble_over_the_prompt(home, fake, env, terminals, tmp_path):
    go = tmp_path / "go"
    write_config(
        home, plugins={"paths": [str(plugin_folder(tmp_path, DELIVERED_LATER.format(go=str(go))))]}
    )
    fake.default = text("Noted.")
    chat = terminals(home)
    chat.expect("you> ")
    chat.type("hello\r")
    chat.expect("smarthole: Noted.")
    chat.expect("you> ")
    chat.type("a draft")
    chat.expect("a draft")
    go.touch()
    shown = chat.expect("you> a draft")
    assert shown.endswith("\r\x1b[Kdelivered: Noted.\r\nyou> a draft"), repr(shown)
    chat.type(" goes on\r")
    chat.expect("smarthole: Noted.")
    chat.expect("you> ")
    chat.type("\x04")
    assert chat.process.wait(timeout=30) == 0
    assert fake.requests[1].last_user_text == "a draft goes on"


# -- a first line at once, and a quiet Ctrl-C during start-up (item 3) ------------------------

SLOW_START = """\
import time
from pathlib import Path

from smarthole import hookimpl


@hookimpl
def startup(app):
    Path({started!r}).touch()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.01)
"""


@pytest.mark.parametrize("when", ["at-the-first-line", "while-its-daemon-starts"])
def test_ctrl_c_while_chat_starts_exits_130_quietly(home, env, tmp_path, when):
    started = tmp_path / "started"
    folder = plugin_folder(tmp_path, SLOW_START.format(started=str(started)))
    write_config(home, plugins={"paths": [str(folder)]})
    chat = Command(tmp_path, env, "chat", "--home", str(home))
    try:
        wait_for(lambda: chat.stdout().startswith("Starting the chat..."), 20, "the first line")
        if when == "while-its-daemon-starts":
            wait_for(started.exists, 30, "the daemon's start-up")
        chat.interrupt()
        assert chat.process.wait(timeout=20) == 130, chat.stderr()
    finally:
        chat.close()
    assert not any(word in chat.stderr() for word in QUIET), chat.stderr()


def test_ctrl_c_while_run_starts_exits_130_quietly(home, env, tmp_path):
    run = Command(tmp_path, env, "run", "--home", str(home))
    try:
        wait_for(lambda: run.stdout() == f"Starting smarthole for {home}...\n", 20, "first line")
        run.interrupt()
        assert run.process.wait(timeout=30) == 130
    finally:
        run.close()
    assert not any(word in run.stderr() for word in QUIET), run.stderr()
