"""Lines of the left pane that are not a turn's messages: how each approval was decided, and
the commands sent in the conversation.

The approval card asks (with its buttons); once decided, the transcript says the outcome in
one line, as a person would: ``write_file approved (web, 06:53)``, ``denied: reason``,
``expired``. The instructions of the approval item (answer files, commands) belong to the
file and mail channels, not here.

A command (``/status``) is no turn: it is shown with its reply in the turn that was the latest
when it was sent, by time; one sent before the first turn (``/new``) in a turn 0 of its own.
"""

from __future__ import annotations

from datetime import datetime

from ..db.approvals import Approval
from ..db.states import ApprovalBy, ApprovalState, OutboxKind
from ..db.webviews import Said, WebViews
from ..formats import utc_now

DECISION = "decision"  # the kind of a transcript line saying how an approval was decided
COMMAND_SENT = "user_command"  # the kind of a command the person sent (its reply: ``command``)
BY: dict[str, str] = {
    ApprovalBy.INBOX: "a file",
    ApprovalBy.CLI: "command line",
    ApprovalBy.WEB: "web",
}


def decision(approval: Approval, now: datetime | None = None) -> Said:
    """A decided approval as one line of the transcript: ``write_file approved (web, 06:53)``."""
    at = approval.decided_at or approval.expires_at
    when = short_time(at, now)
    tool = f"{approval.tool} (asked by {approval.agent})" if approval.task_id else approval.tool
    by = BY.get(approval.decided_by or "")
    said = f"{by}, {when}" if by else when
    status = approval.status
    if status is ApprovalState.APPROVED:
        scope = " for the rest of this conversation" if approval.always else ""
        line = f"{tool} approved{scope} ({said})"
    elif status is ApprovalState.DENIED:
        line = f"{tool} denied ({said})" + (f": {approval.note}" if approval.note else "")
    elif status is ApprovalState.EXPIRED:
        line = f"{tool} expired: no answer by {when}, so it did not run"
    else:
        line = f"{tool} not run: you answered instead ({said})"
    return Said(approval.turn, DECISION, line, at, shown_time=when)


def short_time(at: datetime, now: datetime | None = None) -> str:
    """``06:53`` today, ``2026-11-27 06:53`` on another day (UTC, as the page's times)."""
    today = (now or utc_now()).date()
    return f"{at:%H:%M}" if at.date() == today else f"{at:%Y-%m-%d %H:%M}"


def insert_by_time(said: list[Said], line: Said) -> None:
    """``line`` among a turn's outbox items, by time (the person's messages stay first)."""
    at = len(said)
    while at > 0 and said[at - 1].kind != "user" and said[at - 1].created_at > line.created_at:
        at -= 1
    said.insert(at, line)


def add_commands(
    grouped: dict[int, list[Said]], views: WebViews, conversation_id: str, first: int, last: int
) -> None:
    """Put the commands sent in turns ``first..last`` (and before turn 1, when ``first`` is
    1) into ``grouped``, each beside its reply, by time."""
    starts = views.turn_starts(conversation_id, first, last + 1)
    since = starts.get(first) if first > 1 else None
    if first > 1 and since is None:
        return  # the page's first turn has no message from the person: nothing to place by
    for command in views.commands(conversation_id, since):
        turn = max((n for n, at in starts.items() if at <= command.sent_at), default=0)
        if turn > last or (turn == 0 and first > 1):
            continue  # another page's
        said = grouped.setdefault(turn, [])
        at = len(said)
        while at > 0 and said[at - 1].created_at > command.sent_at:
            at -= 1
        said[at:at] = [
            Said(turn, COMMAND_SENT, command.text, command.sent_at),
            Said(turn, OutboxKind.COMMAND, command.reply, command.answered_at),
        ]
