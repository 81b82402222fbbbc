"""The channels' part of ``smarthole status`` and the web view, read from their records.

Every channel a daemon started is listed in plugin data ``channels``; its own records say how
it stands. Readable from any process: the daemon writes, ``status`` and the web view read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import ChannelState
from .records import ChannelRecords

if TYPE_CHECKING:
    from ..db.store import Store

REGISTRY = "channels"
NOT_RUNNING = "the daemon is not running"
SHOWN = ("state", "since", "last_error")


def channel_reports(store: Store, *, running: bool) -> list[dict[str, Any]]:
    """Each channel's state, last error, deliveries waiting (and failing), and its own fields."""
    reports = []
    for name, _ in store.plugin_data(REGISTRY).items():
        records = ChannelRecords(store, name)
        status = records.status()
        owed = records.owed()
        state = status.get("state")
        if state not in set(ChannelState):
            state = ChannelState.CONNECTING
        report: dict[str, Any] = {
            "name": name,
            "state": str(state) if running else str(ChannelState.ERROR),
            "since": status.get("since") if running else None,
            "last_error": status.get("last_error") if running else NOT_RUNNING,
            "waiting": len(owed),
            "failing": sum(1 for d in owed if d.attempts),
            "last_send_error": next((d.last_error for d in owed if d.last_error), None),
        }
        report["details"] = {k: v for k, v in status.items() if k not in SHOWN}
        reports.append(report)
    return reports
