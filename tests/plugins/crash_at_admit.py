"""Kills the daemon (SIGKILL, itself) at one exact point: a message with attachments has its
blobs written and fsynced, and its ledger row is being written but not committed.

Active only while ``<home>/crash-at-admit`` exists, so the restarted daemon runs normally.
"""

from __future__ import annotations

import os
import signal

from smarthole import hookimpl


@hookimpl
def startup(app):
    from smarthole.db.ledger import Ledger

    marker = app.home.root / "crash-at-admit"
    admit = Ledger.admit

    def admit_or_die(self, message, **fields):
        if message.attachments and marker.exists():
            (app.home.root / "blobs-at-crash").write_text(
                "\n".join(a.sha256 for a in message.attachments)
            )
            os.kill(os.getpid(), signal.SIGKILL)
        return admit(self, message, **fields)

    Ledger.admit = admit_or_die
