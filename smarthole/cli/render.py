"""Text the CLI shows people: relative times, conversation lists, transcripts, events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..conversations import ConversationView
from ..db.events import Event
from ..db.outbox import OutboxItem
from ..db.records import Conversation, StoredMessage, Turn
from ..db.states import ConversationStatus
from .common import title_line
from .health import health_lines, state_file_warning
from .output import body, one_line, short


def relative_time(then: datetime, now: datetime) -> str:
    """ "just now", "5 minutes ago", "2 hours ago", "yesterday", "3 days ago"..."""
    seconds = (now - then).total_seconds()
    if seconds < 60:
        return "just now"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    hours = minutes // 60
    if hours < 24:
        return f"{hours} hour{'s' if hours != 1 else ''} ago"
    local_then, local_now = then.astimezone(), now.astimezone()
    days = (local_now.date() - local_then.date()).days
    if days <= 1:
        return "yesterday"
    if days < 30:
        return f"{days} days ago"
    return f"on {local_then:%d %b %Y}"


def local(moment: datetime) -> str:
    return f"{moment.astimezone():%Y-%m-%d %H:%M}"


def conversation_line(number: int, view: ConversationView, now: datetime) -> str:
    c = view.conversation
    status: str = view.status
    if view.status is ConversationStatus.DEFERRED and view.deferred_until is not None:
        status = f"deferred until {view.deferred_until.astimezone():%H:%M}"
    turns = f"{c.turns} turn{'s' if c.turns != 1 else ''}"
    return (
        f"{number}. [{one_line(c.channel)}] {one_line(view.title)}"
        f" ({relative_time(c.updated_at, now)})"
        f" · {status} · {turns} · {c.id}"
    )


def conversation_list(views: list[ConversationView], now: datetime) -> str:
    return "\n".join(conversation_line(i, v, now) for i, v in enumerate(views, start=1))


def transcript(
    conversation: Conversation,
    turns: list[Turn],
    messages: list[StoredMessage],
    outbox: list[OutboxItem],
) -> str:
    """Turns with times, the user's and the agent's words, questions, tools used, errors."""
    lines = [
        title_line(conversation.title),
        f"conversation {conversation.id} · channel {conversation.channel} · "
        f"started {local(conversation.created_at)}",
    ]
    if conversation.ended_at:
        reason = one_line(conversation.end_reason or "ended")
        lines.append(f"ended {local(conversation.ended_at)} ({reason})")
    if conversation.summary:
        lines.append(f"summary: {one_line(conversation.summary)}")
    by_turn: dict[int, list[StoredMessage]] = {}
    for message in messages:
        by_turn.setdefault(message.turn, []).append(message)
    replies: dict[int, list[OutboxItem]] = {}
    for item in outbox:
        if item.turn is not None and item.final:
            replies.setdefault(item.turn, []).append(item)
    for turn in turns:
        lines += ["", f"── turn {turn.number} · {local(turn.started_at)} · {turn.status}"]
        lines += _turn_lines(by_turn.get(turn.number, []), replies.get(turn.number, []))
        if turn.note:
            lines.append(f"   note: {one_line(turn.note)}")
    return "\n".join(lines)


def _turn_lines(messages: list[StoredMessage], finals: list[OutboxItem]) -> list[str]:
    lines = []
    tools: list[str] = []
    for message in messages:
        if message.kind == "user":
            lines.append(_said("you", message.text))
        elif message.kind == "assistant":
            tools += [b["name"] for b in message.tool_uses]
        elif message.kind == "agent_message":
            lines.append(_said("agent", message.text))
        elif message.kind == "question":
            lines.append(_said("agent asked", message.text))
        elif message.kind == "error":
            lines.append(_said("error", message.text))
    if tools:
        lines.append(f"   tools: {', '.join(one_line(t) for t in dict.fromkeys(tools))}")
    for item in finals:
        lines.append(_said("agent" if item.kind == "response" else "error reply", item.text))
    return lines


def _said(who: str, text: str) -> str:
    said = body(text.strip()).replace("\n", "\n" + " " * (len(who) + 5))
    return f"   {who}: {said}"


def export_markdown(data: dict[str, Any]) -> str:
    lines = [
        f"# {data['title']}",
        "",
        f"Conversation `{data['conversation_id']}` on channel `{data['channel']}`.",
        "",
    ]
    current = None
    for entry in data["turns"]:
        if entry["turn"] != current:
            current = entry["turn"]
            lines += [f"## Turn {current}", ""]
        who = "**You**" if entry["role"] == "human" else f"**{data['entry_agent']}**"
        lines += [f"{who}: {entry['content'].strip()}", ""]
    return "\n".join(lines)


def event_line(event: Event) -> str:
    parts = [f"{event.at.astimezone():%Y-%m-%d %H:%M:%S}", one_line(event.type)]
    if event.conversation:
        parts.append(f"conv={event.conversation[:8]}")
    if event.turn is not None:
        parts.append(f"turn={event.turn}")
    if event.message_id:
        parts.append(f"msg={one_line(event.message_id[:12])}")
    details = ", ".join(
        f"{one_line(k)}={short(v)}" for k, v in event.data.items() if v not in (None, "")
    )
    return " ".join(parts) + (f"  {details}" if details else "")


def status_text(report: dict[str, Any]) -> str:
    lines = [
        f"daemon: running (pid {report['pid']})" if report["running"] else "daemon: not running"
    ]
    lines += ["  " + line for line in health_lines(report)]
    stale = state_file_warning(report)
    if stale:
        lines.append(f"warning: {stale} — figures below come from the folders and the database")
    for key, title in (
        ("queued", "queued"),
        ("in_progress", "in progress"),
        ("deferred", "deferred"),
        ("stranded", "stranded claims (retried automatically)"),
        ("failed", "failed"),
        ("waiting", "waiting for your reply"),
    ):
        items = report[key]
        if key == "stranded" and not items:
            continue
        lines.append(f"{title}: {len(items)}")
        for item in items:
            lines.append("  " + _status_item(key, item))
    if report["tasks"]:
        lines.append(f"team tasks running or interrupted: {len(report['tasks'])}")
        for task in report["tasks"]:
            lines.append(
                f"  {task['id']} {task['status']} agents={','.join(task['agents'])} "
                f"turns={task['turns_done']}/{task['max_turns']} conv={task['conversation'][:8]}"
            )
    if report["duplicates_skipped"]:
        lines.append(f"duplicates skipped: {report['duplicates_skipped']} (see smarthole events)")
    if report.get("mcp"):
        lines.append(f"MCP servers: {len(report['mcp'])}")
        lines += ["  " + line for line in server_lines(report["mcp"], tools=False)]
    lines += [f"warning: {warning}" for warning in report["warnings"]]
    if "desktop" in report:
        lines.append(_desktop_line(report["desktop"]))
    if "usage" in report:
        from .usage import usage_line

        lines.append(usage_line(report["usage"]))
    return "\n".join(lines)


def _desktop_line(bridge: dict[str, Any]) -> str:
    """``desktop bridge: connected to ws://... as smarthole · 2 notifications waiting``."""
    line = f"desktop bridge: {bridge['state']}"
    if bridge["state"] != "disabled":
        line += f" ({one_line(bridge['url'])} as {one_line(bridge['name'])})"
    if bridge["last_error"] and bridge["state"] != "connected":
        line += f" · last error: {short(bridge['last_error'], 80)}"
    waiting = bridge["notifications_waiting"]
    if waiting:
        line += f" · {waiting} notification{'s' if waiting != 1 else ''} waiting"
    return line


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
    if key == "failed":
        return f"{short(item.get('id') or item['file'], 200)} — {short(item['error'] or '', 80)}"
    text = f"{one_line(item['id'])} [{one_line(item['channel'])}] attempts={item['attempts']}"
    if key == "deferred":
        text += f" next={item['next_attempt_at']} last error: {short(item['last_error'], 70)}"
    return text


# -- MCP servers ------------------------------------------------------------------------------

HINTS = (
    ("readOnlyHint", "read-only"),
    ("idempotentHint", "idempotent"),
    ("destructiveHint", "destructive"),
    ("openWorldHint", "open-world"),
)


def server_lines(views: list[dict[str, Any]], *, tools: bool) -> list[str]:
    """Each server, its transport and state, and (with ``tools``) its tools."""
    lines = []
    for view in views:
        state = view["state"] + (f": {one_line(view['reason'])}" if view.get("reason") else "")
        if view.get("retry_at") and view["state"] == "failed":
            state += f" (next try {view['retry_at']})"
        lines.append(f"{view['name']}  {view['transport']}: {one_line(view['target'])}")
        lines.append(f"  state: {state}")
        lines += [f"  stderr: {one_line(line)}" for line in view.get("stderr") or []]
        if tools:
            for tool in view.get("tools") or []:
                summary = short(tool["description"], 200)
                lines.append(f"  tool {one_line(tool['name'])} [{_hints(tool)}]: {summary}")
            lines += [f"  refused: {one_line(name)}" for name in view.get("refused") or []]
    return lines


def _hints(tool: dict[str, Any]) -> str:
    said = [label for key, label in HINTS if tool["annotations"].get(key) is True]
    said.append("re-run after a crash" if tool["idempotent"] else "not re-run after a crash")
    return ", ".join(said)
