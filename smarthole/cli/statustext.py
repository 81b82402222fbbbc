"""``smarthole status`` for people: the daemon, the queues, what waits for the person."""

from __future__ import annotations

from typing import Any

from ..formats import parse_time, utc_now
from .channellines import channel_lines
from .health import (
    config_warning,
    deleted_files_warning,
    health_lines,
    restart_warning,
    state_file_warning,
)
from .output import clock, one_line, short
from .render import server_lines


def status_text(report: dict[str, Any]) -> str:
    lines = [
        f"daemon: running (pid {report['pid']})" if report["running"] else "daemon: not running"
    ]
    lines += ["  " + line for line in health_lines(report)]
    stale = state_file_warning(report)
    if stale:
        lines.append(f"warning: {stale} — figures below come from the folders and the database")
    lines += [
        f"warning: {one_line(w)}"
        for w in (deleted_files_warning(report), config_warning(report), restart_warning(report))
        if w
    ]
    waiting = report.get("inbox_waiting")
    if waiting:
        files = f"{waiting} file{'s' if waiting != 1 else ''}"
        unclaimed = "" if report["running"] else " (no daemon is running)"
        lines.append(f"inbox: {files} waiting to be claimed{unclaimed}")
    deferred = report["deferred"]
    report = {
        **report,
        "deferred": [item for item in deferred if not item.get("approval")],
        "approving": [item for item in deferred if item.get("approval")],
    }
    for key, title in (
        ("queued", "queued"),
        ("in_progress", "in progress"),
        ("approving", "waiting for your approval"),
        ("deferred", "deferred (retried automatically)"),
        ("stranded", "stranded claims (retried automatically)"),
        ("failed", "failed"),
        ("waiting", "waiting for your reply"),
    ):
        items = report[key]
        if key in ("stranded", "approving") and not items:
            continue
        lines.append(f"{title}: {len(items)}")
        for item in items:
            lines.append("  " + _status_item(key, item))
    if report.get("approvals_waiting"):
        lines.append(
            f"tool calls waiting for your approval: {report['approvals_waiting']} "
            "(see smarthole approvals)"
        )
    if report["tasks"]:
        lines.append(f"team tasks running or interrupted: {len(report['tasks'])}")
        for task in report["tasks"]:
            lines.append(
                f"  {task['id']} {task['status']} agents={','.join(task['agents'])} "
                f"turns={task['turns_done']}/{task['max_turns']} conv={task['conversation'][:8]}"
            )
    if report.get("next_schedule"):
        upcoming = report["next_schedule"]
        at = clock(parse_time(upcoming["at"]), utc_now())
        lines.append(f"next schedule: {one_line(upcoming['name'] or upcoming['id'])} at {at}")
    if report["duplicates_skipped"]:
        lines.append(f"duplicates skipped: {report['duplicates_skipped']} (see smarthole events)")
    if report.get("mcp"):
        lines.append(f"MCP servers: {len(report['mcp'])}")
        lines += ["  " + line for line in server_lines(report["mcp"], tools=False)]
    lines += [f"warning: {warning}" for warning in report["warnings"]]
    lines += channel_lines(report)
    if report.get("web", {}).get("enabled"):
        lines.append(
            f"web view: {report['web']['url']} (smarthole run serves it; the link with"
            " its token is in the daemon's output)"
        )
    if "usage" in report:
        from .usage import usage_line

        lines.append(usage_line(report["usage"]))
    if "busy" in report:
        busy = report["busy"]
        own = "; ".join(f"{one_line(c)}: {p}" for c, p in busy["channels"].items())
        lines.append(f"busy policy: {busy['policy']} ({own or 'every channel'})")
    if "budget" in report:
        from .spending import budget_lines

        lines += budget_lines(report["budget"])
    return "\n".join(lines)


def _status_item(key: str, item: dict[str, Any]) -> str:
    if key == "waiting":
        where = f"{item['conversation']} [{one_line(item['channel'])}]"
        return f"{where} asked: {short(item['question'])}"
    if key == "stranded" and item["attempts"] is None:
        return (
            f"{short(item['source_name'], 200)} since={item['since']} (not reported by the daemon)"
        )
    if key == "stranded":
        return (
            f"{short(item['source_name'], 200)} attempts={item['attempts']} "
            f"next={item['next_attempt_at']} "
            f"last error: {short(item['last_error'], 70)}"
        )
    if key == "approving":
        approval = item["approval"]
        until = clock(parse_time(approval["expires"]), utc_now())
        return (
            f"{one_line(item['id'])} [{one_line(item['channel'])}] waiting for your approval of "
            f"{one_line(approval['tool'])} (until {until}; smarthole approvals)"
        )
    if key == "failed":
        return f"{short(item.get('id') or item['file'], 200)} — {short(item['error'] or '', 80)}"
    text = f"{one_line(item['id'])} [{one_line(item['channel'])}] attempts={item['attempts']}"
    if key == "deferred":
        text += f" next={item['next_attempt_at']} last error: {short(item['last_error'], 70)}"
    return text
