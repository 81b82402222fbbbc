"""Lines of the left pane that are not messages: how each approval was decided.

The approval card asks (with its buttons); once decided, the transcript says the outcome in
one line, as a person would: ``write_file approved (web, 06:53)``, ``denied: reason``,
``expired``. The instructions of the approval item (answer files, commands) belong to the
file and mail channels, not here.
"""

from __future__ import annotations

from datetime import datetime

from ..db.approvals import Approval
from ..db.states import ApprovalBy, ApprovalState
from ..db.webviews import Said
from ..formats import utc_now

DECISION = "decision"  # the kind of a transcript line saying how an approval was decided
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
    return Said(approval.turn, DECISION, line, at)


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
