"""A deliver hook that stops the daemon between writing a final reply and releasing its claim.

With ``<home>/block-delivery`` present, delivering a final item writes
``<home>/delivering-<id>`` and waits for ``<home>/go-delivery``; the crash test kills the
daemon in that window.
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
def deliver(outbox_item):
    if _home is None or not outbox_item.final or not (_home / "block-delivery").exists():
        return
    (_home / f"delivering-{outbox_item.in_reply_to}").write_text(outbox_item.id)
    deadline = time.monotonic() + 60
    while not (_home / "go-delivery").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
