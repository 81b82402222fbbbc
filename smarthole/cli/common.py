"""What the commands share: the home and its composition root, the clock, the start-up check,
labels.

A command gets the home's parts (the store, the event log, the ledger, conversations, ...) from
one place, :func:`rooted`: the same composition root the daemon uses
(``daemon.runtime.Runtime``), which builds each part on first use and is closed when the block
ends. Imported to build the parser, so everything heavy (the store, the model client) is
imported inside the functions that need it. Writing for the terminal and JSON is ``output``'s; the
names commands use are re-exported here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import ConfigError, ExitCode
from ..home import Home, holder
from .output import dumps, one_line, print_json

if TYPE_CHECKING:
    from ..config import Config
    from ..daemon.runtime import Runtime

__all__ = [
    "daemon_pid",
    "dumps",
    "home_of",
    "now",
    "one_line",
    "preflight",
    "print_json",
    "rooted",
    "run_command",
    "starting",
    "title_line",
]


def home_of(args: argparse.Namespace, *, must_exist: bool = True) -> Home:
    """The home named by ``--home`` (else ``$SMARTHOLE_HOME``, else ``~/SmartHole``)."""
    home = Home.resolve(args.home)
    if must_exist and not home.root.is_dir():
        raise ConfigError(
            f"no smarthole home at {home.root}; run `smarthole init --home {home.root}` first"
        )
    return home


@contextlib.contextmanager
def rooted(args: argparse.Namespace | Home) -> Iterator[Runtime]:
    """The composition root of the home named by ``args`` (or of that home), its parts built
    on first use; what it opened is closed when the block ends. ``root.home`` is the home."""
    from ..daemon.runtime import Runtime

    root = Runtime.for_home(args if isinstance(args, Home) else home_of(args))
    try:
        yield root
    finally:
        root.close()


def daemon_pid(home: Home) -> int | None:
    """The pid of the daemon holding ``home`` (-1 when it wrote none), or None when none runs."""
    return holder(home.lock_file)


def run_command(args: argparse.Namespace, home: Home) -> str:
    """The command that runs a daemon for ``home``, as the person would type it."""
    if args.home is None:
        return "smarthole run"
    return f"smarthole run --home {one_line(shlex.quote(str(home.root)))}"


@contextlib.contextmanager
def starting(first_line: str | None = None) -> Iterator[None]:
    """Start-up, where a Ctrl-C ends the process at once, quietly, with ``INTERRUPTED``.

    Start-up imports the SDK and builds its client, which takes seconds on a small machine. A
    ``KeyboardInterrupt`` raised in the middle of that leaves half-made objects whose
    finalizers print tracebacks at exit; so here a Ctrl-C ends the process instead, as a
    second Ctrl-C ends the daemon. Nothing is lost: stored writes are transactions, and a
    daemon still starting survives ending here as it survives a crash.

    ``first_line`` (what a command prints at once, to say it is starting) is printed once the
    handler is in place, so from the moment it shows, every Ctrl-C ends here. Printed before,
    a Ctrl-C could land in the imports and store opening that follow, where a
    ``KeyboardInterrupt`` turns into other errors (a failed rollback, a ``RuntimeError`` from a
    class being made) or, raised inside an ``exec`` of source (every dataclass's methods are
    made so), makes CPython kill the process with SIGINT at exit even though ``main`` caught it.
    """
    from ..daemon.signals import INTERRUPT_SIGNALS, capture_signals

    def leave(_received: object) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.write(2, b"\n")
        os._exit(ExitCode.INTERRUPTED)

    with capture_signals(leave, signals=INTERRUPT_SIGNALS, force_exit=False):
        if first_line is not None:
            print(first_line, flush=True)
        yield


def now() -> datetime:
    from ..formats import utc_now

    return utc_now()


def preflight(home: Home) -> Config:
    """Fail before anything starts if the config is bad or there is no API key."""
    with rooted(home) as root:
        root.client  # noqa: B018 -- made to be checked, and closed with the root
        return root.config


def title_line(title: str | None) -> str:
    """A conversation's title on one line, or the label of one that has none yet."""
    # Imported here: the prompts module brings the store, which building the parser must not.
    from ..agent.prompts import UNTITLED

    return one_line(title or UNTITLED)
