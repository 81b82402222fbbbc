"""The CLI's dead ends: every command ends with one line and a meaningful exit status."""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.testing import hold, text
from tests.helpers import (
    Command,
    db,
    drop,
    finals,
    in_process,
    run_once,
    smarthole,
    wait_for,
    write_config,
)


def one_line(stderr: str) -> str:
    """The single line of ``stderr``; fails if there are more, or a traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# -- chat and resume cannot start (item 12) ---------------------------------------------------


def break_home(home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str) -> None:
    if how == "no-api-key":
        monkeypatch.delenv("ANTHROPIC_API_KEY")
    elif how == "bad-config":
        with (home / "config.toml").open("a") as config:
            config.write("[[[\n")
    else:
        folder = tmp_path / "bad-plugins"
        folder.mkdir()
        (folder / "bad.py").write_text(
            "from smarthole import hookimpl\n\n"
            "@hookimpl\ndef startup(app):\n    raise RuntimeError('boom')\n"
        )
        write_config(home, plugins={"paths": [str(folder)]})


@pytest.mark.parametrize("how", ["no-api-key", "bad-config", "bad-plugin"])
@pytest.mark.parametrize("command", ["chat", "resume"])
def test_chat_that_cannot_start_says_why_like_run(
    home, fake, environ, monkeypatch, capsys, tmp_path, how, command
):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, environ)
    conversation = finals(home)[0]["conversation"]
    break_home(home, monkeypatch, tmp_path, how)
    args = [command, "--home", str(home)] + ([conversation] if command == "resume" else [])
    started = time.monotonic()
    result = in_process(capsys, *args, input="hello again\n")
    took = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    expected = in_process(capsys, "run", "--home", str(home))
    assert expected.returncode == 2
    assert one_line(result.stderr) == one_line(expected.stderr)
    print(f"{command} with {how} exited in {took:.2f}s")


# -- send --wait to an unknown conversation (item 13) -----------------------------------------


def test_send_to_an_unknown_conversation_fails_at_once(home, capsys):
    result = in_process(
        capsys, "send", "--home", str(home), "--wait", "--timeout", "60", "--conversation", "zzzz",
        "hi",
    )  # fmt: skip
    assert result.returncode == 1
    assert one_line(result.stderr) == "smarthole: no conversation matches 'zzzz'"
    assert list((home / "inbox").iterdir()) == [], "nothing was sent"


def test_send_resolves_a_conversation_prefix(home, fake, env, capsys):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    conversation = finals(home)[0]["conversation"]
    result = in_process(
        capsys, "send", "--home", str(home), "--conversation", conversation[:6], "more"
    )
    assert result.returncode == 0, result.stderr
    (path,) = (home / "inbox").glob("*.md")
    assert f'conversation = "{conversation}"' in path.read_text()


# -- init on a file (item 14) -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["file", "inside-a-file"])
def test_init_on_a_file_is_one_line_and_exit_2(tmp_path, capsys, where):
    existing = tmp_path / "notes.txt"
    existing.write_text("not a folder")
    target = existing if where == "file" else existing / "home"
    result = in_process(capsys, "init", "--home", str(target))
    assert result.returncode == 2
    assert one_line(result.stderr).startswith("smarthole: cannot ")
    assert str(target) in result.stderr
    assert existing.read_text() == "not a folder"


# -- Ctrl-C exits 130 (item 15) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "ready"),
    [
        (["send", "--wait", "hi"], "waiting for the reply"),
        (["events", "--follow"], "msg=m1"),
        (["resume"], "Enter number to resume"),
        (["status", "--json"], None),
    ],
    ids=["send-wait", "events-follow", "resume-picker", "status-finished"],
)
def test_ctrl_c_exits_130(home, fake, env, tmp_path, threads, args, ready):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    release = threading.Event()
    if args[0] == "send":  # with no daemon, `send --wait` ends at once: it waits for this one
        fake.add(hold(release, text("too late")))
        threads(home, env)
    command = Command(tmp_path, env, *args, "--home", str(home))
    try:
        if ready is None:  # a command that finished is not interrupted
            assert command.process.wait(timeout=20) == 3
            return
        wait_for(lambda: ready in command.output(), 20, ready)
        command.process.send_signal(signal.SIGINT)
        assert command.process.wait(timeout=10) == 130, command.output()
        assert "Traceback" not in command.output()
    finally:
        release.set()
        command.close()


# -- status (item 16) -------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_status_exits_3_when_the_daemon_is_not_running(home, capsys, extra):
    assert main(["status", "--home", str(home), *extra]) == 3
    out = capsys.readouterr().out
    if extra:
        assert json.loads(out)["running"] is False
    else:
        assert out.startswith("daemon: not running")


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_status_exits_0_when_the_daemon_is_running(home, live_daemon, capsys, extra):
    assert main(["status", "--home", str(home), *extra]) == 0
    out = capsys.readouterr().out
    if extra:
        assert json.loads(out)["running"] is True
    else:
        assert out.startswith("daemon: running")


# -- chat: a reply that does not come, line editing and history (item 17) ---------------------


def test_a_chat_that_times_out_says_so_keeps_the_conversation_and_exits_1(home, fake, env):
    write_config(home, daemon={"shutdown_grace_seconds": 0.2})
    release = threading.Event()
    fake.add(hold(release, text("too late")))
    try:
        result = smarthole(
            "chat", "--home", str(home), "--timeout", "1", env=env, input="hello\nmore\n"
        )
    finally:
        release.set()
    assert result.returncode == 1, result.stderr
    assert "(no reply within 1s; the conversation is kept" in result.stdout
    (row,) = db(home).execute("SELECT id, title, ended_at FROM conversations")
    assert row["ended_at"] is None and row["title"] is None
    assert f"continue it with `smarthole chat --conversation {row['id']}`" in result.stderr
    assert "more" not in [r.last_user_text for r in fake.requests], "the chat stopped"
    fake.default = text("Here it is.")
    run_once(home, env)
    (reply,) = finals(home)
    assert (reply.text, reply["conversation"]) == ("Here it is.", row["id"])


def read_until(fd: int, wanted: str, seen: bytearray, after: int = 0, timeout: float = 20) -> int:
    """Read the pseudo-terminal into ``seen`` until ``wanted`` appears past ``after``.

    Returns where the match ends, for the next call: the second prompt must not be mistaken
    for the first, or input is typed while the terminal is between modes and may be lost.
    """
    deadline = time.monotonic() + timeout
    while (found := seen.find(wanted.encode(), after)) < 0:
        left = deadline - time.monotonic()
        assert left > 0, f"no {wanted!r} in {bytes(seen)!r}"
        if select.select([fd], [], [], left)[0]:
            seen += os.read(fd, 4096)
    return found + len(wanted)


def test_an_interactive_chat_has_line_editing_and_a_private_history(home, fake, env):
    fake.default = text("Noted.")
    controller, terminal = os.openpty()
    chat = subprocess.Popen(
        [sys.executable, "-m", "smarthole", "chat", "--home", str(home)],
        env={**env, "TERM": "dumb"},
        stdin=terminal,
        stdout=terminal,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.umask(0o022),
    )
    os.close(terminal)
    seen = bytearray()
    try:
        at = read_until(controller, "you> ", seen)
        os.write(controller, b"milk\x01remember \r")  # Ctrl-A: to the start of the line
        at = read_until(controller, "smarthole: Noted.", seen, at)
        read_until(controller, "you> ", seen, at)
        os.write(controller, b"\x04")  # Ctrl-D on an empty line: end of input
        assert chat.wait(timeout=20) == 0, chat.stderr.read() if chat.stderr else ""
    finally:
        if chat.poll() is None:
            chat.kill()
        os.close(controller)
    assert "remember milk" in fake.requests[0].last_user_text
    history = home / ".smarthole" / "chat_history"
    assert history.stat().st_mode & 0o777 == 0o600
    assert "milk" in history.read_text()


# -- a reader that leaves early: `smarthole events | head` --------------------------------------


@pytest.mark.parametrize("command", ["events", "conversations", "show", "export"])
def test_output_whose_reader_left_ends_quietly_with_141(home, fake, env, command):
    """As `git log | head`: no traceback, and the status a shell gives a command cut off by
    SIGPIPE. ``events`` flushes each line itself; the others fail at the flush after them."""
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env)
    args = [command, "--home", str(home)]
    if command in ("show", "export"):
        args.append(finals(home)[0]["conversation"])
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        result = subprocess.run(
            [sys.executable, "-m", "smarthole", *args],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (141, "")


def test_a_broken_pipe_that_is_not_stdout_is_not_hidden(home, monkeypatch, capsys):
    """stdout here is not a pipe, so the error came from somewhere else: a bug to show."""

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    import smarthole.cli as cli

    monkeypatch.setattr(
        cli, "parse", lambda argv: argparse.Namespace(command="tasks", verbose=0, handler=broken)
    )
    with pytest.raises(BrokenPipeError):
        main(["tasks", "--home", str(home)])


def test_output_the_system_refuses_is_one_line_and_exit_1(home, env):
    """A full disk (/dev/full) under `smarthole conversations > file`: the reason, no traceback."""
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "smarthole", "conversations", "--home", str(home)],
            env=env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert one_line(result.stderr) == "smarthole: [Errno 28] No space left on device"


@pytest.mark.parametrize("verbose", [0, 1])
def test_an_os_error_is_one_line_unless_verbose(home, monkeypatch, capsys, verbose):
    def refused(args):
        raise PermissionError(13, "Permission denied", str(home / "inbox"))

    import smarthole.cli as cli

    namespace = argparse.Namespace(command="tasks", verbose=verbose, handler=refused)
    monkeypatch.setattr(cli, "parse", lambda argv: namespace)
    if verbose:
        with pytest.raises(PermissionError):  # -v: the traceback, to see where
            main(["tasks"])
        return
    assert main(["tasks"]) == 1
    inbox = home / "inbox"
    assert capsys.readouterr().err == f"smarthole: [Errno 13] Permission denied: '{inbox}'\n"


# -- numbers on the command line: a count or a time that cannot mean anything ----------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["conversations", "--limit", "0"], "argument --limit: must be at least 1, not 0"),
        (["events", "--limit", "-1"], "argument --limit: must be at least 0, not -1"),
        (["events", "--limit", "ten"], "argument --limit: invalid int value: 'ten'"),
        (["send", "--wait", "--timeout", "-5", "hi"], "argument --timeout: must be more than 0"),
        (["chat", "--timeout", "0"], "argument --timeout: must be more than 0, not 0"),
        (["status", "--max-queue-age", "-1"], "argument --max-queue-age: must be at least 0"),
    ],
)
def test_a_number_out_of_range_is_a_usage_error(home, capsys, args, message):
    with pytest.raises(SystemExit) as exited:
        main([*args, "--home", str(home)])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_numbers_in_range_are_taken(home, capsys):
    assert main(["events", "--limit", "0", "--home", str(home)]) == 0
    assert main(["conversations", "--limit", "1", "--home", str(home)]) == 0
    assert capsys.readouterr().out == "No conversations yet.\n"


def test_a_ctrl_c_while_the_cli_is_still_loading_exits_130_quietly(monkeypatch, capsys):
    """The ``smarthole`` command guards the import of the CLI itself: Ctrl-C can land there."""
    import importlib.abc

    from smarthole.__main__ import run

    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "smarthole.cli":
                raise KeyboardInterrupt
            return None

    for name in [m for m in sys.modules if m == "smarthole.cli" or m.startswith("smarthole.cli.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    assert run() == 130
    assert capsys.readouterr().err == "\n"
