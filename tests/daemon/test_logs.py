"""Logs that fit where they go: the journal's priorities, JSON lines, a rotated log file."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.daemon.logs import (
    JournalFormatter,
    JsonFormatter,
    log_context,
    on_journal,
    setup_logging,
)
from smarthole.testing import text
from tests.helpers import drop, write_config


@pytest.fixture
def restore_root_logging():
    """setup_logging configures the process's root logger; put it back after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
        if handler not in handlers:
            handler.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def record(level: int, message: str, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc else None
    return logging.LogRecord("smarthole.x", level, __file__, 1, message, (), exc_info)


@pytest.mark.parametrize(
    ("level", "prefix"),
    [
        (logging.CRITICAL, "<3>"),
        (logging.ERROR, "<3>"),
        (logging.WARNING, "<4>"),
        (logging.INFO, "<6>"),
        (logging.DEBUG, "<7>"),
    ],
)
def test_journal_lines_carry_the_syslog_priority_and_no_time(level, prefix):
    assert JournalFormatter().format(record(level, "hello")) == f"{prefix}smarthole.x: hello"


def test_every_line_of_a_traceback_keeps_the_priority():
    try:
        raise ValueError("bad")
    except ValueError as exc:
        lines = JournalFormatter().format(record(logging.ERROR, "failed", exc)).splitlines()
    assert len(lines) > 2 and all(line.startswith("<3>") for line in lines)


def test_json_lines_carry_the_work_they_are_about():
    plain = json.loads(JsonFormatter().format(record(logging.INFO, "idle")))
    assert set(plain) == {"time", "level", "logger", "message"}
    assert plain["level"] == "info" and plain["message"] == "idle"
    with log_context(message_id="m1", conversation="c1", turn=2):
        data = json.loads(JsonFormatter().format(record(logging.WARNING, "deferred")))
    assert data["message_id"] == "m1" and data["conversation"] == "c1" and data["turn"] == 2
    with log_context(message_id="m2", conversation=None):
        assert "conversation" not in json.loads(JsonFormatter().format(record(20, "x")))


def test_the_journal_is_recognised_by_stderrs_device_and_inode(tmp_path):
    with (tmp_path / "stream").open("w") as stream:
        info = os.fstat(stream.fileno())
        assert on_journal({"JOURNAL_STREAM": f"{info.st_dev}:{info.st_ino}"}, stream)
        assert not on_journal({"JOURNAL_STREAM": "1:2"}, stream)  # a shell a service spawned
        assert not on_journal({}, stream)


def test_the_log_file_is_reopened_after_logrotate_moves_it(tmp_path, restore_root_logging):
    log_file = tmp_path / "smarthole.log"
    with (tmp_path / "stderr").open("w") as stderr:
        setup_logging(level="info", fmt="text", log_file=log_file, env={}, stream=stderr)
        logging.getLogger("smarthole.test").info("before the rotation")
        log_file.rename(tmp_path / "smarthole.log.1")  # what logrotate does
        logging.getLogger("smarthole.test").info("after the rotation")
    assert "before the rotation" in (tmp_path / "smarthole.log.1").read_text()
    assert "after the rotation" in log_file.read_text()
    assert "before" not in log_file.read_text()


# -- `smarthole run`, as a subprocess and in this process ----------------------------------


def run_once(home: Path, env: dict[str, str], *args: str) -> list[str]:
    """``smarthole run --once`` with stderr in a file; the lines it logged."""
    stderr_path = home.parent / "stderr.log"
    with stderr_path.open("w") as stderr:
        info = os.fstat(stderr.fileno())
        env = {**env, "JOURNAL_STREAM": f"{info.st_dev}:{info.st_ino}"}
        done = subprocess.run(
            [sys.executable, "-m", "smarthole", "run", "--once", "--home", str(home), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            timeout=60,
        )
    assert done.returncode == 0, stderr_path.read_text()
    return stderr_path.read_text().splitlines()


@pytest.fixture
def run_here(home: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """``run_here(*args)``: ``smarthole run --once`` through ``main`` in this process, stderr a
    file that ``$JOURNAL_STREAM`` names (as systemd connects it); the lines it logged."""
    opened = []

    def run(*args: str) -> list[str]:
        stderr_path = home.parent / f"stderr-{len(opened)}.log"
        stderr = stderr_path.open("w")
        opened.append(stderr)
        info = os.fstat(stderr.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{info.st_dev}:{info.st_ino}")
        monkeypatch.setattr(sys, "stderr", stderr)
        code = main(["run", "--once", "--home", str(home), *args])
        stderr.flush()
        assert code == 0, stderr_path.read_text()
        return stderr_path.read_text().splitlines()

    yield run
    for stderr in opened:
        stderr.close()


def test_under_systemd_the_journal_format_is_the_default(home, env):
    """End to end, as its own process: stderr is the journal, so the lines carry priorities."""
    lines = run_once(home, env)
    assert lines and all(line[:3] in ("<3>", "<4>", "<6>", "<7>") for line in lines), lines
    assert any(line.startswith("<6>smarthole") and "is watching" in line for line in lines)


def test_json_format_wins_over_the_journal(home, fake, run_here):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    lines = run_here("--log-format", "json", "--log-level", "debug")
    records = [json.loads(line) for line in lines]
    assert any(r["message"].startswith("smarthole is watching") for r in records)
    assert {"time", "level", "logger", "message"} <= set(records[0])
    about_m1 = [r for r in records if r.get("message_id") == "m1"]
    assert about_m1 and about_m1[-1]["message"] == "message m1: done"


@pytest.mark.parametrize(
    ("config_level", "args", "info_shown", "debug_shown"),
    [
        ("info", (), True, False),
        ("warning", (), False, False),
        ("debug", (), True, True),
        ("warning", ("--log-level", "debug"), True, True),  # the command line wins
    ],
)
def test_log_level_comes_from_the_config_unless_given(
    home, fake, run_here, config_level, args, info_shown, debug_shown
):
    write_config(home, daemon={"log_level": config_level})
    fake.default = text("ok")
    drop(home, "hello", "m1")  # a turn logs at debug level
    lines = run_here("--log-format", "journal", *args)
    assert any(line.startswith("<6>") for line in lines) == info_shown, lines
    assert any(line.startswith("<7>") for line in lines) == debug_shown, lines


def test_log_file_gets_the_lines_too(home, tmp_path, run_here):
    log_file = tmp_path / "daemon.log"
    run_here("--log-file", str(log_file))
    assert "is watching" in log_file.read_text()
