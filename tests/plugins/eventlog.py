"""An ``event`` hook that writes ``<id> <type>`` lines to ``<home>/events-seen.log``.

With a file ``<home>/hold-<type>`` present, the hook waits, after writing the line, until
that file is gone: a test can kill the daemon between the hook's call and its cursor's commit.
"""

from __future__ import annotations

import time
from pathlib import Path

from smarthole import hookimpl

_home: list[Path] = []


@hookimpl
def startup(app):
    _home[:] = [app.home.root]


@hookimpl
def event(event):
    (home,) = _home
    with (home / "events-seen.log").open("a") as log:
        log.write(f"{event.id} {event.type}\n")
    hold = home / f"hold-{event.type}"
    if hold.exists():
        (home / f"holding-{event.type}").write_text(str(event.id))
    deadline = time.monotonic() + 60
    while hold.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
