"""Text the CLI shows people: relative times, conversation lists, transcripts, events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..attachments import Attachment, attachments_in
from ..conversations import ConversationView
from ..db.approvals import Approval
from ..db.events import Event
from ..db.forking import Fork
from ..db.outbox import OutboxItem
from ..db.records import Conversation, StoredMessage, Turn
from ..db.states import ConversationStatus, OutboxKind
from ..formats import utc_now
from .common import title_line
from .output import body, clock, one_line, short


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


def conversation_line(
    number: int, view: ConversationView, now: datetime, approval: Approval | None = None
) -> str:
    """One line of ``ls``; ``approval``: a tool call of it that waits for the person."""
    c = view.conversation
    status: str = view.status
    if approval is not None:
        until = clock(approval.expires_at, now)
        status = f"waiting for your approval of {one_line(approval.tool)} (until {until})"
    elif view.status is ConversationStatus.DEFERRED and view.deferred_until is not None:
        status = f"deferred until {clock(view.deferred_until, now)}"
    if view.current:  # the one a new message on its channel goes to
        status += " · current"
    turns = f"{c.turns} turn{'s' if c.turns != 1 else ''}"
    return (
        f"{number}. [{one_line(c.channel)}] {one_line(view.title)}"
        f" ({relative_time(c.updated_at, now)})"
        f" · {status} · {turns} · {c.id}"
    )


def conversation_list(
    views: list[ConversationView], now: datetime, approvals: Sequence[Approval] = ()
) -> str:
    waiting = {a.conversation_id: a for a in approvals if a.waiting}
    return "\n".join(
        conversation_line(i, v, now, waiting.get(v.conversation.id))
        for i, v in enumerate(views, start=1)
    )


def transcript(
    conversation: Conversation,
    turns: list[Turn],
    messages: list[StoredMessage],
    outbox: list[OutboxItem],
    approvals: Sequence[Approval] = (),
    fork: Fork | None = None,
    memory: Mapping[int, list[str]] = {},
    answered: Mapping[int, list[str]] | None = None,
) -> str:
    """Turns with times, the user's and the agent's words, questions, tools used, errors, the
    tool calls that asked for approval (a waiting one marked), the memory each wrote; where a
    fork comes from."""
    lines = [
        title_line(conversation.title),
        f"conversation {conversation.id} · channel {conversation.channel} · "
        f"started {local(conversation.created_at)}",
    ]
    if fork is not None and fork.replay_of:
        lines.append(f"replay of conversation {fork.forked_from} from turn {fork.turn + 1}")
    elif fork is not None:
        lines.append(f"forked from conversation {fork.forked_from} after turn {fork.turn}")
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
        several = (answered or {}).get(turn.number, [])
        if len(several) > 1:  # a busy channel's collect or steer: one reply for them all
            lines.append(f"   answers messages: {', '.join(one_line(m) for m in several)}")
        lines += _turn_lines(by_turn.get(turn.number, []), replies.get(turn.number, []))
        lines += [_approval_line(a) for a in approvals if a.turn == turn.number]
        if memory.get(turn.number):
            lines.append(f"   memory: wrote {', '.join(one_line(p) for p in memory[turn.number])}")
        if turn.note:
            lines.append(f"   note: {one_line(turn.note)}")
    return "\n".join(lines)


def _turn_lines(messages: list[StoredMessage], finals: list[OutboxItem]) -> list[str]:
    said: list[tuple[str, str]] = []
    tools: list[str] = []
    for message in messages:
        if message.kind == "user":
            attached = attachments_in(message.content)
            if message.text.strip() or not attached:
                said.append(("you", message.text))
            said += [("attached", attachment_line(a)) for a in attached]
        elif message.kind == "assistant":
            tools += [b["name"] for b in message.tool_uses]
        elif message.kind == "agent_message":
            said.append(("agent", message.text))
        elif message.kind == "question":
            said.append(("agent asked", message.text))
        elif message.kind == "error":
            said.append(("error", message.text))
    lines = [_said(who, text) for who, text in _folded(said)]
    if tools:
        lines.append(f"   tools: {', '.join(one_line(t) for t in dict.fromkeys(tools))}")
    for item in finals:
        said_by = "agent" if item.kind == OutboxKind.RESPONSE else "error reply"
        lines.append(_said(said_by, item.text))
    replies = [m for m in messages if m.kind == "assistant"]
    if not finals and replies and replies[-1].text.strip() and not replies[-1].tool_uses:
        lines.append(_said("agent", replies[-1].text))  # a reply never sent: a fork's, a replay's
    return lines


def _approval_line(approval: Approval) -> str:
    call = f"{one_line(approval.tool)} {short(approval.input, 60)}"
    if approval.waiting:
        when = clock(approval.expires_at, utc_now())
        return f"   ⏸ WAITING FOR YOUR APPROVAL {approval.id}: {call} (until {when})"
    return f"   approval {approval.id}: {call} — {approval.status} by {approval.decided_by}"


def _folded(said: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A run of one error said again and again (each attempt at a retried message) becomes
    one line, with its count after a multiplication sign."""
    runs: list[tuple[str, str, int]] = []
    for who, text in said:
        if who == "error" and runs and runs[-1][:2] == (who, text):
            runs[-1] = (who, text, runs[-1][2] + 1)
        else:
            runs.append((who, text, 1))
    return [
        (who if count == 1 else f"{who} \N{MULTIPLICATION SIGN}{count}", text)
        for who, text, count in runs
    ]


def _said(who: str, text: str) -> str:
    said = body(text.strip()).replace("\n", "\n" + " " * (len(who) + 5))
    return f"   {who}: {said}"


def attachment_line(attachment: Attachment) -> str:
    """An attachment for people: its name, type and size."""
    return f"{attachment.name} ({attachment.media_type}, {size_text(attachment.size)})"


def size_text(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024 / 1024:.1f} MiB"


PREVIEW_CHARACTERS = 70
USAGE = (("input_tokens", "in"), ("output_tokens", "out"), ("cache_read_input_tokens", "cached"))


def event_line(event: Event, preview: str | None = None) -> str:
    """One event for people: when, what, where, its fields, and a ``preview`` of its text."""
    parts = [f"{event.at.astimezone():%Y-%m-%d %H:%M:%S}", one_line(event.type)]
    if event.conversation:
        parts.append(f"conv={event.conversation[:8]}")
    if event.turn is not None:
        parts.append(f"turn={event.turn}")
    if event.message_id:
        parts.append(f"msg={one_line(event.message_id[:12])}")
    fields = [
        f"{one_line(k)}={_field(k, v)}" for k, v in event.data.items() if v not in (None, "", [])
    ]
    if preview and preview.strip():
        fields.append(f'"{short(preview.strip(), PREVIEW_CHARACTERS)}"')
    return "  ".join([" ".join(parts), *fields])


def _field(key: str, value: Any) -> str:
    """An event's field as people read it: no Python reprs, lists joined, usage in words."""
    if key == "usage" and isinstance(value, dict):
        return usage_words(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(_field("", item) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{one_line(k)}: {_field(str(k), v)}" for k, v in value.items())
    return short(value, 80)


def usage_words(usage: dict[str, Any]) -> str:
    """``in 150 · out 75 · cached 0`` (and ``· cache write N`` when it wrote any)."""
    said = [f"{label} {_count(usage.get(key))}" for key, label in USAGE]
    written = usage.get("cache_creation_input_tokens")
    if written:
        said.append(f"cache write {_count(written)}")
    return " · ".join(said)


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "?" if value is None else short(value, 20)


def last_exchange(turns: list[dict[str, Any]], count: int = 4) -> str:
    """The last ``count`` things said in a conversation (an export's ``turns``), each cut to a
    few lines: what a person sees before carrying on with it."""
    lines = ["Last exchange:"]
    for entry in turns[-count:]:
        who = "you" if entry["role"] == "human" else "agent"
        lines.append(_said(who, _cut(entry["content"])))
    return "\n".join(lines)


def _cut(text: str, max_lines: int = 6, max_characters: int = 600) -> str:
    kept = text.strip()[:max_characters].splitlines()[:max_lines]
    cut = "\n".join(kept)
    return cut + " …" if cut != text.strip() else cut


# -- what a running daemon has loaded, beside the disk -----------------------------------------

RELOAD_HINT = "`smarthole reload` applies what it can, and names what needs a restart."


def loaded_mark(entry: dict[str, Any], where: str = "on disk", verb: str = "loaded") -> str:
    """`` (on disk, not loaded by the running daemon)`` and the like, for an entry marked by
    :func:`smarthole.daemon.loaded.compare`; empty when the two agree, or none was compared."""
    if "loaded" not in entry:
        return ""
    if not entry["loaded"]:
        return f"  ({where}, not {verb} by the running daemon)"
    if not entry["on_disk"]:
        return f"  ({verb} by the running daemon, no longer {where})"
    if entry["changed"]:
        return f"  (changed {where} since the running daemon {verb} it)"
    return ""


def loaded_footer(entries: list[dict[str, Any]]) -> list[str]:
    """What to do about entries whose disk and daemon differ: nothing when none does."""
    return [RELOAD_HINT] if any(loaded_mark(entry) for entry in entries) else []


# -- MCP servers ------------------------------------------------------------------------------

HINTS = (
    ("readOnlyHint", "read-only"),
    ("idempotentHint", "idempotent"),
    ("destructiveHint", "destructive"),
    ("openWorldHint", "open-world"),
)


def server_lines(views: list[dict[str, Any]], *, tools: bool) -> list[str]:
    """Each server, its transport and state, and (with ``tools``) its tools."""
    from ..mcpservers import ServerState

    lines = []
    for view in views:
        state = view["state"] + (f": {one_line(view['reason'])}" if view.get("reason") else "")
        if view.get("retry_at") and view["state"] == ServerState.FAILED:
            state += f" (next try {view['retry_at']})"
        mark = loaded_mark(view, "in config.toml", "started")
        lines.append(f"{view['name']}  {view['transport']}: {one_line(view['target'])}{mark}")
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
