"""Health you can monitor: the daemon's own state in ``status --json``, and ``status --check``.

The daemon writes ``.smarthole/daemon.json`` (see ``smarthole.daemon.state``); this module
reads it, believing it only while the home's lock is held by the pid it names, and adds the
numbers a monitor needs to what ``status`` already reports. ``--check`` turns them into one
line per problem and exit status 1, for cron, monitoring and container health checks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import __version__
from ..formats import parse_time
from ..home import Home

UNANSWERED = ("queued", "in_progress")  # waiting for a turn now, not scheduled for later


def health_fields(home: Home, report: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The keys ``status --json`` adds for monitoring, computed from ``report``."""
    from ..daemon.state import read_state

    state = read_state(home, report["pid"]) or {}
    started = state.get("started_at")
    received = [parse_time(e["received_at"]) for key in UNANSWERED for e in report[key]]
    oldest = (now - min(received)).total_seconds() if received else None
    dead = [item for item in report["failed"] if item.get("id")]
    error = state.get("last_error")
    return {
        "version": state.get("version", __version__),
        "uptime_seconds": round((now - parse_time(started)).total_seconds(), 1)
        if started
        else None,
        "ready": bool(state.get("ready")) and report["running"],
        "daemon_status": state.get("status") if report["running"] else None,
        "reloaded_at": state.get("reloaded_at"),
        "queue": {key: len(report[key]) for key in ("queued", "in_progress", "deferred")},
        "oldest_queued_age_seconds": round(oldest, 1) if oldest is not None else None,
        "deferred_count": len(report["deferred"]),
        "dead_count": len(dead),
        "stranded_count": len(report["stranded"]),
        "last_error": {"message": error, "at": state.get("last_error_at")} if error else None,
    }


def problems(report: dict[str, Any], max_queue_age: float | None) -> list[str]:
    """One line per problem ``status --check`` reports; empty when all is well."""
    found = []
    if not report["running"]:
        found.append("the daemon is not running")
    elif not report["ready"]:
        found.append("the daemon is running but not ready (starting, reloading or stopping)")
    if report["dead_count"]:
        found.append(
            f"{report['dead_count']} dead message(s) in failed/ (see `smarthole status`; "
            "`smarthole retry --all` tries them again)"
        )
    if report["stranded_count"]:
        found.append(f"{report['stranded_count']} stranded claim(s) in .smarthole/claimed/")
    age = report["oldest_queued_age_seconds"]
    if max_queue_age is not None and age is not None and age > max_queue_age:
        found.append(f"the oldest queued message has waited {age:.0f}s (limit {max_queue_age:g}s)")
    return found


def health_lines(report: dict[str, Any]) -> list[str]:
    """The lines ``status`` prints about the daemon itself."""
    if not report["running"]:
        return []
    lines = [f"version: {report['version']}"]
    if report["uptime_seconds"] is not None:
        lines.append(
            f"up {report['uptime_seconds']:.0f}s, {'ready' if report['ready'] else 'not ready'}"
            f" ({report['daemon_status'] or '?'})"
        )
    if report["last_error"]:
        error = report["last_error"]
        lines.append(f"last error ({error['at']}): {error['message']}")
    return lines
