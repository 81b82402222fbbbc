"""Health you can monitor: the daemon's own state in ``status --json``, and ``status --check``.

The daemon writes ``.smarthole/daemon.json`` (see ``smarthole.daemon.state``); this module
reads it, believing it only while the home's lock is held by the pid it names, and adds the
numbers a monitor needs to what ``status`` already reports. ``--check`` turns them into one
line per problem and exit status 1, for cron, monitoring and container health checks.

What the daemon cannot say when the home's disk is full (``daemon.json`` and ``stranded.json``
cannot be rewritten) is worked out here from the folders and the database: the stranded claims
from ``.smarthole/claimed/`` and the ledger, and whether ``daemon.json`` is stale.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..formats import display_name, iso, parse_time
from ..home import Home

if TYPE_CHECKING:
    from ..db.ledger import Ledger
    from ..db.store import Store

UNANSWERED = ("queued", "in_progress")  # waiting for a turn now, not scheduled for later


def health_fields(home: Home, report: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The keys ``status --json`` adds for monitoring, computed from ``report``."""
    from ..daemon.state import read_state

    found = read_state(home, report["pid"])
    state = found or {}
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
        # what a reload read but only a restart applies; kept until the daemon restarts
        "restart_needed": list(state.get("restart_needed") or []),
        "queue": {key: len(report[key]) for key in ("queued", "in_progress", "deferred")},
        "oldest_queued_age_seconds": round(oldest, 1) if oldest is not None else None,
        "deferred_count": len(report["deferred"]),
        "dead_count": len(dead),
        "stranded_count": len(report["stranded"]),
        "last_error": {"message": error, "at": state.get("last_error_at")} if error else None,
        "state_file": state_file(home, found, now) if report["running"] else None,
        "store_files_deleted": deleted_store_files(home, report["pid"])
        if report["running"]
        else [],
    }


def deleted_store_files(home: Home, pid: int | None) -> list[str]:
    """The store files (database, WAL, shared memory) that the running daemon ``pid`` still
    holds open though their names were removed: what it commits into them no other process
    sees, and a kill -9 loses. Empty when none are, or where ``/proc`` cannot tell."""
    if pid is None:
        return []
    import os

    database = str(home.database)
    found = []
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return []
    for fd in descriptors:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        name, deleted = target.removesuffix(" (deleted)"), target.endswith(" (deleted)")
        if deleted and name in (database, database + "-wal", database + "-shm"):
            found.append(name)
    return sorted(set(found))


def state_file(home: Home, state: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
    """When the running daemon last wrote ``daemon.json``, and whether that is too long ago.

    ``state`` is what it wrote, or None if it has written nothing since it took the lock (the
    lock file's time tells since when).
    """
    from ..daemon.state import STALE_AFTER_SECONDS

    written = state.get("written_at") if state else None
    if written:
        since: datetime | None = parse_time(written)
    elif state is None:
        since = _locked_at(home)
    else:
        since = None  # written by a daemon older than written_at: no telling
    age = (now - since).total_seconds() if since else None
    from ..daemon.state import DaemonStatus

    stopping = state is not None and state.get("status") == DaemonStatus.STOPPING
    return {
        "written_at": written,
        "age_seconds": round(age, 1) if written and age is not None else None,
        "stale": age is not None and age > STALE_AFTER_SECONDS and not stopping,
    }


def _locked_at(home: Home) -> datetime | None:
    """When the daemon holding the lock took it (it writes its pid into the file then)."""
    try:
        return datetime.fromtimestamp(home.lock_file.stat().st_mtime, UTC)
    except OSError:
        return None


def stranded_claims(
    home: Home, store: Store, ledger: Ledger, report: dict[str, Any]
) -> list[dict[str, Any]]:
    """The stranded claims as the claimed folder and the ledger show them.

    The daemon's own report (attempts, last error) is kept for each file still unowned; a
    file it could not report (``stranded.json`` is on the same full disk) is added once its
    claim is old enough not to be one the daemon is recording right now.
    """
    from ..pipeline.inbox import original_name
    from ..pipeline.stranded import CLAIM_SETTLE_SECONDS, unowned_claims

    unowned = {path.name: (path, since) for path, since in unowned_claims(home, ledger)}
    items = [item for item in report["stranded"] if Path(item["file"]).name in unowned]
    reported = {Path(item["file"]).name for item in items}
    settled = store.clock() - timedelta(seconds=CLAIM_SETTLE_SECONDS)
    for name, (path, since) in unowned.items():
        if name in reported or (report["running"] and since > settled):
            continue
        items.append(
            {
                "file": str(path),
                "source_name": display_name(original_name(path)),
                "attempts": None,  # unknown: the daemon did not (or could not) report it
                "last_error": None,
                "since": iso(since),
                "next_attempt_at": None,
            }
        )
    return items


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
    stale = state_file_warning(report)
    if stale:
        found.append(stale)
    gone = deleted_files_warning(report)
    if gone:
        found.append(gone)
    broken = config_warning(report)
    if broken:
        found.append(broken)
    age = report["oldest_queued_age_seconds"]
    if max_queue_age is not None and age is not None and age > max_queue_age:
        found.append(f"the oldest queued message has waited {age:.0f}s (limit {max_queue_age:g}s)")
    return found


def state_file_warning(report: dict[str, Any]) -> str | None:
    """Why the daemon's own figures may be old: ``daemon.json`` is stale; else None."""
    state = report.get("state_file")
    if not state or not state["stale"]:
        return None
    if state["age_seconds"] is None:
        when = f"has not been written by the running daemon (pid {report['pid']})"
    else:
        when = f"was last written {_ago(state['age_seconds'])}"
    return (
        f".smarthole/daemon.json {when}; the daemon may be unable to write to the home "
        "(a full disk?)"
    )


def deleted_files_warning(report: dict[str, Any]) -> str | None:
    """The daemon writes into store files whose names are gone: what to do; else None."""
    gone = report.get("store_files_deleted")
    if not gone:
        return None
    names = ", ".join(Path(name).name for name in gone)
    return (
        f"the daemon (pid {report['pid']}) writes into deleted store files ({names}): nothing "
        "it commits is seen by other processes, and a kill -9 would lose it; stop it cleanly "
        "(SIGTERM, not kill -9) and start it again"
    )


def config_warning(report: dict[str, Any]) -> str | None:
    """``config.toml`` no longer loads, so the next start would fail: why; else None."""
    error = report.get("config_error")
    return f"config.toml does not load, so the next start would fail: {error}" if error else None


def restart_warning(report: dict[str, Any]) -> str | None:
    """What the running daemon read on a reload but applies only after a restart; else None."""
    needed = report.get("restart_needed")
    if not needed:
        return None
    return "the daemon needs a restart to apply: " + ", ".join(needed)


def _ago(seconds: float) -> str:
    minutes = max(round(seconds / 60), 1)
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    return f"{minutes // 60} hours ago"


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
