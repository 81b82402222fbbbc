"""A hook that stops a turn between its start and its tool loop (after the store was read).

With ``<home>/block-resume`` present, building a turn's system prompt writes
``<home>/resuming-<message id>`` and waits for ``<home>/go-resume``: the approval crash test
kills the daemon there, after an answer's decision is stored and before the call runs.
"""

from __future__ import annotations

import time

from smarthole import hookimpl

_home = None


@hookimpl
def startup(app):
    global _home
    _home = app.home.root


@hookimpl
def extend_system_prompt(conversation, message):
    if _home is None or not (_home / "block-resume").exists():
        return None
    (_home / f"resuming-{message.id}").write_text(conversation.id)
    deadline = time.monotonic() + 60
    while not (_home / "go-resume").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return None
