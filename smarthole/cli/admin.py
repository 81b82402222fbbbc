"""Operating a home from outside the daemon: status, retry, and waking the daemon.

These work whether or not a daemon is running: they read and write the store (SQLite takes
care of the concurrency) and move files in and out of ``failed/``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from typing import TYPE_CHECKING, Any

from ..db.records import unique_match
from ..db.states import MessageStatus
from ..db.store import Store
from ..formats import iso
from ..fsutil import move_durably, unique_path
from ..home import Home
from ..teams.control import running_tasks
from .common import daemon_pid
from .health import health_fields, stranded_claims
from .spending import budget_report
from .usage import usage_today

if TYPE_CHECKING:
    from ..attachments import Attachment
    from ..daemon.runtime import Runtime
    from ..db.ledger import Ledger, LedgerEntry

logger = logging.getLogger(__name__)


def wake_daemon(home: Home) -> None:
    """Nudge a running daemon to look at its queue now (see ``pipeline.watch.wake_daemon``)."""
    from ..pipeline.watch import wake_daemon as wake

    wake(home.inbox)


def status_report(root: Runtime) -> dict[str, Any]:
    home, store, ledger = root.home, root.store, root.ledger
    pid = daemon_pid(home)
    report: dict[str, Any] = {"running": pid is not None, "pid": pid or None}
    for status in (MessageStatus.QUEUED, MessageStatus.IN_PROGRESS, MessageStatus.DEFERRED):
        report[status.value] = [_entry(e) for e in ledger.by_status(status)]
    approving = {a.message_id: a for a in root.approvals.waiting()}
    for item in report[MessageStatus.DEFERRED.value]:  # not a retry: it waits for the person
        if item["id"] in approving:
            approval = approving[item["id"]]
            item["approval"] = {
                "id": approval.id,
                "tool": approval.tool,
                "expires": iso(approval.expires_at),
            }
    from ..pipeline.stranded import read_stranded

    report["stranded"] = read_stranded(home)
    # Checked against the folder itself: the daemon cannot rewrite its report on a full disk.
    report["stranded"] = stranded_claims(home, store, ledger, report)
    report["duplicates_skipped"] = ledger.duplicates_skipped()
    report["failed"] = _failed(home, ledger)
    report["waiting"] = [
        {
            "conversation": q.conversation_id,
            "channel": _channel(store, q.conversation_id),
            "question": q.question,
            "asked_at": iso(q.created_at),
            "message_id": q.original_message_id,
        }
        for q in root.pending.all()
    ]
    report["approvals_waiting"] = root.approvals.count_waiting()
    report["tasks"] = running_tasks(root.tasks)
    report["inbox_waiting"] = inbox_waiting(home)
    report["config_error"] = config_error(home)
    report["warnings"] = home_warnings(home)
    report["desktop"] = desktop_bridge(home, store, running=pid is not None)
    report["channels"] = channels(store, running=pid is not None)
    report["mcp"] = mcp_servers(store, running=pid is not None)
    report["web"] = web_view(home)
    report["usage"] = usage_today(root)
    report["budget"] = budget_report(root)
    report["next_schedule"] = next_schedule(root)
    if report["config_error"] is None:  # each channel's busy policy (pipeline.busy)
        busy = root.config.channels
        report["busy"] = {
            "policy": busy.busy.value,
            "channels": {name: policy.value for name, policy in busy.channels.items()},
        }
    report.update(health_fields(home, report, store.clock()))  # version, uptime, ready, ...
    return report


def next_schedule(root: Runtime) -> dict[str, Any] | None:
    """The schedule that fires next, and when (``None``: none is active)."""
    from ..db.states import ScheduleState

    active = [
        s for s in root.schedules.all() if s.state is ScheduleState.ACTIVE and s.next_at is not None
    ]
    if not active:
        return None
    first = min(active, key=lambda s: s.next_at or s.created_at)
    assert first.next_at is not None
    return {"id": first.id, "name": first.spec.name, "at": iso(first.next_at)}


def inbox_waiting(home: Home) -> int:
    """How many message files wait in ``inbox/`` for a daemon to claim them.

    Counted by the inbox's own rule: dotfiles, temp names and folders are not messages.
    """
    from ..pipeline.watch import is_candidate

    try:
        with os.scandir(home.inbox) as entries:
            return sum(
                1
                for entry in entries
                if is_candidate(entry.name) and not entry.is_dir(follow_symlinks=False)
            )
    except FileNotFoundError:
        return 0


def config_error(home: Home) -> str | None:
    """Why ``config.toml`` on disk does not load (the line ``run`` would fail with), or None."""
    from ..config import load_config
    from ..errors import ConfigError

    try:
        load_config(home)
    except ConfigError as exc:
        return str(exc)
    return None


def web_view(home: Home) -> dict[str, Any]:
    """``[web]``: whether ``smarthole run`` serves the view, and its URL (never the token)."""
    from ..config import WebViewSettings, load_config
    from ..errors import ConfigError
    from ..web.settings import base_url

    try:
        settings = load_config(home).web
    except ConfigError:  # status must still work; config_error says why
        settings = WebViewSettings()
    url = base_url(settings.host, settings.port) if settings.enabled else None
    return {"enabled": settings.enabled, "url": url}


def desktop_bridge(home: Home, store: Store, *, running: bool) -> dict[str, Any]:
    """The SmartHole desktop bridge: state, URL, name, last error, notifications waiting."""
    from ..builtins.desktop.records import bridge_report
    from ..config import DesktopSettings, load_config
    from ..errors import ConfigError

    try:
        settings = load_config(home).desktop
    except ConfigError as exc:  # status must still work; the daemon will refuse to start
        report = bridge_report(store, enabled=False, running=running, **_where(DesktopSettings()))
        return {**report, "state": "error", "last_error": str(exc)}
    return bridge_report(store, enabled=settings.enabled, running=running, **_where(settings))


def channels(store: Store, *, running: bool) -> list[dict[str, Any]]:
    """Each channel a daemon started (``smarthole.channels``): state, errors, waiting."""
    from ..channels.report import channel_reports

    return channel_reports(store, running=running)


def _where(settings: Any) -> dict[str, str]:
    return {"url": settings.url, "name": settings.name}


def mcp_servers(store: Store, *, running: bool) -> list[dict[str, Any]]:
    """Each MCP server's state as the daemon recorded it; without a daemon, all stopped."""
    from ..mcpservers import ServerState, recorded_views

    views = recorded_views(store.plugin_data("mcp"))
    if not running:  # a daemon killed with -9 could not record that its servers stopped
        off, gone = ServerState.DISABLED, ServerState.STOPPED
        views = [{**v, "state": off if v["state"] == off else gone} for v in views]
    return [{k: v for k, v in view.items() if k != "tools"} for view in views]


def home_warnings(home: Home) -> list[str]:
    """What about the home's permissions puts the user's conversations at risk."""
    warnings = []
    for folder in (home.root, home.inbox, home.state):
        try:
            mode = stat.S_IMODE(folder.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            who = "anyone" if mode & stat.S_IWOTH else "its group"
            warnings.append(
                f"{folder} can be written by {who} (mode {mode:o}): others could drop "
                f"messages or swap files; run: chmod go-w {folder}"
            )
    return warnings


def _entry(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "channel": entry.channel,
        "conversation": entry.conversation_id,
        "turn": entry.turn,
        "attempts": entry.attempts,
        "next_attempt_at": iso(entry.next_attempt_at) if entry.next_attempt_at else None,
        "last_error": entry.last_error,
        "received_at": iso(entry.received_at),
        "source_name": entry.message.source_name,
    }


def _failed(home: Home, ledger: Ledger) -> list[dict[str, Any]]:
    """Dead messages from the ledger, plus files set aside as unusable (no ledger row)."""
    items = []
    seen: set[str] = set()
    for entry in ledger.by_status(MessageStatus.DEAD):
        path = str(entry.failed_path) if entry.failed_path else None
        seen.add(path or "")
        items.append({**_entry(entry), "file": path, "error": entry.last_error})
    if home.failed.exists():
        for error_file in sorted(home.failed.glob("*.error.txt")):
            original = error_file.with_name(error_file.name.removesuffix(".error.txt"))
            if str(original) in seen or not original.exists():
                continue
            reason = error_file.read_text(encoding="utf-8", errors="replace").splitlines()
            items.append({"id": None, "file": str(original), "error": reason[0] if reason else ""})
    return items


def _channel(store: Store, conversation_id: str) -> str | None:
    conversation = store.conversation(conversation_id)
    return conversation.channel if conversation else None


def retry(root: Runtime, wanted: list[str] | None) -> list[tuple[str, str]]:
    """Deferred messages become due now; dead ones go back into the inbox, attempts reset.

    ``wanted`` holds ids or unique prefixes; None means every deferred and dead message.
    Returns ``(message id, what was done)`` pairs.
    """
    home, ledger = root.home, root.ledger
    if wanted is None:
        entries = ledger.by_status(MessageStatus.DEFERRED, MessageStatus.DEAD)
    else:
        entries = [_resolve(ledger, w) for w in wanted]
    done = []
    for entry in entries:
        if entry.status is MessageStatus.DEFERRED:
            ledger.make_due([entry.id])
            done.append((entry.id, "due now"))
        elif entry.status is MessageStatus.DEAD:
            done.append((entry.id, _redrive(home, ledger, entry)))
        else:
            done.append((entry.id, f"not retried: it is {entry.status}"))
    wake_daemon(home)
    return done


def _resolve(ledger: Ledger, wanted: str) -> LedgerEntry:
    return unique_match(
        wanted, ledger.get(wanted), ledger.with_prefix(wanted), "message", lambda e: e.id
    )


def _redrive(home: Home, ledger: Ledger, entry: LedgerEntry) -> str:
    """Move a dead message's file back into the inbox; claiming it requeues the message."""
    from ..pipeline.inbox import drop_message

    ledger.set_status(entry.id, MessageStatus.REDRIVE)
    source = entry.failed_path
    if source is not None and source.exists():
        home.inbox.mkdir(parents=True, exist_ok=True)
        target = unique_path(home.inbox, entry.message.source_name)
        move_durably(source, target)
        with contextlib.suppress(FileNotFoundError):
            source.with_name(source.name + ".error.txt").unlink()
        return f"moved back to {target}"
    # The file is gone from failed/ (someone cleaned up): write the message again, with its
    # attachments from their blobs (a folder message).
    message = entry.message
    fields: dict[str, Any] = {
        "channel": message.channel,
        "conversation": message.conversation,
        "metadata": message.metadata,
    }
    files = _attachment_files(home, message.attachments)
    if files:
        from ..pipeline.incoming import drop_folder_message

        path = drop_folder_message(home.inbox, message.text, files, message_id=message.id, **fields)
    else:
        path = drop_message(home.inbox, message.text, message_id=message.id, **fields)
    return f"re-created as {path}"


def _attachment_files(home: Home, attachments: tuple[Attachment, ...]) -> list[tuple[str, bytes]]:
    """Each attachment's name and bytes from the blob store; none if one is gone."""
    from ..attachments import BlobStore

    blobs = BlobStore(home.blobs)
    try:
        return [(a.name, blobs.read(a.sha256)) for a in attachments]
    except FileNotFoundError:
        return []
