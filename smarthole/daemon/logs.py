"""Logging set-up for the CLI and the daemon: text, journal or JSON lines, and a log file.

- ``text``: a timestamp, the level, the logger and the message (a person at a terminal).
- ``journal``: no timestamp (the journal adds its own) and every line prefixed with its syslog
  priority, ``<3>`` error ... ``<7>`` debug, so ``journalctl -p`` filters by level. It is the
  default when stderr is the journal stream systemd set up (``$JOURNAL_STREAM`` names
  stderr's device and inode).
- ``json``: one object per line: time, level, logger, message, and the conversation, turn and
  message id of the work the line is about, when there is one.

``--log-file`` adds a ``WatchedFileHandler``: when logrotate moves the file away, the next line
reopens the path, so no ``copytruncate`` and no signal are needed.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

FORMATS = ("text", "journal", "json")
LEVELS = ("debug", "info", "warning", "error")
TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
JOURNAL_STREAM_ENV = "JOURNAL_STREAM"
NOISY = ("httpx2", "httpcore2", "anthropic")
CONTEXT_FIELDS = ("conversation", "turn", "message_id")

# The work a log line is about; set by the worker around one message.
_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "smarthole_log_context", default=None
)


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Lines logged inside the block carry ``fields`` (JSON format); None values are left out."""
    token = _context.set({k: v for k, v in fields.items() if v is not None})
    try:
        yield
    finally:
        _context.reset(token)


def syslog_priority(levelno: int) -> int:
    """The syslog priority of a logging level: 3 error (and worse), 4 warning, 6 info, 7 debug."""
    if levelno >= logging.ERROR:
        return 3
    if levelno >= logging.WARNING:
        return 4
    if levelno >= logging.INFO:
        return 6
    return 7


class JournalFormatter(logging.Formatter):
    """``<priority>logger: message``; every line of a traceback gets the same priority."""

    def __init__(self) -> None:
        super().__init__("%(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{syslog_priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines())


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        data.update(_context.get() or {})
        for key in CONTEXT_FIELDS:  # an explicit ``extra=`` wins over the worker's context
            if hasattr(record, key):
                data[key] = getattr(record, key)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def on_journal(env: Mapping[str, str], stream: TextIO) -> bool:
    """Whether ``stream`` is the journal stream systemd connected (``$JOURNAL_STREAM``).

    systemd's advice: compare the variable's ``device:inode`` with the stream's own, so a
    program started from a shell that a service spawned does not take the journal's format.
    """
    value = env.get(JOURNAL_STREAM_ENV, "")
    if not value:
        return False
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return value == f"{info.st_dev}:{info.st_ino}"


def formatter_for(fmt: str) -> logging.Formatter:
    if fmt == "json":
        return JsonFormatter()
    if fmt == "journal":
        return JournalFormatter()
    return logging.Formatter(TEXT_FORMAT)


def level_number(name: str) -> int:
    return int(getattr(logging, name.upper()))


def setup_logging(
    *,
    level: str,
    fmt: str | None = None,
    log_file: Path | None = None,
    verbose: bool = False,
    env: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> None:
    """Configure the root logger once, for the whole process (only ``main`` calls this).

    ``fmt`` None means journal when stderr is the journal, else text.
    """
    env = os.environ if env is None else env
    stream = sys.stderr if stream is None else stream
    if fmt is None:
        fmt = "journal" if on_journal(env, stream) else "text"
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    console = logging.StreamHandler(stream)
    console.setFormatter(formatter_for(fmt))
    root.addHandler(console)
    if log_file is not None:
        # A file has no journal around it: JSON stays JSON, anything else gets timestamps.
        # Imported only here: with pickle, 0.5 MiB that a daemon would keep for nothing.
        from logging.handlers import WatchedFileHandler

        handler = WatchedFileHandler(log_file, encoding="utf-8")
        handler.setFormatter(formatter_for("json" if fmt == "json" else "text"))
        root.addHandler(handler)
    set_level(level, verbose=verbose)


def set_level(level: str, *, verbose: bool = False) -> None:
    """Set the level (also on a reload); libraries stay quiet unless asked with -v."""
    logging.getLogger().setLevel(level_number(level))
    quiet = logging.DEBUG if verbose else logging.WARNING
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(quiet)
    # watchdog complains when events race its own shutdown; its events are only hints.
    logging.getLogger("watchdog").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
